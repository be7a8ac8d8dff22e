# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""build_serve_argv: --shutdown-timeout where vLLM drains, and no credential on the command line."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils.vllm_serve import VllmServeError, build_serve_argv

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
    (["--api-key", "SECRET"], r"vllm_service_extra_args\[0\]: --api-key would put a secret on the command line.*"
                              r"set vllm_service_api_key"),
    (["--port", "1", "--api-key=SECRET"], r"vllm_service_extra_args\[2\]: --api-key .*vllm_service_api_key"),
    (["--hf-token", "SECRET"], "set vllm_service_hf_token"),
    (["--s3-secret=SECRET"], "looks like a credential.*vllm_service_secret_environment"),
    (["--db-password", "SECRET"], "looks like a credential"),
    (["--shutdown-timeout", "5"], "--shutdown-timeout is set from vllm_service_shutdown_timeout"),
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
