# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""A DFlash drafter's tensors, from its safetensors header: what every DFlash drafter has (fc, the norms, the layers'
attention and MLP, the optional biases and attention sink, its own vocabulary rows), which tensor format it is
(TENSOR_FORMATS: format_dflash.py, format_dflash2.py, by their marker tensors) and what that format adds, and the
drafters of other speculative methods, refused by their tensors or config.

* detect_format(header) -> "dflash" | "dflash2"; tensor_format(header) / tensor_format_named(name) -> its file
* inspect_drafter(header, target_hidden_size, ..., own_hidden=False) -> dict of shapes (with "format") and sources
* detect_foreign_format(header) / foreign_config_format(config) -> (name, method, evidence) of a DSpark or EAGLE-3
  drafter, else None; foreign_format_message(...): the refusal naming the format and what to do
* torch_dtype(shapes) -> config.json's dtype of fc.weight's
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash, format_dflash2
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError, fmt_shape
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import METADATA_KEY
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.served import first_reading

# The tensor formats, told apart by their marker tensors (the first whose markers a tensor name holds; else v1).
TENSOR_FORMATS = (format_dflash2, format_dflash)
# Top-level tensors, each with the alias names vLLM also maps.
TOP_TENSORS = {
    "fc.weight": ("fc.weight", "encoder.fc.weight"),
    "hidden_norm.weight": ("hidden_norm.weight", "encoder.output_norm_enc.weight"),
    "norm.weight": ("norm.weight",),
}
# Optional per-layer tensors of vLLM's DFlashQwen3Attention (qwen3_dflash.py, every vLLM with DFlash): the q/k/v
# and o_proj biases when config.attention_bias ("DFlash has o_proj bias when using attention bias"), and a per-head
# attention sink when dflash_config.attention_sink_bias / add_swa_attention_sink_bias (the versions table's
# dflash_config_keys). vLLM's drafter load_weights returns no loaded-name set, so a flag without its tensors leaves
# torch.empty() values, with no error.
BIAS_TENSORS = ("self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias", "self_attn.o_proj.bias")
SINK_TENSOR = "self_attn.attention_sink_bias"
OPTIONAL_LAYER_TENSORS = BIAS_TENSORS + (SINK_TENSOR,)
# A drafter narrower or wider than its target (vLLM's top-level target_hidden_size, qwen3_dflash.py
# _get_dflash_fc_input_size) keeps its own vocabulary rows: vLLM shares the target's embedding and LM head only
# with a drafter that has none (vllm/v1/spec_decode/llm_base_proposer.py).
OWN_VOCAB_TENSORS = ("embed_tokens.weight", "lm_head.weight")
# Drafters of other speculative methods, told apart by their tensors: refused, never derived as DFlash.
# DSpark (vllm/model_executor/models/qwen3_dspark.py): markov_head.*, confidence_head.*; EAGLE-3
# (llama_eagle3.py / qwen3_eagle3.py): one midlayer.* decoder layer (vLLM maps it to layers.0) whose hidden_norm
# sits inside the layer.
FOREIGN_TENSOR_FORMATS = (
    ("DSpark", "dspark", lambda n: n.startswith(("markov_head.", "confidence_head."))),
    ("EAGLE-3", "eagle3", lambda n: n.startswith("midlayer.") or re.match(r"^layers\.\d+\.hidden_norm\.weight$", n)),
)
TORCH_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
_LAYER_RE = re.compile(r"^layers\.(\d+)\.(.+)$")


def tensor_format(header):
    """The format file (format_dflash2, else format_dflash) whose marker tensors the header holds."""
    names = [n for n in header if n != METADATA_KEY]
    for tensor_fmt in TENSOR_FORMATS:
        if any(m in n for n in names for m in tensor_fmt.MARKERS):
            return tensor_fmt
    return format_dflash


def tensor_format_named(name):
    """The format file of tensor format ``name`` ("dflash" or "dflash2")."""
    return dict((tensor_fmt.FORMAT, tensor_fmt) for tensor_fmt in TENSOR_FORMATS)[name]


def detect_format(header):
    """"dflash2" when a tensor belongs to a DFlash2 module (attention_conv, mlp_conv, candidate_selector), else
    "dflash"."""
    return tensor_format(header).FORMAT


def top_tensor(header, canonical):
    names = [n for n in TOP_TENSORS[canonical] if n in header]
    if len(names) > 1:
        raise DflashConfigError("drafter has both %s: ambiguous %s" % (" and ".join(names), canonical))
    return (names[0], header[names[0]]) if names else (None, None)


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


def refuse_foreign_tensors(header):
    found = detect_foreign_format(header)
    if found:
        name, method, tensors = found
        raise DflashConfigError(foreign_format_message(name, method, "its tensors include %s" % ", ".join(tensors),
                                                       "drafter"))


