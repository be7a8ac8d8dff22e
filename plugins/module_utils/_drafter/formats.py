# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter formats, one file each (format_dflash.py, format_dflash2.py, format_speculators.py), and what the
derivation and the drift check ask of any of them: which vLLM serves it, and whether a written config.json still fits
the installed vLLM. Adding a format: its file, one line in _FILES, and its column in the versions table.

* FORMATS: "dflash", "dflash2", "speculators-dflash", "speculators-dflash2"
* format_needs(fmt) / format_problem(fmt, vllm_version, distribution): which vLLM serves a format; None, or why
  that vLLM cannot (naming the version that can)
* check_served(fmt, vllm_version, distribution, warnings): refuse a format this vLLM cannot serve
* stale_ids_message(config, vllm_version): the drift check's message for a config written for another vLLM
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import (
    format_dflash, format_dflash2, format_speculators, served)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import (
    INFO_KEY, recorded_ids_state)

_FILES = (format_dflash, format_dflash2, format_speculators)
FORMATS = tuple(fmt for rules in _FILES for fmt in rules.FORMATS)


def _rules(fmt):
    """The format file of ``fmt``; a name none of them has (a record written by hand) is asked as a speculators type,
    which no vLLM reads."""
    for rules in _FILES:
        if fmt in rules.FORMATS:
            return rules
    return format_speculators


def format_needs(fmt):
    """One sentence: which vLLM serves drafters of format ``fmt``."""
    return _rules(fmt).needs(fmt)


def format_problem(fmt, vllm_version, distribution="vllm"):
    """None when vLLM ``vllm_version`` of ``distribution`` serves drafters of format ``fmt``, else why not.

    DFlash v1 is ids.apply_layer_id_policy's (a vLLM without DFlash has none at all). Raises
    vllm_versions.VllmVersionError for a version that cannot be parsed.
    """
    return _rules(fmt).problem(fmt, vllm_version, distribution)


def check_served(fmt, vllm_version, distribution, warnings):
    """Refuse a format this vLLM cannot serve; say what an unknown vLLM must be (DFlash v1: the ids policy's)."""
    rules = _rules(fmt)
    if rules is format_dflash:
        return
    served.check_served(fmt, vllm_version, distribution, warnings, rules.needs, rules.problem, rules.runner_warning)


def stale_ids_message(config, vllm_version):
    """For the drift check: a message when ``config`` was written for another vLLM than ``vllm_version``, else None."""
    if not isinstance(config, dict):
        raise DflashConfigError("dflash_stale_ids: expected the parsed config.json (a dict), got %s"
                                % type(config).__name__)
    record = recorded_ids_state(config)
    if record is None:
        return "config.json has no %s record: not written by dflash_drafter_config, its ids are unverified" % INFO_KEY
    written_for = record.get("written_for_vllm")
    if written_for == vllm_version:
        return None
    fmt = record.get("format", format_dflash.FORMAT)
    if fmt != format_dflash.FORMAT:
        # No ids shift to get wrong (DFlash2 comes after the +1 fix, a speculators config is vLLM's own conversion):
        # only whether that vLLM serves the format.
        try:
            problem = format_problem(fmt, vllm_version)
        except vllm_versions.VllmVersionError as exc:
            return str(exc)
        return "config.json (format %s) was written for vLLM %s, vLLM %s is installed%s" % (
            fmt, written_for, vllm_version, "; " + problem if problem else "")
    try:
        now = vllm_versions.ids_shift(vllm_version)
    except vllm_versions.VllmVersionError as exc:
        return str(exc)
    was = record.get("ids_shift", 0)
    if record.get("layer_id_policy") == "compensate" and now != was:
        return ("config.json's target_layer_ids were written for vLLM %s (DFlash ids + %d), but vLLM %s is installed "
                "and needs + %d: the drafter captures the wrong layers until the config is rewritten"
                % (written_for, was, vllm_version, now))
    return "config.json was written for vLLM %s, vLLM %s is installed" % (written_for, vllm_version)


def stale_ids(config, vllm_version):
    """stale_ids_message of the installed vLLM's version (any spelling), '' where there is nothing to say (the
    dflash_stale_ids filter)."""
    return stale_ids_message(config, str(vllm_version)) or ""
