# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_serve filters as the vllm_service role calls them, and their documentation files."""

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.vllm_serve import SERVE_SETTINGS, FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import build_serve_argv
from _result_checks import LazyLike  # noqa: E402  pylint: disable=wrong-import-position

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
ENTRY = {"argv": ["/root/ml-env/bin/vllm", "serve"], "model_arg": "positional"}

# The settings dict the role's "Build the command line" task passes (inventories/ct129).
CT129_SETTINGS = {
    "model": "/root/models/Qwen3.6-27B", "served_model_name": "Qwen3.6-27B", "host": "0.0.0.0", "port": 30000,
    "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9, "max_model_len": 32768,
    "max_num_batched_tokens": 32768, "enable_chunked_prefill": None, "reasoning_parser": "qwen3",
    "enable_auto_tool_choice": True, "tool_call_parser": "qwen3_coder", "language_model_only": True,
    "trust_remote_code": True,
    "speculative_config": {"method": "dflash", "model": "/root/models/Qwen3.6-27B-DFlash",
                           "num_speculative_tokens": 15},
    "extra_args": [],
    "shutdown_timeout": None,
}


def test_the_role_settings_give_build_serve_argv():
    assert set(CT129_SETTINGS) == set(SERVE_SETTINGS)
    assert FILTERS["vllm_serve_argv"](CT129_SETTINGS, ENTRY) == build_serve_argv(ENTRY, **CT129_SETTINGS)


def test_lazy_containers_are_read_as_plain_dicts():
    settings = dict(CT129_SETTINGS, speculative_config=LazyLike(CT129_SETTINGS["speculative_config"]))
    serve = FILTERS["vllm_serve_argv"](LazyLike(settings), LazyLike(ENTRY))
    assert serve == build_serve_argv(ENTRY, **CT129_SETTINGS)


def test_unknown_and_missing_settings_are_named():
    settings = dict(CT129_SETTINGS, max_model_length=1)
    del settings["port"]
    message = r"unknown settings \['max_model_length'\], missing settings \['port'\]"
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["vllm_serve_argv"](settings, ENTRY)


def test_settings_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="vllm_serve_argv: expected a dict of settings, got list"):
        FILTERS["vllm_serve_argv"](["--port", "1"], ENTRY)


def test_a_bad_setting_fails_naming_the_filter_and_the_variable():
    with pytest.raises(AnsibleFilterError, match=r"^vllm_serve_argv: vllm_service_port: expected an integer 1-65535"):
        FILTERS["vllm_serve_argv"](dict(CT129_SETTINGS, port=0), ENTRY)


@pytest.mark.parametrize("bind, probe", [("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("127.0.0.1", "127.0.0.1"),
                                         ("gpu-1", "gpu-1"), ("2001:db8::1", "2001:db8::1")])
def test_vllm_probe_host(bind, probe):
    assert FILTERS["vllm_probe_host"](bind) == probe


def test_vllm_probe_host_bad_input():
    with pytest.raises(AnsibleFilterError, match="vllm_probe_host: host: expected an IP address or a host name"):
        FILTERS["vllm_probe_host"]("a\nb")


def test_vllm_speculative_config():
    assert FILTERS["vllm_speculative_config"](LazyLike({"method": "dflash"}), {"block_size": 16}) == {
        "method": "dflash", "num_speculative_tokens": 15}
    assert FILTERS["vllm_speculative_config"]({}, {"block_size": 16}) == {}


def test_vllm_restart_result_reads_like_a_task_result():
    assert FILTERS["vllm_restart_result"]("a1\n", "b2\n") == {
        "changed": True, "invocation_before": "a1", "invocation_after": "b2"}
    assert FILTERS["vllm_restart_result"]("a1", "a1")["changed"] is False


def test_vllm_rollback_plan():
    assert FILTERS["vllm_rollback_plan"](True, restarted=True, change_pending=True, previous_present=[True, True]) == {
        "roll_back": True, "reason": ""}
    plan = FILTERS["vllm_rollback_plan"](True, restarted=True, change_pending=True, previous_present=[False, False])
    assert plan["roll_back"] is False and "first installation" in plan["reason"]


def test_vllm_rollback_plan_bad_input():
    with pytest.raises(AnsibleFilterError, match="vllm_rollback_plan: vllm_service_rollback: expected true or false"):
        FILTERS["vllm_rollback_plan"]("maybe", restarted=True, change_pending=True, previous_present=[True, True])


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_is_documented(name):
    """ansible-doc -t filter inference.gpu_host.<name> reads plugins/filter/<name>.yml."""
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["short_description"] and doc["EXAMPLES"] and doc["RETURN"]["_value"]["type"]
    assert "_input" in doc["DOCUMENTATION"]["options"]


@pytest.mark.parametrize("spec, expected", [
    ({"method": "dflash", "model": "/root/models/d/"}, "/root/models/d"),
    ({"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16"}, ""),
    ({"method": "eagle3", "model": "/root/models/e"}, ""),
    ({}, ""), (None, ""), ("", ""),
])
def test_vllm_drafter_dir(spec, expected):
    assert FILTERS["vllm_drafter_dir"](spec) == expected


def test_vllm_drafter_dir_bad_input():
    with pytest.raises(AnsibleFilterError, match="vllm_drafter_dir: speculative_config: expected a dict, got list"):
        FILTERS["vllm_drafter_dir"](["dflash"])
