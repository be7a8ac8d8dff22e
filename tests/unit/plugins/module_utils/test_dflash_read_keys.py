# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter config keys vLLM's qwen3_dflash.py reads besides ids, mask token and layer_types (issue 16).

target_hidden_size comes from the tensors (a drafter narrower than its target: fc.weight [H_d, K x H_t] with its
own embed_tokens / lm_head); use_swa, swa_window_size, causal and is_neox_style only from options, and only for a
vLLM that reads them (the versions table's dflash_config_keys: target_hidden_size from 0.20.0, use_swa /
swa_window_size / causal from 0.25.0, is_neox_style from 0.29.0). Every drafter here is a real safetensors file
written by the safetensors library.
"""

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import DflashConfigError, derive_drafter_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import read_checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

VALUES = {"block_size": 4, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2, "target_layer_ids": [1, 5]}
SLIDING = dict(VALUES, layer_types=["sliding_attention"] * 2)
MIXED = dict(VALUES, layer_types=["sliding_attention", "full_attention"])
# A drafter of hidden 128 for the tiny 256-wide target: fc.weight [128, 512] = 2 captured layers x 256.
NARROW = dict(hidden=128, k=4, layers=2, heads=2, kv_heads=1, head_dim=64, intermediate=256)


def tiny_target():
    return fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024)


def narrow_specs(vocab_rows=1024, own=dflash.OWN_VOCAB_TENSORS):
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
    assert dflash._first_reading("target_hidden_size") == "0.20.0"
    for key in ("dflash_config.use_swa", "dflash_config.swa_window_size", "dflash_config.causal"):
        assert dflash._first_reading(key) == "0.25.0"
    assert dflash._first_reading("is_neox_style") == "0.29.0"
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
