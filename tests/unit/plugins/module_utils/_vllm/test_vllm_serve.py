# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_serve: the vllm_service role's command line, probe address, speculative config and rollback bookkeeping.

build_serve_argv: --shutdown-timeout where vLLM drains, and no credential on the command line.

vllm_serve.rollback_items: one switch is one generation, and all of it goes back.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import (
    VllmServeError,
    build_serve_argv,
    probe_host,
    probe_url,
    restart_result,
    rollback_items,
    rollback_plan,
    settle_speculative_config,
)


# -------- vllm_serve: the vllm_service role's command line, probe address, speculative config and rollback bookkeeping.
GPU_ENTRY = {"argv": ["/root/ml-env/bin/vllm", "serve"], "model_arg": "positional", "source": "console script"}
CPU_ENTRY = {"argv": ["/root/ml-env/bin/python", "-m", "vllm.entrypoints.openai.api_server"], "model_arg": "--model"}

# inventories/ct129 (group qwen36_27b_dflash, ampere_sm86, host ct129): the argv the role rendered
# before its command line moved to Python, captured with Ansible 2.19.
CT129 = dict(
    model="/root/models/Qwen3.6-27B", served_model_name="Qwen3.6-27B", host="0.0.0.0", port=30000,
    tensor_parallel_size=2, gpu_memory_utilization=0.90, max_model_len=32768, max_num_batched_tokens=32768,
    enable_chunked_prefill=None, reasoning_parser="qwen3", enable_auto_tool_choice=True,
    tool_call_parser="qwen3_coder", language_model_only=True, trust_remote_code=True,
    speculative_config={"method": "dflash", "model": "/root/models/Qwen3.6-27B-DFlash", "num_speculative_tokens": 15},
    extra_args=[])
CT129_FLAGS = [
    "--served-model-name", "Qwen3.6-27B", "--host", "0.0.0.0", "--port", "30000",
    "--tensor-parallel-size", "2", "--gpu-memory-utilization", "0.9",
    "--max-model-len", "32768", "--max-num-batched-tokens", "32768",
    "--reasoning-parser", "qwen3", "--enable-auto-tool-choice", "--tool-call-parser", "qwen3_coder",
    "--language-model-only", "--trust-remote-code",
    "--speculative-config",
    '{"method": "dflash", "model": "/root/models/Qwen3.6-27B-DFlash", "num_speculative_tokens": 15}']

# inventories/local (cpu_standin, tiny_qwen3_dflash), as the vllm_service Molecule scenario serves it.
LOCAL = dict(
    model="/root/models/tiny-qwen3", served_model_name="tiny-qwen3", host="127.0.0.1", port=30000,
    tensor_parallel_size=1, gpu_memory_utilization=0.1, max_model_len=512, max_num_batched_tokens=512,
    speculative_config={"method": "dflash", "model": "/root/models/tiny-qwen3-dflash", "num_speculative_tokens": 3},
    extra_args=["--enforce-eager"])
LOCAL_ARGV = [
    "/root/ml-env/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/root/models/tiny-qwen3",
    "--served-model-name", "tiny-qwen3", "--host", "127.0.0.1", "--port", "30000",
    "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.1",
    "--max-model-len", "512", "--max-num-batched-tokens", "512",
    "--speculative-config",
    '{"method": "dflash", "model": "/root/models/tiny-qwen3-dflash", "num_speculative_tokens": 3}',
    "--enforce-eager"]

MINIMAL = dict(model="/srv/models/target", served_model_name="target", host="127.0.0.1", port=8000)


def test_ct129_command_line():
    serve = build_serve_argv(GPU_ENTRY, **CT129)
    assert serve["flags"] == CT129_FLAGS
    assert serve["argv"] == ["/root/ml-env/bin/vllm", "serve", "/root/models/Qwen3.6-27B"] + CT129_FLAGS


def test_local_cpu_command_line():
    serve = build_serve_argv(CPU_ENTRY, **LOCAL)
    assert serve["argv"] == LOCAL_ARGV
    assert serve["flags"] == LOCAL_ARGV[5:]


def test_defaults_give_the_five_fixed_flags():
    assert build_serve_argv(GPU_ENTRY, **MINIMAL)["flags"] == [
        "--served-model-name", "target", "--host", "127.0.0.1", "--port", "8000",
        "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.9"]


