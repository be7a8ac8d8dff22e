# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The python_env role's inputs that their argument spec cannot tell, checked in one place before the host is read.

The argument spec checks each variable's type; what is left is how values relate (the state directory inside the
venv, the lock that pins the requested vLLM), the versions table's word on the version, and what that vLLM refuses in
vllm_service's environment (service_env.refusals). One preflight task asks input_problems() and fails with what it
returns: one task, not seven, on every run (a no-change converge pays a forked worker per task).

Public API (stdlib only):
* input_problems(inputs) -> [message, ...]
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._venv import lock as venv_lock
from ansible_collections.inference.gpu_host.plugins.module_utils._venv import service_env
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions

# The keys input_problems() reads, each the role variable of the same name without its python_env_ prefix (and
# service_environments: vllm_service's environments, service_env.VARIABLES).
KEYS = ("venv_dir", "state_dir", "keep_generations", "generation_free_gib", "vllm_version", "vllm_package",
        "lock_file", "allow_unchecked_vllm", "service_environments")

_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_COUNT = re.compile(r"[0-9]+\Z")
_GIB = re.compile(r"[0-9]+(\.[0-9]+)?\Z")
_LOCKED_VLLM = re.compile(r"(?m)^(vllm(?:-cpu)?==\S+)")


class PythonEnvInputsError(ValueError):
    """The inputs argument is not the mapping of KEYS the role passes."""


def _text(value):
    # Jinja's `| string` of the value: what the role's messages always showed.
    return "" if value is None else str(value)


def _generation_problem(venv_dir, state_dir, keep, free_gib):
    inside = os.path.isabs(state_dir) and state_dir.startswith(venv_dir.rstrip("/") + "/")
    counted = bool(_COUNT.match(_text(keep))) and int(_text(keep)) >= 1
    if inside and counted and _GIB.match(_text(free_gib)):
        return None
    return ("python_env: expected python_env_state_dir inside python_env_venv_dir (each generation keeps its own "
            "lock; got %s), python_env_keep_generations an integer >= 1 (got %s), python_env_generation_free_gib a "
            "number of GiB >= 0 (got %s)." % (state_dir, _text(keep), _text(free_gib)))


def _lock_problem(lock_file, pin):
    if not lock_file or not os.path.isfile(lock_file):
        return ("python_env_lock_file must name a lock file on the controller (got '%s', which %s); make one with "
                "scripts/lock-vllm.sh." % (lock_file, "is empty" if not lock_file else "does not exist"))
    try:
        text = venv_lock.read_lock_text(lock_file)
    except venv_lock.VenvLockError as exc:
        return "python_env_lock_file: %s" % exc
    if re.search(r"(?m)^" + re.escape(pin) + r"(\s|$)", text):
        return None
    return ("%s does not pin %s (it pins %s). Regenerate it: scripts/lock-vllm.sh %s '%s'"
            % (lock_file, pin, ", ".join(_LOCKED_VLLM.findall(text)) or "no vllm", os.path.basename(lock_file), pin))


def input_problems(inputs):
    """What is wrong with the python_env role's ``inputs`` (a mapping of KEYS), as the messages to fail with.

    The checks run in the order a reader fixes them; one whose inputs an earlier check refused is not asked (the lock
    of a version that is no version, say). [] when nothing is wrong. Each message names the variable and what was
    expected; a secret environment's values are never shown.
    """
    if not isinstance(inputs, dict) or sorted(inputs) != sorted(KEYS):
        raise PythonEnvInputsError("python_env_input_problems: expected a mapping of %s, got %s"
                                   % (", ".join(KEYS), sorted(inputs) if isinstance(inputs, dict)
                                      else type(inputs).__name__))
    venv_dir, version = _text(inputs["venv_dir"]), _text(inputs["vllm_version"])
    if not os.path.isabs(venv_dir):
        return ["python_env_venv_dir must be an absolute path (got '%s')" % venv_dir]
    problem = _generation_problem(venv_dir, _text(inputs["state_dir"]), inputs["keep_generations"],
                                  inputs["generation_free_gib"])
    if problem:
        return [problem]
    if not _VERSION.match(version):
        return ["python_env_vllm_version must be a version like 0.20.1 (got '%s')" % version]
    problem = _lock_problem(_text(inputs["lock_file"]), "%s==%s" % (_text(inputs["vllm_package"]), version))
    if problem:
        return [problem]
    behaviour = versions.behaviour(version)
    if not behaviour["known"] and not inputs["allow_unchecked_vllm"]:
        return ["python_env_vllm_version=%s is not a version the collection has checked (%s). Pin a checked version, "
                "or set python_env_allow_unchecked_vllm=true to accept it as described." % (version, behaviour["note"])]
    refused = service_env.refusals(inputs["service_environments"], version)
    if refused:
        return ["python_env_vllm_version=%s: %s. Nothing was changed: fix the inventory before switching the venv to "
                "this vLLM." % (version, "; ".join(refused))]
    return []


def checked_input_problems(inputs):
    """input_problems for the python_env_input_problems filter: what the environment checks refuse as a
    PythonEnvInputsError too."""
    try:
        return input_problems(inputs)
    except (service_env.ServiceEnvError, vllm_unit.VllmUnitError) as exc:
        raise PythonEnvInputsError(str(exc))
