# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The collection's Jinja filters: what the roles and the drift check compute with them."""

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter import drafter_small, venv_small, vllm_small

FILTERS = dict(venv_small.FilterModule().filters(), **drafter_small.FilterModule().filters())
FILTERS.update(vllm_small.FilterModule().filters())


def _stat(path):
    st = os.stat(path)
    return {"path": path, "size": st.st_size, "mtime": st.st_mtime}


def test_file_fingerprint_follows_size_and_mtime(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0" * 64)
    (tmp_path / "config.json").write_text("{}")
    files = [_stat(str(weights)), _stat(str(tmp_path / "config.json"))]
    first = FILTERS["file_fingerprint"](files)
    assert first.startswith("sha256:") and len(first) == 7 + 64
    # Order of find's results does not matter.
    assert FILTERS["file_fingerprint"](list(reversed(files))) == first
    os.utime(str(weights), (1700000000, 1700000000))
    assert FILTERS["file_fingerprint"]([_stat(str(weights)), files[1]]) != first
    weights.write_bytes(b"\0" * 65)
    assert FILTERS["file_fingerprint"]([_stat(str(weights)), files[1]]) != first


def test_file_fingerprint_of_nothing_is_stable():
    assert FILTERS["file_fingerprint"]([]) == FILTERS["file_fingerprint"](None)


def test_file_fingerprint_rejects_entries_without_stat_fields():
    with pytest.raises(AnsibleFilterError, match="path, size and mtime"):
        FILTERS["file_fingerprint"]([{"path": "/x"}])


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


def test_systemd_exec_quotes_what_systemd_would_expand():
    assert FILTERS["systemd_exec"](["vllm", '{"a": 1}', "50%", "$HOME"]) == '"vllm" "{\\"a\\": 1}" "50%%" "$$HOME"'


def test_wheel_tags_reads_the_local_tag():
    tags = FILTERS["wheel_tags"]("flash_attn-2.8.3+cu12torch2.7cxx11abiFALSE-cp311-cp311-linux_x86_64.whl")
    assert (tags["name"], tags["version"], tags["cuda_major"], tags["torch_minor"], tags["cxx11abi"]) == \
        ("flash_attn", "2.8.3", "12", "2.7", False)
    with pytest.raises(AnsibleFilterError, match="not a wheel"):
        FILTERS["wheel_tags"]("flash_attn.tar.gz")