def test_entry_point_positional_or_model_flag():
    positional = build_serve_argv({"argv": ["/v/bin/vllm", "serve"], "model_arg": "positional"}, **MINIMAL)
    flag = build_serve_argv({"argv": ["/v/bin/python", "-m", "x"], "model_arg": "--model"}, **MINIMAL)
    assert positional["argv"][:3] == ["/v/bin/vllm", "serve", "/srv/models/target"]
    assert flag["argv"][:5] == ["/v/bin/python", "-m", "x", "--model", "/srv/models/target"]
    assert positional["flags"] == flag["flags"]


@pytest.mark.parametrize("setting, on, off, expected", [
    ("max_model_len", 4096, None, ["--max-model-len", "4096"]),
    ("max_num_batched_tokens", "8192", None, ["--max-num-batched-tokens", "8192"]),
    ("reasoning_parser", "qwen3", "", ["--reasoning-parser", "qwen3"]),
    ("enable_auto_tool_choice", True, False, ["--enable-auto-tool-choice"]),
    ("tool_call_parser", "hermes", "", ["--tool-call-parser", "hermes"]),
    ("language_model_only", True, False, ["--language-model-only"]),
    ("trust_remote_code", "yes", "no", ["--trust-remote-code"]),
    ("speculative_config", {"method": "ngram"}, {}, ["--speculative-config", '{"method": "ngram"}']),
    ("extra_args", ["--enforce-eager", 7, 1.5], [], ["--enforce-eager", "7", "1.5"]),
])
def test_each_optional_flag_on_and_off(setting, on, off, expected):
    base = build_serve_argv(GPU_ENTRY, **MINIMAL)["flags"]
    assert build_serve_argv(GPU_ENTRY, **dict(MINIMAL, **{setting: off}))["flags"] == base
    assert build_serve_argv(GPU_ENTRY, **dict(MINIMAL, **{setting: on}))["flags"] == base + expected


@pytest.mark.parametrize("value, expected", [
    (True, ["--enable-chunked-prefill"]), (False, ["--no-enable-chunked-prefill"]), (None, []),
    ("true", ["--enable-chunked-prefill"]), ("off", ["--no-enable-chunked-prefill"]),
])
def test_chunked_prefill_is_three_way(value, expected):
    flags = build_serve_argv(GPU_ENTRY, enable_chunked_prefill=value, **MINIMAL)["flags"]
    assert flags[10:] == expected


def test_flags_keep_the_role_order_with_everything_on():
    everything = dict(CT129)
    everything.update(enable_chunked_prefill=False, extra_args=["--seed", "1"])
    flags = build_serve_argv(GPU_ENTRY, **everything)["flags"]
    names = [f for f in flags if f.startswith("--")]
    assert names == ["--served-model-name", "--host", "--port", "--tensor-parallel-size", "--gpu-memory-utilization",
                     "--max-model-len", "--max-num-batched-tokens", "--no-enable-chunked-prefill",
                     "--reasoning-parser", "--enable-auto-tool-choice", "--tool-call-parser",
                     "--language-model-only", "--trust-remote-code", "--speculative-config", "--seed"]


@pytest.mark.parametrize("value, text", [(0.9, "0.9"), (0.92, "0.92"), ("0.90", "0.90"), (1, "1"), (0.00001, "1e-05")])
def test_numbers_keep_their_own_spelling(value, text):
    """As Jinja's `| string` rendered them: Python's str() of the value."""
    flags = build_serve_argv(GPU_ENTRY, **dict(MINIMAL, gpu_memory_utilization=value))["flags"]
    assert flags[flags.index("--gpu-memory-utilization") + 1] == text


def test_null_gpu_memory_utilization_leaves_vllms_default():
    # vLLM 0.34 resolves it itself (1.0 with the extensible KV cache on CUDA) and asks that it be left unset.
    flags = build_serve_argv(GPU_ENTRY, **dict(MINIMAL, gpu_memory_utilization=None))["flags"]
    assert "--gpu-memory-utilization" not in flags
    assert "--gpu-memory-utilization" in build_serve_argv(GPU_ENTRY, **MINIMAL)["flags"]  # 0.9 by default


def test_speculative_config_is_ansible_to_json_sorted():
    """Ansible's to_json(sort_keys=true): json.dumps separators ', ' and ': ', non-ASCII escaped."""
    spec = {"z": [1, 2.5, None, True], "method": u"\u00e9", "a": {"y": 1, "b": "x y"}}
    flags = build_serve_argv(GPU_ENTRY, **dict(MINIMAL, speculative_config=spec))["flags"]
    assert flags[-1] == '{"a": {"b": "x y", "y": 1}, "method": "\\u00e9", "z": [1, 2.5, null, true]}'
    assert json.loads(flags[-1]) == spec


