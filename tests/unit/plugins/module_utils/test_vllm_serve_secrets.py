# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""build_serve_argv: --shutdown-timeout where vLLM drains, and no credential on the command line."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import VllmServeError, build_serve_argv

ENTRY = {"argv": ["/root/ml-env/bin/vllm", "serve"], "model_arg": "positional"}
BASE = dict(model="/root/models/Q", served_model_name="Q", host="0.0.0.0", port=30000)


def test_shutdown_timeout_comes_before_the_extra_arguments():
    flags = build_serve_argv(ENTRY, extra_args=["--enforce-eager"], shutdown_timeout=60, **BASE)["flags"]
    assert flags[-3:] == ["--shutdown-timeout", "60", "--enforce-eager"]


def test_no_shutdown_timeout_leaves_the_command_line_as_it_was():
    assert build_serve_argv(ENTRY, **BASE) == build_serve_argv(ENTRY, shutdown_timeout=None, **BASE)
    assert "--shutdown-timeout" not in build_serve_argv(ENTRY, **BASE)["flags"]


def test_bad_shutdown_timeout():
    with pytest.raises(VllmServeError, match="vllm_service_shutdown_timeout: expected an integer >= 0"):
        build_serve_argv(ENTRY, shutdown_timeout=-5, **BASE)


@pytest.mark.parametrize("args, message", [
    (["--api-key", "SECRET"], r"vllm_service_extra_args\[0\]: '--api-key' would put a secret on the command line.*"
                              r"set vllm_service_api_key"),
    (["--port", "1", "--api-key=SECRET"], r"vllm_service_extra_args\[2\]: '--api-key' .*vllm_service_api_key"),
    (["--hf-token", "SECRET"], "set vllm_service_hf_token"),
    (["--s3-secret=SECRET"], "looks like a credential.*vllm_service_secret_environment"),
    (["--db-password", "SECRET"], "looks like a credential"),
    (["--shutdown-timeout", "5"], "'--shutdown-timeout' is set from vllm_service_shutdown_timeout"),
])
def test_credentials_and_owned_flags_are_refused(args, message):
    with pytest.raises(VllmServeError, match=message) as info:
        build_serve_argv(ENTRY, extra_args=args, **BASE)
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize("args", [
    ["--max-num-batched-tokens", "8192"], ["--tokenizer", "/m"], ["--num-speculative-tokens", "3"],
    ["--max-tokens=1"], ["--enable-prompt-tokens-details"],
])
def test_flags_that_only_sound_like_tokens_pass(args):
    assert build_serve_argv(ENTRY, extra_args=args, **BASE)["flags"][-len(args):] == args


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=8, max_size=40))
def test_a_refused_key_never_shows_in_the_message(text):
    key = "~" + text  # a "~" is in no message: the key cannot be one of its words
    for args in (["--api-key", key], ["--api-key=" + key]):
        with pytest.raises(VllmServeError) as info:
            build_serve_argv(ENTRY, extra_args=args, **BASE)
        assert key not in str(info.value)


# ------------------------------------------------ what vLLM's parser takes (issue 27)
# vLLM's FlexibleArgumentParser is argparse with allow_abbrev (any unambiguous prefix of a flag), "_" read as
# "-", "--flag=value" and the dotted "--flag.key value"; each spelling of a credential flag is refused, and the
# drift report masks the value after it (module_utils/_common/redaction.py decides both).
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import (  # noqa: E402
    CREDENTIAL_FLAGS, credential_flag, redact, redact_data)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import exec_word  # noqa: E402
import json  # noqa: E402


