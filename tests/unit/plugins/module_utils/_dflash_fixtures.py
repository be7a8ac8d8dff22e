# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Real drafter and target files for the DFlash tests.

Small drafters are written with ``safetensors.numpy.save_file`` (the real
library, real DFlash tensor names). Full-size ones (ct129's Qwen3.6-27B drafter:
hidden 5120, ``fc.weight [5120, 25600]``, about 3 GB) get a hand-written header
and a sparse data region (``truncate``), so no memory or disk is spent on data
that the header reader never touches. DFlash2 drafters carry vLLM's tensor names
(``qwen3_dflash2.py``); speculators-format drafters come with the config.json
vllm-project/speculators writes for them.
"""

import json
import os
import struct

import numpy as np
from safetensors.numpy import save_file

LAYER_SUFFIXES = (
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

DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "BOOL": 1, "I16": 2, "U16": 2,
               "I32": 4, "U32": 4, "I64": 8, "U64": 8, "C64": 8, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
               "F8_E4M3FNUZ": 1, "F8_E5M2FNUZ": 1}

# ct129's drafter (docs/dflash.md): 64-layer target, H 5120, 5 layers,
# 32 heads x 128, 8 KV heads, FFN 17408, K = 5.
SEED = dict(hidden=5120, k=5, layers=5, heads=32, kv_heads=8, head_dim=128, intermediate=17408)
# Qwen3-8B-DFlash-b16: 58 tensors = 3 + 11 x 5 layers, target Qwen3-8B (36 layers, H 4096).
QWEN3_8B = dict(hidden=4096, k=5, layers=5, heads=32, kv_heads=8, head_dim=128, intermediate=12288)
# Scaled down, the shapes the CPU test host serves in real vLLM: hidden 256, fc [256, 512].
TINY = dict(hidden=256, k=2, layers=2, heads=4, kv_heads=2, head_dim=64, intermediate=512)


def drafter_specs(hidden, k, layers, heads, kv_heads, head_dim, intermediate, dtype="BF16", norm_dtype=None):
    """name -> (dtype, shape) of a DFlash v1 drafter with these dimensions."""
    norm_dtype = norm_dtype or dtype
    specs = {
        "fc.weight": (dtype, [hidden, k * hidden]),
        "hidden_norm.weight": (norm_dtype, [hidden]),
        "norm.weight": (norm_dtype, [hidden]),
    }
    per_layer = {
        "input_layernorm.weight": (norm_dtype, [hidden]),
        "post_attention_layernorm.weight": (norm_dtype, [hidden]),
        "self_attn.q_proj.weight": (dtype, [heads * head_dim, hidden]),
        "self_attn.k_proj.weight": (dtype, [kv_heads * head_dim, hidden]),
        "self_attn.v_proj.weight": (dtype, [kv_heads * head_dim, hidden]),
        "self_attn.o_proj.weight": (dtype, [hidden, heads * head_dim]),
        "self_attn.q_norm.weight": (norm_dtype, [head_dim]),
        "self_attn.k_norm.weight": (norm_dtype, [head_dim]),
        "mlp.gate_proj.weight": (dtype, [intermediate, hidden]),
        "mlp.up_proj.weight": (dtype, [intermediate, hidden]),
        "mlp.down_proj.weight": (dtype, [hidden, intermediate]),
    }
    for index in range(layers):
        for suffix, spec in per_layer.items():
            specs["layers.%d.%s" % (index, suffix)] = spec
    return specs


# z-lab/Qwen3.8-27B-DFlash2 (docs/dflash.md): SEED's shapes plus, per layer, two grouped convolutions
# (kernel 2, group 16: base_kernel [2, 2, 5120], kernel_projection [1280, 5120]) and a rank-256 candidate
# selector over the 248320-token vocabulary.
QWEN38_DFLASH2 = dict(SEED, conv_kernel=2, conv_group=16, selector_rank=256, vocab=248320)
TINY_DFLASH2 = dict(TINY, conv_kernel=2, conv_group=16, selector_rank=8, vocab=1024)


def dflash2_specs(hidden, k, layers, heads, kv_heads, head_dim, intermediate, conv_kernel, conv_group, selector_rank,
                  vocab, dtype="BF16", norm_dtype=None):
    """name -> (dtype, shape) of a DFlash2 drafter: DFlash v1's tensors plus vLLM's DFlash2 modules."""
    specs = drafter_specs(hidden, k, layers, heads, kv_heads, head_dim, intermediate, dtype, norm_dtype)
    groups = hidden // conv_group
    for index in range(layers):
        for conv in ("attention_conv", "mlp_conv"):
            specs["layers.%d.%s.base_kernel" % (index, conv)] = (dtype, [2, conv_kernel, hidden])
            specs["layers.%d.%s.kernel_projection.weight" % (index, conv)] = (dtype, [2 * conv_kernel * groups, hidden])
    specs["candidate_selector.hidden_projection.weight"] = (dtype, [selector_rank, hidden])
    specs["candidate_selector.predecessor_codebook"] = (dtype, [vocab, selector_rank])
    specs["candidate_selector.successor_codebook"] = (dtype, [vocab, selector_rank])
    return specs


def write_tiny_dflash2(path, **overrides):
    """A small DFlash2 drafter with vLLM's tensor names, written by the safetensors library."""
    dims = dict(TINY_DFLASH2)
    dims.update(overrides)
    return write_numpy(path, dflash2_specs(dtype="F16", **dims), metadata={"format": "pt"})