@pytest.mark.parametrize("setting, value, message", [
    ("port", 0, r"vllm_service_port: expected an integer 1-65535, got 0"),
    ("port", 70000, r"vllm_service_port: expected an integer 1-65535"),
    ("port", "80a", r"vllm_service_port: expected an integer 1-65535, got '80a'"),
    ("port", True, r"vllm_service_port: expected an integer 1-65535, got True \(bool\)"),
    ("tensor_parallel_size", 0, r"vllm_service_tensor_parallel_size: expected an integer >= 1"),
    ("gpu_memory_utilization", 0, r"vllm_service_gpu_memory_utilization: expected a number in \(0, 1\]"),
    ("gpu_memory_utilization", 1.5, r"vllm_service_gpu_memory_utilization: expected a number in \(0, 1\]"),
    ("gpu_memory_utilization", float("nan"), r"vllm_service_gpu_memory_utilization"),
    ("gpu_memory_utilization", " 0.9", r"vllm_service_gpu_memory_utilization"),
    ("max_model_len", 0, r"vllm_service_max_model_len: expected an integer >= 1"),
    ("max_num_batched_tokens", "12k", r"vllm_service_max_num_batched_tokens: expected an integer >= 1, got '12k'"),
    ("enable_chunked_prefill", "maybe", r"vllm_service_enable_chunked_prefill: expected true or false or null"),
    ("trust_remote_code", None, r"vllm_service_trust_remote_code: expected true or false, got None"),
    ("model", "models/x", r"vllm_service_model: expected an absolute path, got 'models/x'"),
    ("model", "", r"vllm_service_model: expected a non-empty string"),
    ("served_model_name", ["a"], r"vllm_service_served_model_name: expected a string, got \['a'\] \(list\)"),
    ("host", None, r"vllm_service_host: expected a string, got None"),
    ("reasoning_parser", {"a": 1}, r"vllm_service_reasoning_parser: expected a string"),
    ("speculative_config", "method: dflash", r"vllm_service_speculative_config: expected a dict \(empty for none\)"),
    ("speculative_config", {"num_speculative_tokens": 2},
     r"vllm_service_speculative_config: expected a dict with a method"),
    ("speculative_config", {"method": "x", "bad": object()},
     r"vllm_service_speculative_config: expected a dict of JSON"),
    ("extra_args", "--enforce-eager", r"vllm_service_extra_args: expected a list of arguments, got '--enforce-eager'"),
    ("extra_args", ["--seed", None], r"vllm_service_extra_args\[1\]: expected a string \(quote it in YAML\), got None"),
    ("extra_args", [True], r"vllm_service_extra_args\[0\]: expected a string"),
])
def test_bad_settings_name_the_variable(setting, value, message):
    with pytest.raises(VllmServeError, match=message):
        build_serve_argv(GPU_ENTRY, **dict(MINIMAL, **{setting: value}))


@pytest.mark.parametrize("setting, value, name", [
    ("served_model_name", "a\nExecStartPre=/bin/rm", "vllm_service_served_model_name"),
    ("host", "127.0.0.1\r", "vllm_service_host"),
    ("model", "/srv/models/x\n", "vllm_service_model"),
    ("reasoning_parser", "qwen3\t", "vllm_service_reasoning_parser"),
    ("tool_call_parser", u"x\u2028y", "vllm_service_tool_call_parser"),
    ("extra_args", ["--ok", "--seed\n1"], r"vllm_service_extra_args\[1\]"),
])
def test_control_characters_are_refused_naming_the_variable(setting, value, name):
    with pytest.raises(VllmServeError, match=name + r": .* has a control character \(U\+[0-9A-F]{4}\)"):
        build_serve_argv(GPU_ENTRY, **dict(MINIMAL, **{setting: value}))


def test_newline_inside_speculative_config_is_escaped_by_json():
    flags = build_serve_argv(GPU_ENTRY, **dict(MINIMAL, speculative_config={"method": "a\nb"}))["flags"]
    assert flags[-1] == '{"method": "a\\nb"}'


