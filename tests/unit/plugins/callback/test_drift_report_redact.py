"""The drift report masks every form an API key or token takes in a unit, an environment file or a JSON argv."""

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# ------------------------------------------------------------ property tests
# A secret: printable ASCII without spaces (what vllm_service_api_key and a bearer token may be), long
# enough not to be a word of its context; "~" makes it appear nowhere else in the text.
secrets = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=7, max_size=40).map(
    lambda s: "~" + s)
# With spaces and quotes too: what an environment value may hold.
values = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), min_size=7, max_size=40).map(
    lambda s: "~" + s)
around = st.sampled_from(["", "+", "-", " ", "ExecStart=/root/ml-env/bin/vllm serve /m ", "  msg: "])
after = st.sampled_from(["", "\n", " --port 30000", "\n+HF_HOME=/root/.cache/huggingface", '", "x": 1}'])


def _systemd_env(value):
    """As vllm_unit.env_value writes it (double quotes with escapes when it needs quoting)."""
    return '"%s"' % re.sub(r'([\\"$`])', r"\\\1", value)


def _sh(value):
    return "'%s'" % value if "'" not in value else _systemd_env(value)


@given(secrets, around, after)
def test_a_key_in_any_flag_form_is_masked(secret, before, rest):
    forms = [
        "--api-key %s" % secret,
        "--api-key=%s" % secret,
        '"--api-key" %s' % _systemd_env(secret),
        json.dumps(["vllm", "serve", "--api-key", secret]),
        "VLLM_API_KEY=%s" % secret,
        "Authorization: Bearer %s" % secret,
        "-H 'Authorization: Bearer %s'" % secret,
        json.dumps({"Authorization": "Bearer " + secret}),
    ]
    for form in forms:
        text = before + form + rest
        assert secret not in redact(text), text


@given(values, around, after)
def test_a_quoted_value_with_spaces_and_quotes_is_masked(value, before, rest):
    forms = [
        "VLLM_API_KEY=%s" % _systemd_env(value),
        "IGH_SECRET_TOKEN=%s" % _systemd_env(value),
        "--api-key %s" % _sh(value),
        json.dumps({"VLLM_API_KEY": value}),
        json.dumps({"HF_TOKEN": value}),
    ]
    for form in forms:
        text = before + form + rest
        masked = redact(text)
        assert value not in masked, text
        # Nothing of the value longer than its first few characters survives either.
        assert value[:8] not in masked, text


@given(st.text(max_size=200))
def test_masking_is_idempotent(text):
    once = redact(text)
    assert redact(once) == once


@given(st.lists(st.sampled_from([
    "--max-num-batched-tokens 8192", "--num-speculative-tokens 15", '"mask_token_id": 248070', "max_tokens: 8",
    "ExecStart=/root/ml-env/bin/vllm serve /m --port 30000", "KillMode=mixed", "HF_HOME=/root/.cache/huggingface",
    "CUDA_VISIBLE_DEVICES=0,1", "--tokenizer /m", "TimeoutStopSec=120", "ProtectHome=read-only",
]), max_size=6))
def test_lines_without_a_credential_are_left_alone(lines):
    text = "\n".join(lines)
    assert redact(text) == text
