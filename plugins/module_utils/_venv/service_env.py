# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What a new vLLM refuses in the service's environment, asked before python_env builds or switches a generation.

vllm_service checks its environment against the installed vLLM in its own preflight (module_utils/_vllm/unit.py
check_unit_values with vllm_version), which runs after python_env has switched the venv. python_env (and the upgrade
plan) ask the same function about the lock's vLLM first, so a lock the service cannot start with (a vLLM without the
V1 model runner, with VLLM_USE_V2_MODEL_RUNNER other than 1) is refused before anything changes. Only what the
version adds is returned: the form of each entry stays vllm_service's to report, where that input enters.

Public API (stdlib only):
* refusals(environments, vllm_version) -> [message, ...]
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit

# vllm_service's variables whose entries reach the server's environment (a secret's value is never shown).
VARIABLES = ("vllm_service_environment", "vllm_service_secret_environment")


class ServiceEnvError(ValueError):
    """The environments argument is not a mapping of those variables."""


def refusals(environments, vllm_version):
    """The messages of check_unit_values that vLLM ``vllm_version`` adds for ``environments``.

    ``environments``: {variable: {NAME: value}} for VARIABLES (a variable that is missing or None is not set).
    Each message names the variable, the entry and vLLM's reason; [] when the version refuses nothing there.
    """
    if not isinstance(environments, dict):
        raise ServiceEnvError("the service environment: expected a mapping of %s, got %s"
                              % (", ".join(VARIABLES), type(environments).__name__))
    unknown = sorted(str(k) for k in environments if k not in VARIABLES)
    if unknown:
        raise ServiceEnvError("the service environment: unknown variables %s (expected some of %s)"
                              % (", ".join(unknown), ", ".join(VARIABLES)))
    given = dict((k, v) for k, v in environments.items() if v is not None)
    form = vllm_unit.check_unit_values(given)
    return [m for m in vllm_unit.check_unit_values(given, vllm_version=vllm_version) if m not in form]