@pytest.mark.parametrize("entry, message", [
    (None, r"entry point .*: expected a dict with argv and model_arg"),
    ({"argv": "/v/bin/vllm serve", "model_arg": "positional"}, r"expected argv a non-empty list of strings"),
    ({"argv": [], "model_arg": "positional"}, r"expected argv a non-empty list of strings"),
    ({"argv": ["/v/bin/vllm"], "model_arg": "flag"}, r"expected model_arg one of positional, --model, got 'flag'"),
])
def test_bad_entry_point(entry, message):
    with pytest.raises(VllmServeError, match=message):
        build_serve_argv(entry, **MINIMAL)


_printable = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=12)
_entries = st.fixed_dictionaries({"argv": st.lists(_printable, min_size=1, max_size=3),
                                  "model_arg": st.sampled_from(["positional", "--model"])})
_TEXT_SETTINGS = ("model", "served_model_name", "host", "reasoning_parser", "tool_call_parser")


@given(entry=_entries, name=_printable, host=_printable, parser=st.text(max_size=8).filter(str.isprintable),
       extra=st.lists(_printable | st.integers() | st.floats(allow_nan=False), max_size=3),
       port=st.integers(1, 65535), tp=st.integers(1, 8), util=st.floats(0.01, 1.0),
       max_len=st.none() | st.integers(1, 10 ** 6), chunked=st.sampled_from([None, True, False]),
       flag=st.booleans(), spec=st.dictionaries(_printable, st.text(max_size=8), max_size=2))
def test_property_argv_starts_with_the_entry_point_all_one_line_strings(
        entry, name, host, parser, extra, port, tp, util, max_len, chunked, flag, spec):
    serve = build_serve_argv(
        entry, model="/m/" + name, served_model_name=name, host=host, port=port, tensor_parallel_size=tp,
        gpu_memory_utilization=util, max_model_len=max_len, enable_chunked_prefill=chunked, reasoning_parser=parser,
        trust_remote_code=flag, speculative_config=dict(spec, method="dflash"), extra_args=extra)
    assert serve["argv"][:len(entry["argv"])] == entry["argv"]
    assert serve["argv"][-len(serve["flags"]):] == serve["flags"]
    assert all(isinstance(arg, str) and "\n" not in arg and "\r" not in arg for arg in serve["argv"])
    assert json.loads(serve["flags"][serve["flags"].index("--speculative-config") + 1]) == dict(spec, method="dflash")


@given(setting=st.sampled_from(_TEXT_SETTINGS + ("extra_args",)), text=_printable, cut=st.integers(0, 12),
       newline=st.sampled_from(["\n", "\r", "\r\n"]))
def test_property_a_newline_anywhere_is_refused_naming_the_variable(setting, text, cut, newline):
    value = "/" + text[:cut] + newline + text[cut:]
    settings_ = dict(MINIMAL, **{setting: [value] if setting == "extra_args" else value})
    name = "vllm_service_extra_args[0]" if setting == "extra_args" else "vllm_service_" + setting
    with pytest.raises(VllmServeError) as caught:
        build_serve_argv(GPU_ENTRY, **settings_)
    assert str(caught.value).startswith(name + ": ") and "control character" in str(caught.value)


