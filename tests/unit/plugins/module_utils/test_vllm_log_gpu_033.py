# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vLLM 0.33.0's starts on an NVIDIA H200 (issue 16, run 5), read by the collection's log reader.

The data are the run's own evidence files, tests/gpu/evidence/h200-run5-vllm-0.33.0/ (carriage returns turned into
line feeds, nothing else edited):

* step1-before.log: vLLM 0.33.0 (CUDA wheel, torch 2.14.0) serving the tiny Qwen3 target with the tiny DFlash v1
  drafter, config.json written by the dflash_drafter_config module for 0.33.0 (ids [1, 5]), the command line
  rendered by the vllm_service role's own tasks, flash-attn-4 4.0.0b12 alone in the venv: V2 model runner, the
  captured layers in V2's line (eagle3_utils.py:36 in 0.33.0, :28 in 0.26.0), served.
* step6-dflash2.log: the same target with the tiny DFlash2 drafter: loaded on the V2 runner with the same line, then
  stopped while FlashInfer JIT-built its top-k kernel for the drafter's candidate selector (tests/gpu/README.md).
"""

from __future__ import absolute_import, division, print_function

import io
import os

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import INFO_KEY, captured_layers_verdict
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import find_captured_layers, find_root_cause
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

HERE = os.path.dirname(os.path.abspath(__file__))
RUN5 = os.path.join(HERE, "..", "..", "..", "gpu", "evidence", "h200-run5-vllm-0.33.0")
V1_LOG = os.path.join(RUN5, "step1-before.log")
DFLASH2_LOG = os.path.join(RUN5, "step6-dflash2.log")
V1_LINE = ("(EngineCore pid=4106) INFO 12-04 09:37:49 [eagle3_utils.py:36] "
           "Using Eagle3 auxiliary layers from config: (2, 6)")
DFLASH2_LINE = ("(EngineCore pid=3222) INFO 12-04 09:29:33 [eagle3_utils.py:36] "
                "Using Eagle3 auxiliary layers from config: (2, 6)")
# What the module recorded for these runs (step3-drafter-config.json, step6-drafter-config.json).
V1_CONFIG = {
    "dflash_config": {"block_size": 4, "mask_token_id": 1000, "target_layer_ids": [1, 5]},
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.33.0"},
}
DFLASH2_CONFIG = {
    "architectures": ["DFlash2DraftModel"],
    "dflash_config": {"block_size": 4, "conv_group_size": 16, "conv_kernel_size": 2, "mask_token_id": 1000,
                      "selector_rank": 8, "selector_top_k": 4, "target_layer_ids": [1, 5]},
    "is_causal": False,
    INFO_KEY: {"dflash_target_layer_ids": [1, 5], "format": "dflash2", "ids_shift": 0, "layer_id_policy": "report",
               "written_for_vllm": "0.33.0"},
}


def _text(path):
    with io.open(path, encoding="utf-8") as fh:
        return fh.read()


def test_the_v1_start_served_on_the_v2_runner_with_flash_attn_4_alone():
    text = _text(V1_LOG)
    assert "Resolved architecture: DFlashDraftModel" in text
    assert "Using V2 Model Runner" in text
    assert V1_LINE in text.splitlines()
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
    with open(V1_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["layers"], found["runner"], found["source"], found["line"]) == ([2, 6], "v2", "config", V1_LINE)
    assert found["process"] == "EngineCore" and found["pid"] == 4106
    res = captured_layers_verdict(found, V1_CONFIG, "/root/gpu-proof/tiny/drafter/config.json")
    assert res["verdict"] == "match" and res["captured"] == [2, 6] and res["trained_ids"] == [1, 5]
    assert find_root_cause(_text(V1_LOG))["found"] is False


def test_the_dflash2_start_logged_the_v2_line_before_the_jit_build():
    text = _text(DFLASH2_LOG)
    assert "Resolved architecture: DFlash2DraftModel" in text
    assert DFLASH2_LINE in text.splitlines()
    assert "flashinfer.jit: Building JIT module topk" in text
    # not the sampler (that was off) but the drafter's candidate selector
    assert "FlashInfer top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0." in text
    assert "compute_candidates" in text and "get_top_k_tokens" in text
    with open(DFLASH2_LOG, "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["layers"], found["runner"]) == ([2, 6], "v2")
    res = captured_layers_verdict(found, DFLASH2_CONFIG, "/root/gpu-proof/tiny/drafter2/config.json")
    assert res["verdict"] == "match"


def test_the_stopped_jit_build_is_the_root_cause_found():
    # The stop (SIGTERM from the readiness timeout) reached ninja: exit status 130, no hint for it.
    res = find_root_cause(_text(DFLASH2_LOG))
    assert res["found"] is True
    assert "ninja" in res["cause"] and "exit status 130" in res["cause"]
    assert res["exception_type"] == "subprocess.CalledProcessError"
