# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""dflash_drafter_config, run as Ansible runs it, writing the keys vLLM's qwen3_dflash.py reads (issue 16)."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

NARROW = dict(hidden=128, k=4, layers=2, heads=2, kv_heads=1, head_dim=64, intermediate=256)
OPTIONS = {"block_size": 4, "mask_token_id": 1000, "layer_types": ["sliding_attention", "full_attention"],
           "target_layer_ids": [1, 5], "swa_window_size": 32, "is_neox_style": True, "causal": False}


def run_module(tmp_path, args):
    return _module_runner.run_module("dflash_drafter_config", tmp_path, args, check_rc=True)


def _files(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **NARROW)
    for name in ("embed_tokens.weight", "lm_head.weight"):
        specs[name] = ("F16", [1024, 128])
    drafter = fx.write_numpy(tmp_path / "model.safetensors", specs, metadata={"format": "pt"})
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    return drafter, target


def test_a_narrow_drafter_with_read_keys_for_vllm_0_33(tmp_path):
    drafter, target = _files(tmp_path)
    args = dict(OPTIONS, drafter=drafter, target=target, dest=str(tmp_path / "config.json"), vllm_version="0.33.0")
    first = run_module(tmp_path, args)
    assert first["changed"] is True
    with open(args["dest"]) as handle:
        written = json.load(handle)
    assert written["hidden_size"] == 128 and written["target_hidden_size"] == 256
    assert written["is_neox_style"] is True and written["sliding_window"] == 32
    assert written["dflash_config"] == {"block_size": 4, "causal": False, "mask_token_id": 1000,
                                        "swa_window_size": 32, "target_layer_ids": [1, 5]}
    assert run_module(tmp_path, args)["changed"] is False


def test_an_option_vllm_does_not_read_fails_and_writes_nothing(tmp_path):
    drafter, target = _files(tmp_path)
    args = dict(OPTIONS, drafter=drafter, target=target, dest=str(tmp_path / "config.json"), vllm_version="0.26.0")
    res = run_module(tmp_path, args)
    assert res.get("failed") is True
    assert "vLLM 0.26.0 does not read is_neox_style (first read by vLLM 0.29.0" in res["msg"]
    assert not os.path.exists(args["dest"])
