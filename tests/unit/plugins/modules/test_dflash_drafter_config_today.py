# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""dflash_drafter_config run as Ansible runs it (a subprocess) on drafters of today (issue 30 item 3): attention
bias and sink tensors, a mask_embedding.pt beside the weights, a Ricursive DFlash2 drafter, and a DSpark drafter
refused by name with nothing written."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils", "_drafter"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position
from test_drafter_mask_embedding import dict_pickle, write_pt  # noqa: E402

VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2, "target_layer_ids": [1, 5]}


def run_module(tmp_path, args, check=False):
    return _module_runner.run_module("dflash_drafter_config", tmp_path, args, check=check, check_rc=True)


def _drafter(directory, extra=None, dflash2=False):
    directory.mkdir()
    dims = fx.TINY_DFLASH2 if dflash2 else fx.TINY
    specs = (fx.dflash2_specs if dflash2 else fx.drafter_specs)(dtype="F16", **dims)
    specs.update(extra or {})
    fx.write_numpy(directory / "model.safetensors", specs, metadata={"format": "pt"})
    return str(directory)


def test_biased_sinked_drafter_with_mask_embedding(tmp_path):
    extra = {}
    for index in (0, 1):
        for suffix, rows in (("q_proj", 256), ("k_proj", 128), ("v_proj", 128), ("o_proj", 256)):
            extra["layers.%d.self_attn.%s.bias" % (index, suffix)] = ("F16", [rows])
        extra["layers.%d.self_attn.attention_sink_bias" % index] = ("F32", [4])
    drafter = _drafter(tmp_path / "d", extra)
    write_pt(tmp_path / "d" / "mask_embedding.pt", dict_pickle(1000, [256]), numel=256)
    target = fx.write_target(tmp_path / "t", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    args = dict(VALUES, drafter=drafter, target=target, dest=os.path.join(drafter, "config.json"),
                vllm_version="0.34.0", attention_value_scale=0.5)
    first = run_module(tmp_path, args, check=True)
    assert first["changed"] and not os.path.exists(args["dest"])
    written = run_module(tmp_path, args)
    with open(args["dest"]) as handle:
        config = json.load(handle)
    assert config["attention_bias"] is True
    assert config["dflash_config"]["attention_sink_bias"] is True
    assert config["dflash_config"]["attention_value_scale"] == 0.5
    assert written["derived"]["mask_embedding"]["value"]["mask_token_id"] == 1000
    assert run_module(tmp_path, args)["changed"] is False


def test_ricursive_dflash2(tmp_path):
    drafter = _drafter(tmp_path / "d", dflash2=True)
    target = fx.write_target(tmp_path / "t", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    args = dict(VALUES, drafter=drafter, target=target, dest=os.path.join(drafter, "config.json"), block_size=8,
                selector_top_k=4, is_causal=False, no_rope_layers=[0], vllm_version="0.34.0")
    result = run_module(tmp_path, args)
    assert result["config"]["no_rope_layers"] == [0] and result["format"] == "dflash2"
    assert result["derived"]["vllm_architecture"]["value"] == "DFlash2RicursiveDraftModel"
    refused = run_module(tmp_path, dict(args, vllm_version="0.33.0", dest=str(tmp_path / "other.json")))
    assert refused["failed"] and "has no DFlash2RicursiveDraftModel" in refused["msg"]
    assert not os.path.exists(str(tmp_path / "other.json"))


def test_dspark_drafter_refused_nothing_written(tmp_path):
    drafter = _drafter(tmp_path / "d", {"markov_head.markov_w1.weight": ("F16", [1024, 16]),
                                        "markov_head.markov_w2.weight": ("F16", [1024, 16])})
    target = fx.write_target(tmp_path / "t", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    dest = os.path.join(drafter, "config.json")
    result = run_module(tmp_path, dict(VALUES, drafter=drafter, target=target, dest=dest))
    assert result["failed"] and "this is a DSpark drafter" in result["msg"] and "'dspark'" in result["msg"]
    assert not os.path.exists(dest)
