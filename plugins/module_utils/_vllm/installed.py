# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The one description of a vLLM, installed in a venv or only pinned: the versions table's row (versions.py), its
known problems (known_problems.py) and how to launch it. What vllm_version_info returns, the vllm_version_table
filter, and the state reads of python_env, the drafter and vllm_service.

Public API (stdlib only; every failure a versions.VllmVersionError):
* describe_installed(venv, layer_types=None) -> the one description of an installed vLLM
* version_table(version, distribution) / version_info(venv, version, ...): the filter's and the module's answers
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import first_control
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import (
    MAX_VERSION_CHARS, VllmVersionError, behaviour, entry_point, installed_vllm)


def _known_problems(version, distribution, layer_types=None):
    # Imported when a version is described: the state reads that import this file also serve filters, in each task's
    # worker process (BENCHMARKS.md, issue 28), and most of their calls never describe a vLLM.
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems
    return known_problems.known_problems(version, distribution, layer_types)


def describe_installed(venv, layer_types=None):
    """The one description of the vLLM installed in ``venv`` (what vllm_version_info returns).

    {"installed": True, "version", "distribution", "metadata_path", "behaviour", "known_problems",
    "entry_point"}, or {"installed": False, "reason"} when none (or more than one) is installed or its
    version cannot be read. Read from dist-info METADATA, never imported.
    """
    try:
        try:
            found = installed_vllm(venv)
        except ValueError as exc:  # e.g. a METADATA Version with a release number too long for int()
            if isinstance(exc, VllmVersionError):
                raise
            raise VllmVersionError("venv %s: cannot read the installed vLLM's version: %s" % (venv, exc))
        version, dist = found["version"], found["distribution"]
        return {"installed": True, "version": version, "distribution": dist, "metadata_path": found["metadata_path"],
                "behaviour": behaviour(version), "known_problems": _known_problems(version, dist, layer_types),
                "entry_point": entry_point(version, dist, venv)}
    except VllmVersionError as exc:
        return {"installed": False, "reason": str(exc)}


def version_table(version, distribution="vllm"):
    """What the table says of a pinned vLLM, without a venv (the vllm_version_table filter): version,
    distribution, behaviour and known_problems."""
    return {"version": str(version), "distribution": distribution, "behaviour": behaviour(str(version)),
            "known_problems": _known_problems(str(version), distribution)}


def version_info(venv=None, version=None, distribution="vllm", layer_types=None, allow_missing=False):
    """Module vllm_version_info's result: describe_installed(venv) (``version`` then kept as pinned_version),
    or the table's description of ``version`` alone. A VllmVersionError names the option or what is missing."""
    if venv is not None and ("\0" in venv or not os.path.isabs(venv)):
        raise VllmVersionError("venv must be an absolute path, got %r" % (venv,))
    if version is not None and (len(version) > MAX_VERSION_CHARS or first_control(version)):
        raise VllmVersionError("version must be a vLLM version such as '0.20.1' (at most %d printable characters), "
                               "got %r" % (MAX_VERSION_CHARS, version[:MAX_VERSION_CHARS]))
    if venv:
        found = describe_installed(venv, layer_types)
        if not found["installed"] and not allow_missing:
            raise VllmVersionError(found["reason"])
        if found["installed"] and version:
            found["pinned_version"] = version
        return found
    return {"installed": True, "version": version, "distribution": distribution, "behaviour": behaviour(version),
            "known_problems": _known_problems(version, distribution, layer_types),
            "entry_point": entry_point(version, distribution, venv)}
