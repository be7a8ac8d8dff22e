# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The venv subsystem's filters (python_env role): plumbing to module_utils/_venv and _gpu, nothing else.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _python_env_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import PythonEnvStateError, decide
    try:
        return decide(state, wanted)
    except PythonEnvStateError as exc:
        raise AnsibleFilterError(str(exc))


def _flash_attn_gate(gpus, flash_attn_major):
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import GpuFactsError, flash_attn_gate
    try:
        return flash_attn_gate(gpus or [], flash_attn_major)
    except GpuFactsError as exc:
        raise AnsibleFilterError(str(exc))


def _wheel_tags(filename):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.wheels import WheelNameError, wheel_tags
    try:
        return wheel_tags(filename)
    except WheelNameError as exc:
        raise AnsibleFilterError(str(exc))


def _flash_attn_choice(enabled, vllm_version, distribution="vllm"):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_choice import (
        FlashAttnChoiceError, choose)
    try:
        return choose(enabled, vllm_version, distribution)
    except FlashAttnChoiceError as exc:
        raise AnsibleFilterError(str(exc))


def _flash_attn_cuda_archs(gpus):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_choice import (
        FlashAttnChoiceError, cuda_archs)
    try:
        return cuda_archs(gpus)
    except FlashAttnChoiceError as exc:
        raise AnsibleFilterError(str(exc))


def _python_env_input_problems(inputs):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.inputs import (
        PythonEnvInputsError, input_problems)
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.service_env import ServiceEnvError
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import VllmUnitError
    try:
        return input_problems(inputs)
    except (PythonEnvInputsError, ServiceEnvError, VllmUnitError) as exc:
        raise AnsibleFilterError("python_env_input_problems: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"python_env_plan": _python_env_plan, "flash_attn_gate": _flash_attn_gate, "wheel_tags": _wheel_tags,
                "flash_attn_choice": _flash_attn_choice, "flash_attn_cuda_archs": _flash_attn_cuda_archs,
                "python_env_input_problems": _python_env_input_problems}
