# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The python_env role's decision, through module_utils/_venv/state.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: python_env_plan
short_description: Whether a python_env run has work left, from the venv's state
version_added: 0.1.0
description:
  - Compares the result of M(inference.gpu_host.python_env_host_state) with what the python_env role's variables ask
    for. C(settled) is true only when every step of the role would change nothing - uv at its pinned version, the
    wanted generation built, complete, serving (no adopt, build, switch, prune or refused lock), its lock files,
    the venv exactly its lock, flash-attn 2 alone and whole where the role installs it, vLLM readable, and the
    record as the role writes it. Otherwise C(reasons) names what is left, and the role's steps run as on a first run.
options:
  _input:
    description: The registered result of M(inference.gpu_host.python_env_host_state).
    type: dict
    required: true
  wanted:
    description:
      - C(installer) (C(uv) or C(pip)), C(uv_version), C(flash_attn) (bool), C(flash_attn_version), and C(record)
        (the fields the role records, without C(generation), C(generation_dir) and C(previous_generation_dir)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide whether this run has work left
  ansible.builtin.set_fact:
    plan: "{{ state | inference.gpu_host.python_env_plan(wanted) }}"
"""

RETURN = r"""
_value:
  description: C(settled) (bool) and C(reasons) (what is left to do, empty when settled).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def python_env_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import PythonEnvStateError, decide
    try:
        return decide(state, wanted)
    except PythonEnvStateError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"python_env_plan": python_env_plan}
