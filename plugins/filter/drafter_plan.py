# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter role's decisions, through module_utils/_drafter/state.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drafter_plan
short_description: The work a drafter role run has left, from the host's state
version_added: 0.2.0
description:
  - Compares the result of M(inference.gpu_host.drafter_host_state) with what the drafter role's variables ask
    for, and names only the work left, so that a run with nothing to change skips every task that would change
    nothing.
  - The weights are placed again for the reasons of P(inference.gpu_host.drafter_place_reason#filter); the record
    of the placement and the local facts are written only when their bytes, owner, group or mode differ;
    C(config.json) only when the probe found that M(inference.gpu_host.dflash_drafter_config) would change it,
    could not tell, or new weights are placed.
  - A C(controller) source is read (a stat, never its bytes) here, on the controller.
  - Where it cannot tell (a symbolic mode), it leaves the task to run and the task decides.
options:
  _input:
    description: The registered result of M(inference.gpu_host.drafter_host_state).
    type: dict
    required: true
  wanted:
    description:
      - C(source_type), C(source_path), C(source_url), C(hf_repo_id), C(hf_revision), C(hf_filename), C(sha256),
        C(dest_dir), C(owner), C(group), C(layer_id_policy) (the role's variables without C(drafter_)),
        C(check_mode), C(config_json) and C(facts_file) (the paths a rollback puts back).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide what this run changes
  ansible.builtin.set_fact:
    plan: "{{ state | inference.gpu_host.drafter_plan(wanted) }}"
"""

RETURN = r"""
_value:
  description:
    - C(wanted) (the source as the record keeps it), C(record) (the last placement's), C(place_reason),
      C(dir_changed), C(weights_there), C(placement_record) and C(placement_record_changed), C(config_decided),
      C(config_probe), C(config_write), C(config_result), C(rollback_files), C(facts) and C(facts_write),
      C(noop) (nothing to do), and C(stale_rollback_copies) (C(.prev) copies an interrupted run left, to remove).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def drafter_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.state import DrafterStateError, plan, stat_path
    if not isinstance(wanted, dict):
        raise AnsibleFilterError("drafter_plan: wanted must be a mapping, got %.80r" % (wanted,))
    try:
        source_stat = None
        if wanted.get("source_type") == "controller":
            # As the delegated stat did (follow: false), without forking a module on the controller.
            source_stat = stat_path(wanted.get("source_path") or "")
        return plan(state, wanted, source_stat)
    except DrafterStateError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"drafter_plan": drafter_plan}