def write_qwen38_dflash2(path):
    """z-lab/Qwen3.8-27B-DFlash2's shapes, BF16, sparse (header only is ever read)."""
    return write_sparse(path, dflash2_specs(**QWEN38_DFLASH2), metadata={"format": "pt"})


def speculators_config(spec_type="dflash", aux=(2, 6), mask=1000, vocab=1024, hidden=256, layers=2, heads=4,
                       kv_heads=2, head_dim=64, intermediate=512, **extra):
    """A speculators-format config.json (vllm-project/speculators' DFlashSpeculatorConfig) for the TINY drafter.

    aux_hidden_state_layer_ids are DFlash ids + 1: (2, 6) means DFlash ids [1, 5] of an 8-layer target.
    """
    config = {
        "architectures": ["DFlashSpeculator"],
        "speculators_model_type": spec_type,
        "speculators_version": "0.3.0",
        "speculators_config": {
            "algorithm": spec_type,
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 7}],
            "verifier": {"name_or_path": "Qwen/Qwen3-8B", "architectures": ["Qwen3ForCausalLM"]},
        },
        "transformer_layer_config": {
            "model_type": "qwen3", "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
            "intermediate_size": intermediate, "vocab_size": vocab, "rms_norm_eps": 1e-06,
            "rope_theta": 1000000, "max_position_embeddings": 40960,
        },
        "aux_hidden_state_layer_ids": list(aux),
        "mask_token_id": mask,
        "draft_vocab_size": vocab,
        "target_hidden_size": hidden,
        "block_size": 8,
        "sample_from_anchor": False,
        "sliding_window_non_causal": False,
    }
    config.update(extra)
    return config


def write_json(path, data):
    with open(str(path), "w") as handle:
        json.dump(data, handle, indent=2)
    return str(path)


def dims(base, **changes):
    """A copy of a dims dict (SEED, TINY, ...) with some values changed."""
    out = dict(base)
    out.update(changes)
    return out


def header_bytes(specs, metadata=None, order=None):
    """The JSON header for specs laid out contiguously in ``order`` (default: sorted names), and the data size."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name in order or sorted(specs):
        dtype, shape = specs[name]
        numel = 1
        for dim in shape:
            numel *= dim
        size = numel * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the library pads to 8 bytes too
    return raw, offset


def write_raw(path, header, data_size, length=None):
    """Write an 8-byte length (``length`` overrides it), ``header`` bytes, then a sparse data region."""
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header) if length is None else length))
        handle.write(header)
        handle.truncate(8 + len(header) + data_size)
    return str(path)


def write_sparse(path, specs, metadata=None):
    """A valid safetensors file for ``specs`` whose data region is a hole (zeros), any size."""
    raw, size = header_bytes(specs, metadata)
    return write_raw(path, raw, size)


def write_numpy(path, specs, metadata=None):
    """The same through the real library: safetensors.numpy.save_file of zero arrays (F16 for BF16)."""
    np_types = {"BF16": np.float16, "F16": np.float16, "F32": np.float32}
    tensors = dict((name, np.zeros(shape, dtype=np_types[dtype])) for name, (dtype, shape) in specs.items())
    save_file(tensors, str(path), metadata=metadata)
    return str(path)


def write_tiny_drafter(path, **overrides):
    """A small drafter with real names, written by the safetensors library."""
    dims = dict(TINY)
    dims.update(overrides)
    return write_numpy(path, drafter_specs(dtype="F16", **dims), metadata={"format": "pt"})


def write_seed_drafter(path):
    """ct129's Qwen3.6-27B-DFlash drafter shapes, BF16, sparse (about 3 GB apparent size)."""
    return write_sparse(path, drafter_specs(**SEED), metadata={"format": "pt"})


def qwen3_target_config(num_layers=36, hidden=4096, vocab=151936, rope_theta=1000000, max_pos=40960):
    """A plain Qwen3 target config.json dict (Qwen3-8B's values by default)."""
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": hidden,
        "num_hidden_layers": num_layers,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 12288,
        "vocab_size": vocab,
        "rms_norm_eps": 1e-06,
        "rope_theta": rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": max_pos,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def qwen36_target_config(num_layers=64, hidden=5120, vocab=248320):
    """A Qwen3.6-27B-shaped multimodal target: text values under text_config, its own 24 x 256 heads."""
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen3_5_text",
            "hidden_size": hidden,
            "num_hidden_layers": num_layers,
            "num_attention_heads": 24,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "intermediate_size": 17408,
            "vocab_size": vocab,
            "rms_norm_eps": 1e-06,
            "max_position_embeddings": 262144,
            "mtp_num_hidden_layers": 1,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000000,
                "partial_rotary_factor": 0.25,
                "mrope_interleaved": True,
                "mrope_section": [11, 11, 10],
            },
        },
        "vision_config": {"hidden_size": 1152, "depth": 27},
    }


def write_target(directory, config):
    """A target model directory holding only config.json."""
    os.makedirs(str(directory), exist_ok=True)
    with open(os.path.join(str(directory), "config.json"), "w") as handle:
        json.dump(config, handle, indent=2)
    return str(directory)
