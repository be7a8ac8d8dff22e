# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Published drafters: what their tensors cannot tell (block size, mask token, layer types, ids), matched by the
shapes their tensors show. A profile's "format" is a drafter format's name (_drafter/format_*.py FORMAT).

* DRAFTER_PROFILES, find_profile(name) / match_profiles(shapes) / select_profile(profile, shapes)
* require_given(values, profile, source): what neither the tensors nor a profile told, refused by name
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

PROFILE_AUTO = "auto"
PROFILE_NONE = "none"

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
        "signature": {"format": "dflash", "hidden_size": 5120, "num_hidden_layers": 5, "num_captured_layers": 5,
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
        "signature": {"format": "dflash", "hidden_size": 4096, "num_hidden_layers": 5, "num_captured_layers": 5,
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
        "signature": {"format": "dflash", "hidden_size": 2560, "num_captured_layers": 5, "num_target_layers": 36},
        "values": {"block_size": 16, "mask_token_id": 151669, "layer_types": "all_full",
                   "max_position_embeddings": 40960, "target_layer_ids": [1, 9, 17, 25, 33]},
    },
    {
        # Its shapes are those of qwen3.6-27b-dflash plus the DFlash2 modules: the format keeps them apart.
        "name": "qwen3.8-27b-dflash2",
        "description": "z-lab/Qwen3.8-27B-DFlash2 for Qwen/Qwen3.8-27B",
        "source": ("published config (third-party copies: the config.json quoted verbatim by public DFlash2 loaders' "
                   "tests; the ids reported in z-lab/dflash issue 170), inference.gpu_host docs/dflash.md: "
                   "Qwen3.8-27B-DFlash2, a DFlash2DraftModel for vLLM >= %s (64-layer target, H 5120, "
                   "5 layers all sliding, window 2048, 32 heads x 128, 8 KV heads, FFN 17408, trained on ids "
                   "[5, 19, 33, 47, 61], not the formula's [1, 16, 31, 46, 61], "
                   "block 8, mask 248070, conv_kernel_size 2, conv_group_size 16, selector_rank 256, "
                   "selector_top_k 16, is_causal false, rope_theta 10000000, max_position_embeddings 262144)"
                   % vllm_versions.first_release(lambda row: row["dflash2"])),
        "signature": {"format": "dflash2", "hidden_size": 5120, "num_hidden_layers": 5, "num_captured_layers": 5,
                      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                      "intermediate_size": 17408, "num_target_layers": 64, "conv_kernel_size": 2,
                      "conv_group_size": 16, "selector_rank": 256},
        "values": {"block_size": 8, "mask_token_id": 248070, "layer_types": ["sliding_attention"] * 5,
                   "sliding_window": 2048, "max_position_embeddings": 262144, "rms_norm_eps": 1e-06,
                   "rope_parameters": {"rope_type": "default", "rope_theta": 10000000},
                   "target_layer_ids": [5, 19, 33, 47, 61], "selector_top_k": 16, "is_causal": False},
    },
)


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


def select_profile(profile, shapes):
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


def require_given(values, profile, source):
    """DflashConfigError naming the (name, value) pairs that are None: what neither the tensors nor a profile told."""
    missing = [name for name, value in values if value is None]
    if missing:
        raise DflashConfigError(
            "%s cannot be read from the tensors and no drafter profile gives %s (profile: %s): set %s from the "
            "drafter's %s. Known profiles: %s"
            % (", ".join(missing), "them" if len(missing) > 1 else "it", profile["name"] if profile else "none matched",
               ", ".join(missing), source, ", ".join(p["name"] for p in DRAFTER_PROFILES)))
