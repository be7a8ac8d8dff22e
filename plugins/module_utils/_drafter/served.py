# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What the vLLM that will read the config does with a drafter, as the versions table (_vllm/versions.py) says: whether
it serves a format, which config keys it reads, and the result's "vllm" with the known problems for this drafter.
No version is written here: each comes from the table's rows.

* serves(vllm_version, column) -> bool: a True column of the table's row (mask_embedding, ricursive_dflash2, ...)
* check_served(fmt, vllm_version, distribution, warnings, needs, problem, runner_warning): a format's refusal
* reading_keys(vllm_version) / first_reading(key) / check_read(key, what, reads, vllm_version, warnings)
* vllm_result(info, vllm_version, vllm_source, vllm_distribution, layer_types, shift, warnings)
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as vllm_known_problems
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

# Known vLLM problems (module_utils/_vllm/known_problems.py) the drafter module repeats as warnings.
DRAFTER_PROBLEM_IDS = ("dflash-sliding-window-ignored", "dflash-mixed-sliding-not-implemented",
                       "dflash-mixed-sliding-needs-v2-runner", "vllm-cpu-dflash-warmup")


def serves(vllm_version, column):
    """Whether the table's row for ``vllm_version`` has ``column`` true (DflashConfigError: an unreadable version)."""
    try:
        return bool(vllm_versions.behaviour(vllm_version)[column])
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))


def first_serving(column):
    """The first release whose row has ``column`` true ("X.Y.Z"), for the messages."""
    return vllm_versions.first_release(lambda row: row[column])


def check_served(fmt, vllm_version, distribution, warnings, needs, problem, runner_warning):
    """Refuse a format this vLLM cannot serve; say what an unknown vLLM must be. ``needs(fmt)``, ``problem(fmt,
    vllm_version, distribution)`` and ``runner_warning(fmt, vllm_version)``: the format file's rules."""
    if vllm_version is None:
        warnings.append("vLLM version not given (vllm_version or venv): %s" % needs(fmt))
        return
    try:
        refusal = problem(fmt, vllm_version, distribution)
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))
    if refusal:
        raise DflashConfigError(refusal)
    warning = runner_warning(fmt, vllm_version)
    if warning:
        warnings.append(warning)


def reading_keys(vllm_version):
    """The drafter config keys (besides ids, mask token and layer_types) vLLM ``vllm_version`` reads; None: unknown."""
    if vllm_version is None:
        return None
    try:
        return set(vllm_versions.behaviour(vllm_version)["dflash_config_keys"] or ())
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))


def first_reading(key):
    """The first checked vLLM release whose qwen3_dflash.py reads ``key`` (the versions table)."""
    return vllm_versions.first_release(lambda row: key in (row["dflash_config_keys"] or ()))


def check_read(key, what, reads, vllm_version, warnings):
    """Refuse to write ``key`` for a vLLM that ignores it; with no version given, say which vLLM reads it."""
    first = first_reading(key)
    if reads is None:
        warnings.append("%s is written as %s, which vLLM >= %s reads; the vLLM version was not given (vllm_version "
                        "or venv), so nothing checked that the installed one does" % (what, key, first))
    elif key not in reads:
        raise DflashConfigError(
            "%s: vLLM %s does not read %s (first read by vLLM %s, qwen3_dflash.py), so it would be ignored and the "
            "drafter would run other than trained; upgrade vLLM or leave the option out" % (what, vllm_version, key,
                                                                                            first))


def vllm_result(info, vllm_version, vllm_source, vllm_distribution, layer_types, shift, warnings):
    """The result's "vllm": behaviour() plus where the version came from and its known problems for this drafter."""
    if info is None:
        return None
    try:
        problems = vllm_known_problems.known_problems(vllm_version, vllm_distribution, layer_types)
    except vllm_versions.VllmVersionError as exc:
        raise DflashConfigError(str(exc))
    # The ids problem is the policy's to report; these others concern this drafter on this vLLM.
    warnings.extend(p["message"] for p in problems if p["id"] in DRAFTER_PROBLEM_IDS)
    return dict(info, source=vllm_source or "vllm_version", distribution=vllm_distribution,
                written_ids_shift=shift, known_problems=problems)