@pytest.mark.parametrize("args, variable", [
    (["--api-ke", "SECRET"], "vllm_service_api_key"),        # the row
    (["--hf-tok=SECRET"], "vllm_service_hf_token"),           # the row
    (["--api", "SECRET"], "vllm_service_api_key"),
    (["--api_key", "SECRET"], "vllm_service_api_key"),
    (["--api_ke=SECRET"], "vllm_service_api_key"),
    (["--Api-Key", "SECRET"], "vllm_service_api_key"),
    (["--api-key.x", "SECRET"], "vllm_service_api_key"),
    (["--hf_token=SECRET"], "vllm_service_hf_token"),
    (["--hf-t", "SECRET"], "vllm_service_hf_token"),
    (["--db-passw=SECRET"], "vllm_service_secret_environment"),
    (["--s3_secret", "SECRET"], "vllm_service_secret_environment"),
    (["--x-toke", "SECRET"], "vllm_service_secret_environment"),
])
def test_every_spelling_of_a_credential_flag_is_refused(args, variable):
    with pytest.raises(VllmServeError, match=r"vllm_service_extra_args\[0\]: .*%s" % variable) as info:
        build_serve_argv(ENTRY, extra_args=args, **BASE)
    assert "SECRET" not in str(info.value)


def test_an_abbreviation_says_what_vllm_reads_it_as():
    with pytest.raises(VllmServeError) as info:
        build_serve_argv(ENTRY, extra_args=["--api-ke", "SECRET"], **BASE)
    assert str(info.value).startswith("vllm_service_extra_args[0]: '--api-ke' is read by vLLM's parser as --api-key: ")
    with pytest.raises(VllmServeError, match=r"'--shutdown' \(vLLM's parser reads it as --shutdown-timeout\) is set"):
        build_serve_argv(ENTRY, extra_args=["--shutdown", "5"], **BASE)


@pytest.mark.parametrize("args", [
    ["--api-server-count", "2"], ["--hf-overrides", "{}"], ["--host-x"], ["--tokenizer-mode", "auto"],
    ["--max-num-seqs", "8"], ["--enforce-eager"], ["--"], ["-tp", "2"], ["--seed=1"], ["--pass-config", "{}"],
])
def test_flags_that_are_not_credentials_still_pass(args):
    assert build_serve_argv(ENTRY, extra_args=args, **BASE)["flags"][-len(args):] == args


@st.composite
def credential_spellings(draw):
    """(arg list, the credential flag) in a spelling vLLM's parser would read as that flag."""
    flag = draw(st.sampled_from(sorted(CREDENTIAL_FLAGS)))
    name = flag[2:][:draw(st.integers(1, len(flag) - 2))]
    name = "".join(draw(st.sampled_from(["_", "-"])) if c == "-" else c for c in name)
    if draw(st.booleans()):
        name = name.upper()
    if draw(st.booleans()):
        name += ".key"
    return "--" + name, flag


secrets = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=8, max_size=30).map(
    lambda s: "~" + s)


@settings(max_examples=150, deadline=None)
@given(spelling=credential_spellings(), secret=secrets, equals=st.booleans())
def test_property_every_spelling_is_refused_and_masked(spelling, secret, equals):
    flag, credential = spelling
    assert credential_flag(flag) == credential
    args = [flag + "=" + secret] if equals else [flag, secret]
    with pytest.raises(VllmServeError) as info:
        build_serve_argv(ENTRY, extra_args=["--port", "1"] + args + ["--enforce-eager"], **BASE)
    assert secret not in str(info.value) and "vllm_service_extra_args[2]" in str(info.value)
    assert "vllm_service_" + CREDENTIAL_FLAGS[credential] in str(info.value)
    # Had it reached a unit, a JSON argv, a shell line or a report's data, its value would be masked there.
    argv = ["/v/bin/vllm", "serve", "/m"] + args + ["--port", "8000"]
    for text in ("ExecStart=" + " ".join(exec_word(a) for a in argv), json.dumps(argv), json.dumps(argv, indent=2),
                 " ".join(argv), repr(argv)):
        assert secret not in redact(text), text
        assert "--port" in redact(text)
    assert secret not in json.dumps(redact_data({"argv": argv}))
