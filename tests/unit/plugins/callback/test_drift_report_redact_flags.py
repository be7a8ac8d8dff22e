# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift report masks every spelling of a credential flag vLLM's parser takes (issue 27), and the
masking has one home with the vllm_service role's guard (module_utils/_common/redaction.py)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.callback import drift_report
from ansible_collections.inference.gpu_host.plugins.callback.drift_report import redact, redact_data
from ansible_collections.inference.gpu_host.plugins.module_utils._common import redaction

KEY = "sk-Zq81secretValue"


def test_the_report_masks_with_the_one_home():
    assert drift_report.redact is redaction.redact and drift_report.redact_data is redaction.redact_data


@pytest.mark.parametrize("text", [
    # the rows: the abbreviated flag's key reached the unit, --diff, the drift JSON and the artifacts
    'ExecStart="/root/ml-env/bin/vllm" "serve" "/m" "--api-ke" "%s" "--port" "30000"' % KEY,
    'ExecStart="/root/ml-env/bin/vllm" "serve" "/m" "--hf-tok=%s"' % KEY,
    '+ExecStart="/root/ml-env/bin/vllm" "serve" "/m" "--api_key" "%s"' % KEY,
    "vllm serve /m --api-ke %s --port 30000" % KEY,
    "vllm serve /m --API-KEY=%s" % KEY,
    "vllm serve /m --api-key.x=%s" % KEY,
    json.dumps({"cmd": ["vllm", "serve", "--api-ke", KEY, "--port", "1"]}),
    json.dumps({"cmd": ["vllm", "serve", "--hf-tok=" + KEY]}),
    json.dumps(["vllm", "serve", "--api-ke", KEY], indent=2),
    "\n".join("+" + line for line in json.dumps(["vllm", "--api-ke", KEY], indent=2).splitlines()),
    repr(["vllm", "serve", "--hf_tok", KEY]),
    'ExecStart="/v/bin/vllm" "--api-key=%s with space"' % KEY,
    "-H 'Authorization: Bearer %s\"x'" % KEY,
])
def test_every_spelling_is_masked(text):
    masked = redact(text)
    assert KEY not in masked and KEY[:8] not in masked, masked
    assert redaction.MASK in masked


def test_masking_keeps_json_json():
    data = {"VLLM_API_KEY": KEY, "argv": ["vllm", "--api-key=" + KEY, "--hf-tok", KEY, "--port", "1"],
            "Authorization": "Bearer %s" % KEY, "max_tokens": 8, "mask_token_id": 7}
    masked = json.loads(redact(json.dumps(data)))  # a finding's detail went through this and could not load
    assert KEY not in json.dumps(masked)
    assert masked["max_tokens"] == 8 and masked["mask_token_id"] == 7 and masked["argv"][-2:] == ["--port", "1"]
    assert redact_data(data) == {
        "VLLM_API_KEY": "********", "argv": ["vllm", "--api-key=********", "--hf-tok", "********", "--port", "1"],
        "Authorization": "Bearer ********", "max_tokens": 8, "mask_token_id": 7}


@pytest.mark.parametrize("text", [
    "--api-server-count 2", "--hf-overrides {}", "--host 0.0.0.0", "--max-num-batched-tokens 8192",
    "--tokenizer-mode auto", "--pass-config {}", "vllm_service_extra_args[0]: '--api-ke' is read by vLLM's parser",
])
def test_flags_that_are_not_credentials_are_left_alone(text):
    assert redact(text) == text


# A secret as an API key may be: printable ASCII without spaces; "~" makes it appear nowhere else.
secrets = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=7, max_size=30).map(
    lambda s: "~" + s)


@st.composite
def spellings(draw):
    flag = draw(st.sampled_from(sorted(redaction.CREDENTIAL_FLAGS)))[2:]
    name = flag[:draw(st.integers(1, len(flag)))]
    name = "".join(draw(st.sampled_from("-_")) if c == "-" else c for c in name)
    return "--" + (name.upper() if draw(st.booleans()) else name) + draw(st.sampled_from(["", ".x", ".x+"]))


@given(flag=spellings(), secret=secrets, before=st.sampled_from(["", "vllm serve /m ", "+", "  msg: "]),
       after=st.sampled_from(["", "\n", " --port 30000", '", "x": 1}']))
def test_property_any_spelling_is_masked_in_any_form(flag, secret, before, after):
    assert redaction.credential_flag(flag) in redaction.CREDENTIAL_FLAGS
    quoted = '"%s"' % secret.replace("\\", "\\\\").replace('"', '\\"')
    for form in ("%s %s" % (flag, secret), "%s=%s" % (flag, secret), '"%s" %s' % (flag, quoted),
                 '"%s=%s"' % (flag, secret.replace("\\", "\\\\").replace('"', '\\"')),
                 json.dumps([flag, secret]), json.dumps([flag + "=" + secret]), repr([flag, secret])):
        text = before + form + after
        assert secret not in redact(text), text
    assert secret not in json.dumps(redact_data([flag, secret])) + json.dumps(redact_data([flag + "=" + secret]))


@pytest.mark.parametrize("unit", ["a.", "VLLM_API_KEY=", "--api-key=", "--api-key ", '"--api-key", ', "Authorization: Bearer "])
def test_masking_stays_linear_on_hostile_text(unit):
    # A credential word matched at every start inside a long dotted name took 77 s for 40 KB of "a.a.a.".
    import time
    text = unit * (200000 // len(unit))
    start = time.monotonic()
    masked = redact(text)
    assert time.monotonic() - start < 2, unit
    assert redact(masked) == masked