def _inspect_fc(header, target_hidden_size, target_hidden_source, own_hidden, sources):
    """(fc_name, fc, hidden, K, own_vocab): fc.weight [H, K*H] read against the target's hidden size."""
    fc_name, fc = top_tensor(header, "fc.weight")
    if fc is None:
        # A vLLM that reads use_aux_hidden_state can run a DFlash drafter without fc (false: it then reads no captured
        # target layers); nothing here tells which hidden states such a drafter was trained on, so it is not derived.
        raise DflashConfigError(
            "drafter has no fc.weight (nor encoder.fc.weight) tensor: not a DFlash drafter that reads captured target "
            "layers. A drafter without fc (vLLM's use_aux_hidden_state false, %s+) is not derived by this module: "
            "serve it with its published config.json" % first_reading("dflash_config.use_aux_hidden_state"))
    if len(fc.shape) != 2:
        raise DflashConfigError("%s has shape %s: expected 2 dimensions [H, K*H]" % (fc_name, fmt_shape(fc.shape)))
    hidden, width = fc.shape
    own_vocab = _own_vocab_rows(header, hidden, target_hidden_size) if own_hidden else None
    if hidden != target_hidden_size and own_vocab is None:
        raise DflashConfigError(
            "%s has shape %s: the drafter's hidden size %d differs from the target's %d (%s); a DFlash drafter "
            "shares the target's embeddings and LM head, so it must match: expected [%d, K*%d]%s. Wrong target?"
            % (fc_name, fmt_shape(fc.shape), hidden, target_hidden_size, target_hidden_source,
               target_hidden_size, target_hidden_size,
               ", or its own embed_tokens.weight and lm_head.weight [vocab_size, %d]" % hidden if own_hidden else ""))
    if hidden == 0 or width == 0 or width % target_hidden_size:
        raise DflashConfigError(
            "%s has shape %s: its width %d is not a multiple of the target's hidden size %d (%s), so the number "
            "of captured target layers is not a whole number"
            % (fc_name, fmt_shape(fc.shape), width, target_hidden_size, target_hidden_source))
    k = width // target_hidden_size
    sources["hidden_size"] = "%s shape %s, dim 0" % (fc_name, fmt_shape(fc.shape))
    sources["num_captured_layers"] = "%s dim 1 %d / target hidden_size %d" % (fc_name, width, target_hidden_size)
    if own_vocab is not None:
        sources["target_hidden_size"] = (
            "%s dim 1 %d = %d captured layers x the target's hidden_size %d (%s), not the drafter's own %d (dim 0)"
            % (fc_name, width, k, target_hidden_size, target_hidden_source, hidden))
    return fc_name, fc, hidden, k, own_vocab


def _check_norms(header, fc_name, fc, hidden, kind, top_level):
    for canonical in ("hidden_norm.weight", "norm.weight"):
        name, info = top_tensor(header, canonical)
        if info is None:
            raise DflashConfigError(
                "drafter has no %s tensor (%s has %s)" % (" / ".join(TOP_TENSORS[canonical]), kind, top_level))
        if tuple(info.shape) != (hidden,):
            raise DflashConfigError(
                "%s has shape %s, expected [%d] (the hidden size from %s %s)"
                % (name, fmt_shape(info.shape), hidden, fc_name, fmt_shape(fc.shape)))


def _collect_layers(header, tensor_fmt, extra_tensors):
    """{index: {suffix: tensor}} of the layers.N.* tensors, numbered 0 .. N-1, each complete; no other tensor."""
    kind, layer_tensors = tensor_fmt.WORDS[0], tensor_fmt.LAYER_TENSORS
    layers = {}
    unexpected = []
    known_top = (set(n for aliases in TOP_TENSORS.values() for n in aliases) | set(extra_tensors)
                 | set(tensor_fmt.TOP_TENSORS))
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
            % (len(unexpected), kind, ", ".join(unexpected[:5]), kind, tensor_fmt.SHORT))
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
                    % (index, suffix, fmt_shape(layers[index][suffix].shape), suffix, fmt_shape(first[suffix].shape)))
    return layers


def _dims(first, suffix, ndim):
    shape = first[suffix].shape
    if len(shape) != ndim or 0 in shape:
        raise DflashConfigError("layers.0.%s has shape %s: expected %d non-zero dimensions"
                                % (suffix, fmt_shape(shape), ndim))
    return shape


def _expect(first, suffix, expected):
    shape = first[suffix].shape
    if tuple(shape) != tuple(expected):
        raise DflashConfigError("layers.0.%s has shape %s, expected %s" % (suffix, fmt_shape(shape), fmt_shape(expected)))


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
                    % (index, suffix, fmt_shape(layer[suffix].shape), fmt_shape(expected[suffix])))
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
                % (suffix, fmt_shape(first[suffix].shape), rows, head_dim))
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
    sources["intermediate_size"] = "layers.0.mlp.gate_proj.weight shape %s, dim 0" % fmt_shape(first["mlp.gate_proj.weight"].shape)
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
    refuse_foreign_tensors(header)
    tensor_fmt = tensor_format(header)
    fmt = tensor_fmt.FORMAT
    kind, top_level = tensor_fmt.WORDS
    sources = {}
    fc_name, fc, hidden, k, own_vocab = _inspect_fc(header, target_hidden_size, target_hidden_source, own_hidden,
                                                    sources)
    if own_vocab is not None:
        extra_tensors = tuple(extra_tensors) + OWN_VOCAB_TENSORS
    _check_norms(header, fc_name, fc, hidden, kind, top_level)
    layers = _collect_layers(header, tensor_fmt, extra_tensors)
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
    shapes.update(tensor_fmt.inspect(header, first, hidden, sources))
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
                                    "fc.weight dim 0)" % (name, fmt_shape(info.shape), hidden))
        rows.add(info.shape[0])
    if len(rows) != 1:
        raise DflashConfigError("embed_tokens.weight has %d rows but lm_head.weight %d: both are the vocabulary"
                                % (found["embed_tokens.weight"].shape[0], found["lm_head.weight"].shape[0]))
    return rows.pop()


def torch_dtype(shapes):
    if shapes["dtype"] not in TORCH_DTYPES:
        raise DflashConfigError(
            "drafter fc.weight has dtype %s: only %s drafters are supported (quantized drafters need a "
            "quantization_config this module does not write)" % (shapes["dtype"], ", ".join(sorted(TORCH_DTYPES))))
    return TORCH_DTYPES[shapes["dtype"]]
