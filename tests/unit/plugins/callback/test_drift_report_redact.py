"""The drift report masks every form an API key or token takes in a unit, an environment file or a JSON argv."""

import json

import pytest

from ansible_collections.inference.gpu_host.plugins.callback.drift_report import redact

SECRET = "sk-Zq81secretValue"


@pytest.mark.parametrize("text", [
    "ExecStart=/root/ml-env/bin/vllm serve /m --api-key %s --port 30000" % SECRET,
    "ExecStart=/root/ml-env/bin/vllm serve /m --api-key=%s" % SECRET,
    "ExecStart=/root/ml-env/bin/vllm serve /m --api-key '%s'" % SECRET,
    "VLLM_API_KEY=%s" % SECRET,
    "+VLLM_API_KEY=\"%s\"" % SECRET,
    "Authorization: Bearer %s" % SECRET,
    json.dumps(["vllm", "serve", "--api-key", SECRET, "--port", "30000"]),
    "HF_TOKEN=%s" % SECRET,
    "--hf-token %s" % SECRET,
])
def test_every_form_is_masked(text):
    masked = redact(text)
    assert SECRET not in masked
    assert "********" in masked


@pytest.mark.parametrize("text", [
    "--max-num-batched-tokens 8192",
    "--num-speculative-tokens 15",
    '"mask_token_id": 248070',
    "--api-key-file-less --port 30000",
])
def test_what_is_not_a_secret_stays(text):
    assert redact(text) == text


def test_a_flag_followed_by_another_flag_keeps_it():
    assert redact("--api-key --port 30000") == "--api-key --port 30000"
