# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The V2 model runner's captured-layers line, read from a real start on an NVIDIA H200 (issue 16).

data/vllm_logs/gpu-0.26.0-v2-flash-attn-4-served.log is tests/gpu/evidence/h200-run3-vllm-0.26.0/step1-before.log:
vLLM 0.26.0 (CUDA wheel, torch 2.11.0+cu130) serving the tiny Qwen3 target with the tiny DFlash v1 drafter, whose
config.json the dflash_drafter_config module wrote for vLLM 0.26.0 (ids [1, 5]), the command line rendered by the
vllm_service role's own tasks, with flash-attn-4 4.0.0b12 alone in the venv. vLLM picked the V2 model runner by
default for the dense target, logged the captured layers with V2's line and served (tests/gpu/README.md).
"""

from __future__ import absolute_import, division, print_function

import io
import os

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import INFO_KEY, captured_layers_verdict
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    find_captured_layers,
    find_root_cause,
    parse_captured_layers,
)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vllm_logs")
LOG = os.path.join(DATA, "gpu-0.26.0-v2-flash-attn-4-served.log")
# The line exactly as vLLM 0.26.0 printed it (vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:28).
V2_LINE = ("(EngineCore pid=1552) INFO 12-04 05:35:29 [eagle3_utils.py:28] "
           "Using Eagle3 auxiliary layers from config: (2, 6)")
# What the dflash_drafter_config module recorded in the drafter's config.json for that run
# (tests/gpu/evidence/h200-run3-vllm-0.26.0/step3-drafter-config.json).
DRAFTER_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "dflash_config": {"block_size": 4, "mask_token_id": 1000, "target_layer_ids": [1, 5]},
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.26.0"},
}


def _text():
    with io.open(LOG, encoding="utf-8") as fh:
        return fh.read()


def test_the_log_is_a_v2_start_that_served_with_flash_attn_4_alone():
    text = _text()
    assert "Resolved architecture: DFlashDraftModel" in text
    assert "Using V2 Model Runner" in text
    assert V2_LINE in text.splitlines()
    assert "Application startup complete." in text
    # V1's line is not there: a reader that only knows it would find nothing
    assert "Using auxiliary layers from speculative config" not in text
    # flash-attn-4 shadowed flash-attn 2 during this start, and vLLM 0.26.0 did not die of it
    assert "flash_attn.ops" not in text


def test_find_captured_layers_reads_the_v2_line_from_the_binary_file():
    with open(LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert found["found"] is True
    assert found["layers"] == [2, 6]
    assert found["runner"] == "v2"
    assert found["source"] == "config"
    assert found["process"] == "EngineCore" and found["pid"] == 1552
    assert found["line"] == V2_LINE
    assert found["matches"] == 1 and found["consistent"] is True
    assert found["lines_read"] == len(_text().splitlines())


def test_find_captured_layers_gives_the_same_from_text_and_lines():
    text = _text()
    from_text = find_captured_layers(text)
    from_lines = find_captured_layers(text.splitlines(True))
    for found in (from_text, from_lines):
        assert (found["layers"], found["runner"], found["source"], found["line"]) == ([2, 6], "v2", "config", V2_LINE)


def test_parse_captured_layers_on_the_real_line():
    assert parse_captured_layers(V2_LINE) == {
        "layers": [2, 6], "runner": "v2", "source": "config", "process": "EngineCore", "pid": 1552}


def test_find_root_cause_finds_none_in_the_healthy_v2_start():
    res = find_root_cause(_text())
    assert res["found"] is False
    assert res["cause"] is None and res["hint"] is None and res["hint_id"] is None
    assert res["relevant_lines"]  # the log's tail, for a person to read


def test_the_captured_layers_match_the_trained_ids_plus_one():
    with open(LOG, "rb") as fh:
        found = find_captured_layers(fh)
    res = captured_layers_verdict(found, DRAFTER_CONFIG, "/root/gpu-proof/tiny/drafter/config.json")
    assert res["verdict"] == "match" and res["reason"] is None
    assert res["captured"] == [2, 6] and res["expected"] == [2, 6] and res["trained_ids"] == [1, 5]
    assert res["runner"] == "v2"


def test_a_drafter_trained_on_other_layers_is_flagged_with_both_lists():
    # The same real line read against a drafter trained on [3, 5]: vLLM fed it the outputs after layers 2 and 6.
    cfg = {"dflash_config": {"target_layer_ids": [3, 5]},
           INFO_KEY: {"dflash_target_layer_ids": [3, 5], "layer_id_policy": "report", "written_for_vllm": "0.26.0"}}
    with open(LOG, "rb") as fh:
        res = captured_layers_verdict(find_captured_layers(fh), cfg, "/m/d/config.json")
    assert res["verdict"] == "mismatch"
    assert res["captured"] == [2, 6] and res["expected"] == [4, 6] and res["runner"] == "v2"
    assert "[2, 6]" in res["message"] and "[4, 6]" in res["message"]
