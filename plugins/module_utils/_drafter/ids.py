# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The DFlash target layer ids and their policy: the formula, the checks of given ids, and how to write them for the
vLLM that reads them (the versions table's ids_shift). The +1 between ids and what vLLM captures is
_vllm/drafter_config.py's.

* build_target_layer_ids(num_target_layers, k) -> [int]; validate_target_layer_ids(ids, num_target_layers, k)
* apply_layer_id_policy(dflash_ids, num_target_layers, vllm_version, policy) -> dict
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import (
    DflashConfigError, is_int, require_int)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

LAYER_ID_POLICIES = ("report", "compensate", "fail")
IDS_POLICIES = ("warn", "require_explicit")


def build_target_layer_ids(num_target_layers, k):
    """DFlash's default captured target layers (z-lab/dflash ``build_target_layer_ids``).

    k == 1 -> [num_target_layers // 2]; else k ids spread from 1 to
    num_target_layers - 3 with Python's round (half to even):
    build_target_layer_ids(64, 5) == [1, 16, 31, 46, 61],
    build_target_layer_ids(94, 5) == [1, 24, 46, 68, 91].
    """
    require_int("num_target_layers", num_target_layers, 1)
    require_int("the number of captured layers k", k, 1)
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
    if not isinstance(ids, (list, tuple)) or not all(is_int(i) for i in ids):
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


def apply_layer_id_policy(dflash_ids, num_target_layers, vllm_version, policy="report"):
    """The ids to write for the vLLM that will read them, per ``policy``.

    policy: "report" writes the DFlash ids and warns when that vLLM captures
    one layer early (the versions table's ids_shift 1); "compensate" writes every id + 1 for
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
                        "(%s - %s would capture every layer one early)"
                        % ((vllm_versions.FIX_VERSION,) + vllm_versions.OFF_BY_ONE_SERIES)}
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
