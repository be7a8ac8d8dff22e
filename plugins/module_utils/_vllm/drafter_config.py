# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""A DFlash drafter's config.json as vLLM reads it, where both sides need it: the drafter, which writes it, and the
service, which checks what vLLM made of it (the captured layers). Stdlib only.

* LAYER_TYPES: the drafter layer types vLLM's qwen3_dflash.py knows
* capture_points(ids) / dflash_ids(points): the one home of the +1 between the DFlash ids a drafter was trained on
  and the points vLLM captures them at ("after k layers", which its log line and speculators'
  aux_hidden_state_layer_ids name); logged_layers(written_ids, version): what a vLLM version logs for ids written
* INFO_KEY, recorded_ids_state(config), trained_ids(config): our record in a written config.json, and the DFlash ids
  it (or a speculators config) says the drafter was trained on
* read_json_file(path) -> (raw bytes, parsed JSON) of a model's config.json, bounded (_common/files.load_json)
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import JsonFileError, load_json
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions

LAYER_TYPES = ("full_attention", "sliding_attention")
INFO_KEY = "inference_gpu_host"  # our own record in config.json; vLLM and transformers ignore it
# vLLM captures the output of the target layer a DFlash id i names "after i + 1 layers" (every runner and version
# with DFlash; the vLLMs of the versions table's ids_shift 1 omit the +1 when they read the ids, which that column
# covers).
CAPTURE_OFFSET = 1
MAX_JSON_FILE_SIZE = 16 * 1024 * 1024  # a model config.json is a few KB
MAX_JSON_FILE_DEPTH = 32  # multimodal configs nest a few levels; nothing real needs more
# How a config.json that load_json refuses is named (its reason -> the sentence, with the refusal's detail).
_JSON_REFUSALS = {"not_regular": "not a regular file%.0s", "too_large": "larger than %d bytes",
                  "not_utf8": "not UTF-8 text: byte 0x%02x at offset %d", "too_deep": "its JSON nests deeper than %d levels",
                  "not_json": "not valid JSON: %s"}


def capture_points(ids):
    """The capture points of DFlash ``ids``: what vLLM logs as captured, and speculators' aux_hidden_state_layer_ids."""
    return [i + CAPTURE_OFFSET for i in ids]


def dflash_ids(points):
    """The DFlash ids whose capture points are ``points`` (the inverse of capture_points)."""
    return [i - CAPTURE_OFFSET for i in points]


def logged_layers(written_ids, version):
    """The layers vLLM ``version`` logs as captured (e.g. '(2, 6)') for ``written_ids`` in config.json.

    Their capture points, less what the versions table's ids_shift says that vLLM omits (both runners). Raises
    VllmVersionError for ids that are not non-negative integers, or a vLLM without DFlash.
    """
    if not isinstance(written_ids, (list, tuple)) or not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in written_ids):
        shown = repr(written_ids)
        raise versions.VllmVersionError("target_layer_ids must be a list of non-negative integers, got %s"
                                        % (shown if len(shown) <= 200 else shown[:200] + "..."))
    shift = versions.ids_shift(version)
    return [point - shift for point in capture_points(written_ids)]


def recorded_ids_state(config):
    """Our record in a written config.json (INFO_KEY), or None."""
    record = config.get(INFO_KEY) if isinstance(config, dict) else None
    return record if isinstance(record, dict) else None


def trained_ids(config):
    """The DFlash ids the drafter was trained on, from our record (or a speculators config), else None."""
    record = recorded_ids_state(config)
    ids = record.get("dflash_target_layer_ids") if record else None
    if ids is None and isinstance(config, dict) and isinstance(config.get("aux_hidden_state_layer_ids"), list):
        ids = dflash_ids(i for i in config["aux_hidden_state_layer_ids"] if isinstance(i, int))
    if isinstance(ids, list) and ids and all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return ids
    return None


def read_json_file(path):
    """(raw bytes, parsed JSON) of a model's config.json (the target's, the drafter's, a speculators config):
    _common/files.load_json within MAX_JSON_FILE_SIZE bytes and MAX_JSON_FILE_DEPTH levels. Raises ValueError with a
    sentence on what is wrong, IOError/OSError when the file cannot be read.
    """
    try:
        return load_json(path, MAX_JSON_FILE_SIZE, MAX_JSON_FILE_DEPTH, constants=True)
    except JsonFileError as exc:
        bad = exc.detail
        detail = (bad.object[bad.start], bad.start) if exc.reason == "not_utf8" else bad
        raise ValueError(_JSON_REFUSALS[exc.reason] % detail)
