# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The target model's config.json as the drafter's derivation reads it: its text config, hidden size, layer count,
vocabulary and rope, and the one precedence of a value (option > profile > target).

* read_target_config(path) -> dict (a target dir with config.json, or the file); text_config(target_config) -> dict
* target_key / target_hidden_size / target_layer_count / target_vocab_size: (value, where it was read)
* resolve_rope(overrides, profile, target_config) -> (rope dict, where)
* pick(key, overrides, profile, target_config=None) -> (value, where)
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError, require_int
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import read_json_file

# Rope keys that describe the target's own attention (multimodal positions,
# partial rotary over its head_dim), not the drafter's plain Qwen3 attention;
# published DFlash drafters for Qwen3.5/3.6 carry only rope_type + rope_theta.
TARGET_ONLY_ROPE_KEYS = ("mrope_section", "mrope_interleaved", "partial_rotary_factor")


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


def target_key(target_config, key):
    """(value, 'config.json <where>') for key, text_config first; (None, None) when absent."""
    nested = target_config.get("text_config")
    if isinstance(nested, dict) and nested.get(key) is not None:
        return nested[key], "target config.json text_config.%s" % key
    if target_config.get(key) is not None:
        return target_config[key], "target config.json %s" % key
    return None, None


def target_hidden_size(target_config):
    hidden, where = target_key(target_config, "hidden_size")
    if hidden is None:
        raise DflashConfigError("target config.json has no hidden_size (nor text_config.hidden_size)")
    require_int(where, hidden, 1)
    return hidden, where


def target_layer_count(target_config, overrides):
    if "num_target_layers" in overrides:
        layers, where = overrides["num_target_layers"], "option num_target_layers"
    else:
        layers, where = target_key(target_config, "num_hidden_layers")
        if layers is None:
            raise DflashConfigError("target config.json has no num_hidden_layers (nor text_config.num_hidden_layers); "
                                    "set num_target_layers")
    require_int("num_target_layers (%s)" % where, layers, 1)
    return layers, where


def target_vocab_size(target_config):
    vocab, where = target_key(target_config, "vocab_size")
    if vocab is None:
        raise DflashConfigError("target config.json has no vocab_size (nor text_config.vocab_size): the drafter "
                                "uses the target's embedding rows")
    require_int(where, vocab, 1)
    return vocab, where


def pick(key, overrides, profile, target_config=None):
    """(value, source) with precedence option > profile > target config; (None, None) when nowhere."""
    if key in overrides:
        return overrides[key], "option %s" % key
    if profile is not None and profile["values"].get(key) is not None:
        return profile["values"][key], "profile %s" % profile["name"]
    if target_config is not None:
        return target_key(target_config, key)
    return None, None


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
    params, where = target_key(target_config, "rope_parameters")
    if isinstance(params, dict) and ("rope_theta" in params or "rope_type" in params or "type" in params):
        rope, dropped = _normalize_rope(params, where)
    else:
        scaling, where = target_key(target_config, "rope_scaling")
        rope, dropped = _normalize_rope(scaling or {}, where or "target rope_scaling")
        theta, theta_where = target_key(target_config, "rope_theta")
        if theta is not None:
            rope["rope_theta"] = theta
            where = theta_where if where is None else "%s + %s" % (theta_where, where)
    if "rope_theta" not in rope:
        return None, None
    if dropped:
        where += " (dropped %s: they describe the target's attention, not the drafter's)" % ", ".join(dropped)
    return rope, where


def resolve_rope(overrides, profile, target_config):
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
