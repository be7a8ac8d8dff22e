# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The collection's Jinja filters: what the roles and the drift check compute with them."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter import drafter as drafter_small
from ansible_collections.inference.gpu_host.plugins.filter import venv as venv_small

FILTERS = dict(venv_small.FilterModule().filters(), **drafter_small.FilterModule().filters())


def _config(written_for, shift, policy):
    return {"dflash_config": {"target_layer_ids": [1, 16, 31, 46, 61]},
            "inference_gpu_host": {"written_for_vllm": written_for, "ids_shift": shift, "layer_id_policy": policy}}


def test_dflash_stale_ids_silent_when_written_for_the_installed_vllm():
    assert FILTERS["dflash_stale_ids"](_config("0.22.0", 0, "report"), "0.22.0") == ""


def test_dflash_stale_ids_names_both_versions():
    msg = FILTERS["dflash_stale_ids"](_config("0.20.1", 0, "report"), "0.32.0")
    assert msg == "config.json was written for vLLM 0.20.1, vLLM 0.32.0 is installed"


def test_dflash_stale_ids_compensated_ids_need_rewriting():
    # Written for 0.20.1 with compensation (+1), read by 0.22.0 (which shifts itself).
    msg = FILTERS["dflash_stale_ids"](_config("0.20.1", 1, "compensate"), "0.22.0")
    assert "captures the wrong layers" in msg and "0.20.1" in msg and "0.22.0" in msg


def test_dflash_stale_ids_unrecorded_config():
    assert "unverified" in FILTERS["dflash_stale_ids"]({"dflash_config": {}}, "0.22.0")


def test_dflash_stale_ids_needs_a_dict():
    with pytest.raises(AnsibleFilterError, match="dict"):
        FILTERS["dflash_stale_ids"]("{}", "0.22.0")


A6000 = {"index": 0, "name": "NVIDIA RTX A6000", "compute_capability_major": 8, "compute_capability_minor": 6}
T4 = {"index": 1, "name": "Tesla T4", "compute_capability_major": 7, "compute_capability_minor": 5}


def test_flash_attn_gate_reads_the_wheel_tags():
    gate = FILTERS["flash_attn_gate"]([A6000], 2, "flash_attn-2.8.3+cu12torch2.7cxx11abiFALSE-cp311-cp311-linux_x86_64.whl")
    tags = gate["wheel"]
    assert (tags["name"], tags["version"], tags["cuda_major"], tags["torch_minor"], tags["cxx11abi"]) == \
        ("flash_attn", "2.8.3", "12", "2.7", False)
    assert FILTERS["flash_attn_gate"]([A6000], 2)["wheel"] is None
    with pytest.raises(AnsibleFilterError, match="^flash_attn_gate: .*not a wheel"):
        FILTERS["flash_attn_gate"]([A6000], 2, "flash_attn.tar.gz")


def test_flash_attn_gate_and_the_source_build_targets():
    gate = FILTERS["flash_attn_gate"]([A6000], 2)
    assert gate["ok"] and gate["status"] == "ok" and gate["cuda_archs"] == "80"
    refused = FILTERS["flash_attn_gate"]([A6000, T4], 2)
    assert not refused["ok"] and "Tesla T4" in refused["message"] and refused["cuda_archs"] == ""
    none = FILTERS["flash_attn_gate"](None, 2)
    assert none["skipped"] and none["cuda_archs"] == ""
    with pytest.raises(AnsibleFilterError, match="^flash_attn_gate: flash_attn_major: expected one of"):
        FILTERS["flash_attn_gate"]([A6000], 5)


def test_vllm_version_table_says_what_python_env_does_with_flash_attn():
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv import flash_attn_choice
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import installed
    got = FILTERS["vllm_version_table"]("0.20.1", "vllm", "auto")
    assert got == dict(installed.version_table("0.20.1", "vllm"),
                       flash_attn_choice=flash_attn_choice.choose("auto", "0.20.1", "vllm"))
    assert FILTERS["vllm_version_table"]("0.20.1", "vllm", False)["flash_attn_choice"]["install"] is False
    with pytest.raises(AnsibleFilterError, match="^vllm_version_table: python_env_flash_attn_enabled"):
        FILTERS["vllm_version_table"]("0.20.1", "vllm", "maybe")
