# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 30 item 3, drafters of today, on real safetensors files written by the safetensors library.

The keys vLLM's qwen3_dflash.py reads since 0.25 / 0.29 / 0.31 (attention_bias and attention_sink_bias told by the
tensors, attention_value_scale only when given, use_aux_hidden_state left to vLLM's default or refused), a
mask_embedding.pt checked against the config's mask token, Ricursive DFlash2 (no_rope_layers), and DSpark /
EAGLE-3 drafters refused by name.
"""

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive as derive_mod
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import tensors
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (
    DflashConfigError,
    derive_drafter_config,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import TensorInfo, read_checkpoint
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # _dflash_fixtures
sys.path.insert(0, HERE)  # the mask_embedding.pt writer
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position
from test_drafter_mask_embedding import dict_pickle, tensor_pickle, write_pt  # noqa: E402

VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2, "target_layer_ids": [1, 5]}
DFLASH2_VALUES = dict(VALUES, block_size=8, selector_top_k=4, is_causal=False)
TINY = fx.TINY  # hidden 256, 2 layers, 4 heads x 64, 2 KV heads


def target():
    return fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024)


def bias_specs(layers=(0, 1), suffixes=tensors.BIAS_TENSORS):
    rows = {"self_attn.q_proj.bias": 256, "self_attn.k_proj.bias": 128, "self_attn.v_proj.bias": 128,
            "self_attn.o_proj.bias": 256}
    return dict(("layers.%d.%s" % (i, s), ("F16", [rows[s]])) for i in layers for s in suffixes)


def sink_specs(layers=(0, 1), heads=4):
    return dict(("layers.%d.self_attn.attention_sink_bias" % i, ("F32", [heads])) for i in layers)


def header_with(tmp_path, extra, base=None, name="model.safetensors"):
    specs = dict(base if base is not None else fx.drafter_specs(dtype="F16", **TINY))
    specs.update(extra)
    return read_checkpoint(fx.write_numpy(tmp_path / name, specs, metadata={"format": "pt"}))


# ------------------------------------------------ the table's new keys ---

def _keys(version):
    return set(vllm_versions.behaviour(version)["dflash_config_keys"] or ())


def test_table_lists_the_keys_from_the_version_that_reads_them():
    keys = _keys
    assert "dflash_config.attention_sink_bias" not in keys("0.24.0")
    assert {"dflash_config.attention_sink_bias", "add_swa_attention_sink_bias"} <= keys("0.25.0")
    assert "dflash_config.use_aux_hidden_state" not in keys("0.28.0")
    assert {"dflash_config.use_aux_hidden_state", "use_aux_hidden_state"} <= keys("0.29.0")
    assert "dflash_config.attention_value_scale" not in keys("0.30.0")
    assert "dflash_config.attention_value_scale" in keys("0.31.0") and "dflash_config.attention_value_scale" in keys(
        "0.34.0")


# ------------------------------------------------------ attention_bias ---

def test_attention_bias_from_the_tensors(tmp_path):
    plain = derive_drafter_config(header_with(tmp_path, {}, name="a.safetensors"), target(), overrides=VALUES)
    assert plain["config"]["attention_bias"] is False
    assert plain["derived"]["attention_bias"]["source"] == "no layers.N.self_attn.*_proj.bias tensor"
    biased = derive_drafter_config(header_with(tmp_path, bias_specs()), target(), overrides=VALUES,
                                   vllm_version="0.20.1")
    assert biased["config"]["attention_bias"] is True
    assert biased["derived"]["attention_bias"]["source"].startswith("layers.N.self_attn.{q,k,v,o}_proj.bias present")
    # Only that key differs: the rest of the config is the same derivation.
    again = derive_drafter_config(header_with(tmp_path, {}, name="b.safetensors"), target(), overrides=VALUES,
                                  vllm_version="0.20.1")["config"]
    assert dict(biased["config"], attention_bias=False) == again


@pytest.mark.parametrize("extra,message", [
    (bias_specs(suffixes=tensors.BIAS_TENSORS[:3]),
     "drafter layer 0 lacks layers.0.self_attn.o_proj.bias while other attention bias tensors exist"),
    (bias_specs(layers=(0,)), "drafter layer 1 lacks layers.1.self_attn.q_proj.bias"),
    (dict(bias_specs(), **{"layers.1.self_attn.k_proj.bias": ("F16", [256])}),
     "layers.1.self_attn.k_proj.bias has shape [256], expected [128]"),
])
def test_attention_bias_incomplete_or_wrong(tmp_path, extra, message):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_with(tmp_path, extra), target(), overrides=VALUES)
    assert message in str(err.value)


# ------------------------------------------------- attention_sink_bias ---

def test_attention_sink_from_the_tensors(tmp_path):
    header = header_with(tmp_path, sink_specs())
    result = derive_drafter_config(header, target(), overrides=VALUES, vllm_version="0.25.0")
    assert result["config"]["dflash_config"]["attention_sink_bias"] is True
    assert "add_swa_attention_sink_bias" not in result["config"]
    assert result["derived"]["attention_sink_bias"]["source"] == (
        "layers.N.self_attn.attention_sink_bias [4] in every layer")
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, target(), overrides=VALUES, vllm_version="0.24.0")
    assert ("vLLM 0.24.0 does not read dflash_config.attention_sink_bias (first read by vLLM 0.25.0"
            in str(err.value))
    unknown = derive_drafter_config(header, target(), overrides=VALUES)
    assert any("dflash_config.attention_sink_bias, which vLLM >= 0.25.0 reads" in w for w in unknown["warnings"])
    # Without sink tensors nothing is written: vLLM's default (no sink) is right.
    plain = derive_drafter_config(header_with(tmp_path, {}, name="p.safetensors"), target(), overrides=VALUES,
                                  vllm_version="0.34.0")
    assert "attention_sink_bias" not in plain["config"]["dflash_config"]


def test_attention_sink_wrong_shape_or_partial(tmp_path):
    with pytest.raises(DflashConfigError, match=r"layers.0.self_attn.attention_sink_bias has shape \[2\], expected"):
        derive_drafter_config(header_with(tmp_path, sink_specs(heads=2)), target(), overrides=VALUES)
    with pytest.raises(DflashConfigError, match="drafter layer 1 lacks layers.1.self_attn.attention_sink_bias"):
        derive_drafter_config(header_with(tmp_path, sink_specs(layers=(0,)), name="b.safetensors"), target(),
                              overrides=VALUES)


@settings(max_examples=60, deadline=None)
@given(present=st.sets(st.tuples(st.integers(0, 1), st.sampled_from(tensors.OPTIONAL_LAYER_TENSORS))))
def test_property_optional_tensors_all_or_none(present):
    # Any subset of the optional per-layer tensors: derived when each group is complete or absent, else refused.
    specs = fx.drafter_specs(dtype="F16", **TINY)
    shapes = dict(bias_specs(), **sink_specs())
    specs.update(("layers.%d.%s" % item, shapes["layers.%d.%s" % item]) for item in present)
    header = dict((name, TensorInfo(dtype, shape)) for name, (dtype, shape) in specs.items())
    bias = set(s for _i, s in present if s in tensors.BIAS_TENSORS)
    sink = set(i for i, s in present if s == tensors.SINK_TENSOR)
    bias_complete = len([x for x in present if x[1] in tensors.BIAS_TENSORS]) in (0, 8)
    ok = bias_complete and len(sink) in (0, 2)
    try:
        result = derive_drafter_config(header, target(), overrides=VALUES, vllm_version="0.34.0")
    except DflashConfigError as exc:
        assert not ok and "lacks" in str(exc)
    else:
        assert ok
        assert result["config"]["attention_bias"] is bool(bias)
        assert result["config"]["dflash_config"].get("attention_sink_bias", False) is bool(sink)


# ----------------------------------------------- attention_value_scale ---

def test_attention_value_scale_only_when_given_and_read(tmp_path):
    header = header_with(tmp_path, {})
    result = derive_drafter_config(header, target(), overrides=dict(VALUES, attention_value_scale=0.5),
                                   vllm_version="0.31.0")
    assert result["config"]["dflash_config"]["attention_value_scale"] == 0.5
    assert result["derived"]["attention_value_scale"]["source"] == "option attention_value_scale"
    assert "attention_value_scale" not in derive_drafter_config(header, target(), overrides=VALUES,
                                                                vllm_version="0.34.0")["config"]["dflash_config"]
    with pytest.raises(DflashConfigError, match="vLLM 0.30.0 does not read dflash_config.attention_value_scale "
                                                r"\(first read by vLLM 0.31.0"):
        derive_drafter_config(header, target(), overrides=dict(VALUES, attention_value_scale=0.5),
                              vllm_version="0.30.0")
    for bad in (0, -1.0, True, float("inf")):
        with pytest.raises(DflashConfigError, match="attention_value_scale must be a positive finite number"):
            derive_drafter_config(header, target(), overrides=dict(VALUES, attention_value_scale=bad))


# ------------------------------------------------ use_aux_hidden_state ---

def test_no_fc_is_refused_naming_use_aux_hidden_state(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **TINY)
    del specs["fc.weight"]
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_with(tmp_path, {}, base=specs), target(), overrides=VALUES)
    assert "use_aux_hidden_state false" in str(err.value)


def test_use_aux_hidden_state_never_written(tmp_path):
    # fc.weight present: vLLM's default (true) is what the tensors say, so the v1 config stays as it was.
    config = derive_drafter_config(header_with(tmp_path, {}), target(), overrides=VALUES,
                                   vllm_version="0.34.0")["config"]
    assert "use_aux_hidden_state" not in config and "use_aux_hidden_state" not in config["dflash_config"]


# ----------------------------------------------------- mask_embedding.pt ---

def summary(mask=1000, numel=256, layout="dict"):
    return {"path": "/d/mask_embedding.pt", "mask_token_id": mask, "shape": [numel], "numel": numel,
            "storage": "BFloat16Storage", "layout": layout}


def test_mask_embedding_checked(tmp_path):
    header = header_with(tmp_path, {})
    result = derive_drafter_config(header, target(), overrides=VALUES, vllm_version="0.25.0",
                                   mask_embedding=summary())
    assert result["derived"]["mask_embedding"]["value"]["mask_token_id"] == 1000
    assert "its mask_token_id 1000 = dflash_config.mask_token_id" in result["derived"]["mask_embedding"]["source"]
    assert "mask_embedding" not in result["config"]  # vLLM reads the file itself
    bare = derive_drafter_config(header, target(), overrides=VALUES, vllm_version="0.34.0",
                                 mask_embedding=summary(mask=None, layout="tensor"))
    assert any("does not name its mask token (a bare tensor)" in w for w in bare["warnings"])


@pytest.mark.parametrize("found,version,message", [
    (summary(mask=999), "0.34.0", "/d/mask_embedding.pt says mask_token_id 999 but the config's "
                                  "dflash_config.mask_token_id is 1000 (option mask_token_id)"),
    (summary(numel=128), "0.34.0", "holds a tensor of shape [128] (128 values), but vLLM loads it as the drafter's "
                                   "mask embedding of hidden_size 256"),
    (summary(), "0.24.0", "vLLM 0.24.0 ignores mask_embedding.pt (read from 0.25.0"),
])
def test_mask_embedding_refused(tmp_path, found, version, message):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_with(tmp_path, {}), target(), overrides=VALUES, vllm_version=version,
                              mask_embedding=found)
    assert message in str(err.value)


def test_mask_embedding_of_a_speculators_drafter(tmp_path):
    header = header_with(tmp_path, {})
    spec = fx.speculators_config()
    result = derive_drafter_config(header, target(), speculators=spec, speculators_source="S", vllm_version="0.33.0",
                                   mask_embedding=summary())
    assert "mask_embedding" in result["derived"]
    with pytest.raises(DflashConfigError, match="says mask_token_id 7 but the config's dflash_config.mask_token_id "
                                                "is 1000 .S mask_token_id."):
        derive_drafter_config(header, target(), speculators=spec, speculators_source="S", mask_embedding=summary(7))


def _params(tmp_path, drafter, **extra):
    params = dict((key, None) for key in derive_mod.config_spec())
    params.update(profile="auto", ids_policy="warn", layer_id_policy="report", drafter=drafter,
                  target=fx.write_target(tmp_path / "target", target()), dest=str(tmp_path / "d" / "config.json"))
    params.update(VALUES)
    params.update(extra)
    return params


def test_mask_embedding_file_beside_the_weights(tmp_path):
    # The module's path: the file is found beside the weights and read without torch.
    directory = tmp_path / "d"
    directory.mkdir()
    drafter = fx.write_tiny_drafter(directory / "model.safetensors")
    write_pt(directory / "mask_embedding.pt", dict_pickle(1000, [256]), numel=256)
    found = derive_mod.derive(_params(tmp_path, str(directory), vllm_version="0.34.0"), check_mode=False)
    assert found["result"]["derived"]["mask_embedding"]["value"]["shape"] == [256]
    write_pt(directory / "mask_embedding.pt", dict_pickle(151669, [256]), numel=256)
    with pytest.raises(derive_mod.DrafterConfigError, match="says mask_token_id 151669 but the config's"):
        derive_mod.derive(_params(tmp_path, drafter, vllm_version="0.34.0"), check_mode=False)
    (directory / "mask_embedding.pt").write_bytes(b"\x80\x02" + tensor_pickle([256]) + b".")  # a bare pickle
    with pytest.raises(derive_mod.DrafterConfigError) as err:
        derive_mod.derive(_params(tmp_path, drafter), check_mode=False)
    assert "not a zip written by torch.save" in str(err.value) and "remove it if it does not belong" in str(err.value)


# ------------------------------------------------ Ricursive DFlash2 ---

def dflash2_header(tmp_path):
    return read_checkpoint(fx.write_tiny_dflash2(tmp_path / "d2.safetensors"))


def test_ricursive_dflash2(tmp_path):
    header = dflash2_header(tmp_path)
    result = derive_drafter_config(header, target(), overrides=dict(DFLASH2_VALUES, no_rope_layers=[1]),
                                   vllm_version="0.34.0")
    config = result["config"]
    assert config["architectures"] == ["DFlash2DraftModel"] and config["no_rope_layers"] == [1]
    assert result["format"] == "dflash2"
    assert result["derived"]["vllm_architecture"]["value"] == "DFlash2RicursiveDraftModel"
    plain = derive_drafter_config(header, target(), overrides=DFLASH2_VALUES, vllm_version="0.34.0")
    assert "no_rope_layers" not in plain["config"] and "vllm_architecture" not in plain["derived"]
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, target(), overrides=dict(DFLASH2_VALUES, no_rope_layers=[1]),
                              vllm_version="0.33.0")
    assert "vLLM 0.33.0 has no DFlash2RicursiveDraftModel, so it would run rotary embeddings on layers [1]" in str(
        err.value)
    unknown = derive_drafter_config(header, target(), overrides=dict(DFLASH2_VALUES, no_rope_layers=[0, 1]))
    assert any("no_rope_layers written, but the vLLM version was not given" in w for w in unknown["warnings"])


@pytest.mark.parametrize("layers", [[], [2], [0, 0], [-1], ["1"]])
def test_ricursive_bad_layers(tmp_path, layers):
    with pytest.raises(DflashConfigError, match="no_rope_layers .option no_rope_layers. must list distinct drafter "
                                                r"layer indices in 0 \.\. 1"):
        derive_drafter_config(dflash2_header(tmp_path), target(), overrides=dict(DFLASH2_VALUES, no_rope_layers=layers))


def test_no_rope_layers_on_a_dflash_v1_drafter(tmp_path):
    with pytest.raises(DflashConfigError, match="no_rope_layers applies to DFlash2 drafters only"):
        derive_drafter_config(header_with(tmp_path, {}), target(), overrides=dict(VALUES, no_rope_layers=[0]))


# ------------------------------------------------------ DSpark, EAGLE-3 ---

def test_dspark_tensors_refused(tmp_path):
    extra = {"markov_head.markov_w1.weight": ("F16", [1024, 32]), "markov_head.markov_w2.weight": ("F16", [1024, 32])}
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_with(tmp_path, extra), target(), overrides=VALUES)
    message = str(err.value)
    assert message.startswith("drafter: this is a DSpark drafter (its tensors include markov_head.markov_w1.weight")
    assert "speculative method 'dspark'" in message and "not a DFlash one" in message


def test_eagle3_tensors_refused(tmp_path):
    # An EAGLE-3 drafter (llama_eagle3.py): fc [H, 3H], one midlayer with its own hidden_norm, lm_head, d2t, t2d.
    specs = {"fc.weight": ("F16", [256, 768]), "norm.weight": ("F16", [256]), "lm_head.weight": ("F16", [512, 256]),
             "d2t": ("I64", [512]), "t2d": ("BOOL", [1024]), "midlayer.hidden_norm.weight": ("F16", [256]),
             "midlayer.self_attn.q_proj.weight": ("F16", [256, 512])}
    specs = dict((k, ("F16", v[1]) if v[0] in ("I64", "BOOL") else v) for k, v in specs.items())
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_with(tmp_path, {}, base=specs), target(), overrides=VALUES)
    assert "this is an EAGLE-3 drafter (its tensors include midlayer.hidden_norm.weight" in str(err.value)
    assert "speculative method 'eagle3'" in str(err.value)


@pytest.mark.parametrize("config,expected", [
    ({"method": "dspark"}, ("DSpark", "dspark", "method 'dspark'")),
    ({"dspark_target_layer_ids": [1, 5]}, ("DSpark", "dspark", "dspark_target_layer_ids")),
    ({"architectures": ["Qwen3DSparkModel"]}, ("DSpark", "dspark", "architectures ['Qwen3DSparkModel']")),
    ({"speculators_model_type": "dspark"}, ("DSpark", "dspark", "speculators_model_type 'dspark'")),
    ({"architectures": ["LlamaForCausalLMEagle3"]}, ("EAGLE-3", "eagle3", "architectures ['LlamaForCausalLMEagle3']")),
    ({"architectures": ["DFlashDraftModel"], "dflash_config": {}}, None),
    ({"architectures": "DSpark"}, None),
    ([], None),
])
def test_foreign_config_format(config, expected):
    assert tensors.foreign_config_format(config) == expected


def test_dspark_config_beside_the_weights_refused(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    fx.write_tiny_drafter(directory / "model.safetensors")
    fx.write_json(directory / "config.json", {"architectures": ["DSparkDraftModel"], "model_type": "qwen3",
                                              "dspark_target_layer_ids": [1, 5]})
    params = _params(tmp_path, str(directory), dest=str(tmp_path / "elsewhere.json"))
    with pytest.raises(derive_mod.DrafterConfigError) as err:
        derive_mod.derive(params, check_mode=True)
    assert "d/config.json: this is a DSpark drafter (its dspark_target_layer_ids), not a DFlash one" in str(err.value)


def test_speculators_dspark_refused_by_name(tmp_path):
    spec = fx.speculators_config(spec_type="dspark")
    with pytest.raises(DflashConfigError, match="S: this is a DSpark drafter .its speculators_model_type 'dspark'."):
        derive_drafter_config(header_with(tmp_path, {}), target(), speculators=spec, speculators_source="S")