@pytest.mark.parametrize("bind, probe", [
    ("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("[::]", "::1"), ("0:0::0", "::1"), ("", "127.0.0.1"), (None, "127.0.0.1"),
    ("127.0.0.1", "127.0.0.1"), ("10.0.0.5", "10.0.0.5"), ("::1", "::1"), ("fe80::1", "fe80::1"),
    ("[2001:db8::1]", "2001:db8::1"), ("localhost", "localhost"), ("gpu-1.example.internal", "gpu-1.example.internal"),
])
def test_probe_host(bind, probe):
    assert probe_host(bind) == probe


@pytest.mark.parametrize("bind, url", [
    ("0.0.0.0", "http://127.0.0.1:30000"), ("::", "http://[::1]:30000"),
    ("[2001:db8::1]", "http://[2001:db8::1]:30000"),
    ("gpu-1", "http://gpu-1:30000"),
])
def test_probe_url_brackets_ipv6(bind, url):
    assert probe_url(bind, 30000) == url


@pytest.mark.parametrize("bind", [30000, " 127.0.0.1", "a\nb"])
def test_probe_host_refuses_what_is_no_address(bind):
    with pytest.raises(VllmServeError, match="host: expected an IP address or a host name"):
        probe_host(bind)


def test_probe_url_refuses_a_bad_port():
    with pytest.raises(VllmServeError, match="port: expected an integer 1-65535"):
        probe_url("::", "8000")


def test_speculative_config_takes_the_drafters_block_size():
    configured = {"method": "dflash", "model": "/root/models/tiny-qwen3-dflash"}
    assert settle_speculative_config(configured, {"block_size": 4}) == dict(configured, num_speculative_tokens=3)
    assert configured == {"method": "dflash", "model": "/root/models/tiny-qwen3-dflash"}  # not modified


@pytest.mark.parametrize("configured, drafter, settled", [
    ({"method": "dflash", "num_speculative_tokens": 15}, {"block_size": 16},
     {"method": "dflash", "num_speculative_tokens": 15}),
    ({}, {"block_size": 16}, {}),
    (None, None, {}),
    ({"method": "ngram"}, {}, {"method": "ngram"}),
])
def test_speculative_config_left_as_configured(configured, drafter, settled):
    assert settle_speculative_config(configured, drafter) == settled


@pytest.mark.parametrize("configured, drafter, message", [
    (["method"], {}, "vllm_service_speculative_config: expected a dict"),
    ({"method": "dflash"}, {"block_size": "16"},
     "the drafter's config.json: expected block_size an integer >= 1, got '16'"),
    ({"method": "dflash"}, {"block_size": 0}, "expected block_size an integer >= 1, got 0"),
    ({"method": "dflash"}, [1], "the drafter's config.json: expected a JSON object"),
])
def test_speculative_config_bad_input(configured, drafter, message):
    with pytest.raises(VllmServeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        settle_speculative_config(configured, drafter)


@pytest.mark.parametrize("before, after, changed", [
    ("", "4f1c0b2e\n", True),              # first start
    ("4f1c0b2e", "9a8b7c6d", True),         # restarted (handler, or a start of a stopped unit)
    ("4f1c0b2e\n", "4f1c0b2e", False),      # untouched
    ("4f1c0b2e", "", False),                # gone (never a restart)
    (None, None, False),
])
def test_restart_result(before, after, changed):
    result = restart_result(before, after)
    assert result["changed"] is changed
    assert result["invocation_after"] == (after or "").strip()


def test_restart_result_refuses_a_non_string():
    with pytest.raises(VllmServeError, match="invocation_before: expected the unit's InvocationID"):
        restart_result({"stdout": ""}, "")


@pytest.mark.parametrize("enabled, restarted, pending, previous, reason", [
    (True, True, True, [True, True], ""),
    (False, True, True, [True, True], "vllm_service_rollback is false"),
    ("no", True, True, [True, True], "vllm_service_rollback is false"),
    (True, True, False, [True, True], "this run did not change the unit or its environment"),
    (True, False, True, [True, True], "the server did not restart in this run"),
    (True, True, True, [False, False], "no previous unit and environment to go back to"),
    (True, True, True, [True, False], "no previous unit and environment to go back to"),
    (True, True, True, [], "no previous unit and environment to go back to"),
])
def test_rollback_plan(enabled, restarted, pending, previous, reason):
    plan = rollback_plan(enabled, restarted, pending, previous)
    assert plan["roll_back"] is (reason == "")
    assert reason in plan["reason"] and bool(plan["reason"]) is (reason != "")


# The role's files/parse_serve_args.py, run for real by this Python against a stand-in vllm package.
PARSE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "roles", "vllm_service", "files",
                     "parse_serve_args.py")
FAKE_CLI_ARGS = '''
def make_arg_parser(parser):
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int)
    return parser

def validate_parsed_serve_args(args):
    if args.port == 1:
        raise TypeError("port 1 is refused by validate_parsed_serve_args")
'''


def _fake_vllm(root, parser_module=None):
    utils = root / "vllm" / "utils"
    utils.mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (utils / "__init__.py").write_text("from argparse import ArgumentParser as FlexibleArgumentParser\n")
    if parser_module:
        package = root.joinpath("vllm", *parser_module.split(".")[1:-1])
        package.mkdir(parents=True)
        for level in range(len(package.relative_to(root / "vllm").parts)):
            (package.parents[level] / "__init__.py").touch()
        (package / "__init__.py").touch()
        (package / (parser_module.rsplit(".", 1)[1] + ".py")).write_text(FAKE_CLI_ARGS)
    return root


def _parse(root, *args):
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, PARSE] + list(args), env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("module", ["vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"])
def test_parse_serve_args_uses_either_parser_module(tmp_path, module):
    root = _fake_vllm(tmp_path, module)
    assert _parse(root, "--model", "/m", "--port", "8000").returncode == 0
    refused = _parse(root, "--model", "/m", "--port", "8000", "--no-such-flag")
    assert refused.returncode == 2 and "unrecognized arguments: --no-such-flag" in refused.stderr
    assert _parse(root, "--model", "/m", "--port", "1").returncode != 0


