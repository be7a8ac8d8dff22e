# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""DFlash v1 (z-lab/dflash DFlashDraftModel): the format's name, its layer tensors, and which vLLM serves it.

A drafter format is one file like this one (format_dflash2.py, format_speculators.py), registered in formats.py,
plus the versions table's column that says which vLLM serves it (here: dflash). Every format file gives FORMATS
(the names it serves) and the served rules needs(fmt) / problem(fmt, vllm_version, distribution) /
runner_warning(fmt, vllm_version). A tensor format (this one, format_dflash2.py; tensors.py tells them apart) also
gives FORMAT, ARCHITECTURE, WORDS (its name, what its top level holds), SHORT, MARKERS (tensor name parts that tell
it), LAYER_TENSORS, TOP_TENSORS (its own top-level tensors), SIZED (shape keys recorded besides the common ones),
inspect(header, first_layer, hidden, sources), check_vocab(shapes, vocab, where), formula_ids_refusal(ids),
derive(shapes, overrides, profile, vllm_version, record, warnings) and build(config, values).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

FORMAT = "dflash"
FORMATS = (FORMAT,)
ARCHITECTURE = "DFlashDraftModel"
WORDS = ("DFlash v1", "fc.weight, hidden_norm.weight, norm.weight and layers.N.*")
SHORT = "v1"
MARKERS = ()
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
TOP_TENSORS = ()
SIZED = ()


def inspect(header, first, hidden, sources):  # pylint: disable=unused-argument
    """Nothing beyond the common tensors."""
    return {}


def check_vocab(shapes, vocab, where):  # pylint: disable=unused-argument
    """Nothing of its own must fit the target's vocabulary."""


def formula_ids_refusal(formula_ids):  # pylint: disable=unused-argument
    """The DFlash formula is DFlash v1's own."""
    return None


def derive(shapes, overrides, profile, vllm_version, record, warnings):  # pylint: disable=unused-argument
    """No values of its own."""
    return {}


def build(config, values):  # pylint: disable=unused-argument
    """The common config is DFlash v1's."""


def needs(fmt):  # pylint: disable=unused-argument
    """One sentence: which vLLM serves a DFlash v1 drafter."""
    return "a DFlash drafter needs vLLM >= %s" % vllm_versions.DFLASH_MIN_VERSION


def problem(fmt, vllm_version, distribution):  # pylint: disable=unused-argument
    """None: which vLLM serves DFlash v1 (and how it reads the ids) is the ids policy's (ids.apply_layer_id_policy)."""
    return None


def runner_warning(fmt, vllm_version):  # pylint: disable=unused-argument
    return None
