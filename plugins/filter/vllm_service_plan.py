# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_service role's decisions, through module_utils/_vllm/service_state.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: vllm_service_plan
short_description: The work a vllm_service run has left, from the host's state
version_added: 0.1.0
description:
  - Compares the result of M(inference.gpu_host.vllm_service_host_state) with the files the vllm_service role
    renders on the controller, and names only the work left, so that a run with nothing to change skips every task
    that would change nothing (the readiness probe still runs).
  - A file is changed when its SHA-256, owner, group or mode differs from what the role writes; where it cannot
    tell (a symbolic mode), it says changed and the task decides.
  - The result names no content; the environment file's secrets never leave the controller.
options:
  _input:
    description: The registered result of M(inference.gpu_host.vllm_service_host_state).
    type: dict
    required: true
  wanted:
    description:
      - Any of C(unit), C(env), C(record) (each C(content), C(owner), C(group), C(mode)), C(env_dir) (C(owner),
        C(group), C(mode)) and C(enabled) (the role's C(vllm_service_enabled)); only the keys given are decided.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide what this run changes
  ansible.builtin.set_fact:
    plan: "{{ state | inference.gpu_host.vllm_service_plan({'unit': {'content': unit_text, 'mode': '0644'}}) }}"
"""

RETURN = r"""
_value:
  description:
    - "C(<name>_changed) for each file or directory given (C(unit_changed), C(env_changed), C(record_changed),
      C(env_dir_changed)); C(pending) (the unit or its environment changes); C(start_needed) (with C(enabled),
      whether systemd_service could change anything); C(port_ok) and C(listener) (the port is free or held by the
      unit's control group; who holds it); C(rollback_copies) (the paths whose C(.prev) copy exists)."
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def vllm_service_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.service_state import VllmServiceStateError, plan
    try:
        return plan(state, wanted)
    except VllmServiceStateError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"vllm_service_plan": vllm_service_plan}