def test_parse_serve_args_skips_an_unknown_vllm(tmp_path):
    result = _parse(_fake_vllm(tmp_path), "--model", "/m")
    assert result.returncode == 0 and result.stdout.startswith("SKIPPED: this vLLM has no known serve argument parser")


# -------- build_serve_argv: --shutdown-timeout where vLLM drains, and no credential on the command line.
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


# -------- vllm_serve.rollback_items: one switch is one generation, and all of it goes back.
UNIT, ENV = "/etc/systemd/system/vllm-tiny.service", "/etc/vllm/tiny.env"
GEN = {"link": "/root/ml-env", "dir": "/root/ml-env.generations/new", "previous_dir": "/root/ml-env.generations/old",
       "switched": True, "rollback_files": ["/etc/ansible/facts.d/inference_python_env.fact"]}


def test_everything_goes_back_together():
    items = rollback_items(True, UNIT, ENV, GEN, GEN["rollback_files"] + ["/root/models/d/config.json"])
    assert items["link"] == {"path": "/root/ml-env", "target": "/root/ml-env.generations/old",
                             "from": "/root/ml-env.generations/new"}
    assert items["files"] == ["/etc/ansible/facts.d/inference_python_env.fact", "/root/models/d/config.json", UNIT, ENV]
    assert items["names"][0].startswith("venv link /root/ml-env -> /root/ml-env.generations/old")
    assert len(items["names"]) == 5


def test_only_what_changed():
    assert rollback_items(False, UNIT, ENV) == {"link": None, "files": [], "names": []}
    assert rollback_items(True, UNIT, ENV, dict(GEN, switched=False))["files"] == [UNIT, ENV]
    # A first generation (blank host) has nothing to go back to.
    assert rollback_items(False, UNIT, ENV, dict(GEN, previous_dir=""))["link"] is None
    only_drafter = rollback_items(False, UNIT, ENV, {}, ["/root/models/d/config.json"])
    assert only_drafter["files"] == ["/root/models/d/config.json"]
    # The plan then rolls back a drafter change alone (no unit/env copies needed).
    plan = rollback_plan(True, True, bool(only_drafter["names"]), [True])
    assert plan["roll_back"]


@pytest.mark.parametrize("args, match", [
    ((True, UNIT, ENV, "gen"), "python_env_result.generation: expected a dict"),
    ((True, UNIT, ENV, dict(GEN, link="ml-env")), "python_env_result.generation.link: expected an absolute path"),
    ((True, UNIT, ENV, {}, "/a"), "the rollback files: expected a list"),
    ((True, UNIT, ENV, {}, ["rel/config.json"]), r"the rollback files\[0\]"),
    (("maybe", UNIT, ENV), "unit_env_changed"),
])
def test_bad_input(args, match):
    with pytest.raises(VllmServeError, match=match):
        rollback_items(*args)


def test_link_goes_back_to_the_generation_the_server_runs():
    # An earlier run switched the link and stopped before vllm_service (a bad drafter input, say): the server
    # still runs the old generation. This run does not switch, but its unit change starts the new one first.
    gen = dict(GEN, switched=False, previous_dir=GEN["dir"], rollback_files=[])
    items = rollback_items(True, UNIT, ENV, gen, [], serving_dir="/root/ml-env.generations/old")
    assert items["link"] == {"path": "/root/ml-env", "target": "/root/ml-env.generations/old",
                             "from": "/root/ml-env.generations/new"}
    assert items["files"] == [UNIT, ENV]
    # Nothing to go back to: the same generation, no unit change, or a record from before generations
    # (the plain venv, adopted under another name).
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir=GEN["dir"])["link"] is None
    assert rollback_items(False, UNIT, ENV, gen, [], serving_dir="/root/ml-env.generations/old")["link"] is None
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir="/root/ml-env")["link"] is None
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir="")["link"] is None
    # A switch in this run goes back to the generation python_env switched from, whatever the record says.
    assert rollback_items(True, UNIT, ENV, GEN, [], serving_dir="/root/ml-env.generations/other")["link"]["target"] \
        == GEN["previous_dir"]
    with pytest.raises(VllmServeError, match="the serving generation"):
        rollback_items(True, UNIT, ENV, gen, [], serving_dir="rel/old")
