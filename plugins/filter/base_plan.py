# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The base role's decisions, through module_utils/_host/base_state.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: base_plan
short_description: The work a base role run has left, from the host's state
version_added: 0.1.0
description:
  - Compares the result of M(inference.gpu_host.base_host_state) with what the base role's variables ask for,
    and names only the work left, so that a run with nothing to change skips every task that would change nothing.
  - Packages are decided by their install status (read in the same call, so it costs nothing); extra CA
    certificates by their SHA-256, and C(update-ca-certificates) also runs when the role's record does not say it
    ran for exactly these certificates (a run stopped between the copy and the store update).
  - Where it cannot tell (a symbolic mode), it leaves the task to run and the task decides.
  - Bad C(base_extra_ca_certificates) items fail naming their index and what was expected.
options:
  _input:
    description: The registered result of M(inference.gpu_host.base_host_state).
    type: dict
    required: true
  wanted:
    description:
      - C(packages), C(user), C(group), C(home), C(shell); C(ca_certificates) (the role's
        C(base_extra_ca_certificates)) and C(ca_contents) (the contents of its path items, in order);
        C(directories) (a list of C(path), C(owner), C(group), C(mode)); C(limits) (C(path), C(content),
        C(owner), C(group), C(mode)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide what this run changes
  ansible.builtin.set_fact:
    plan: "{{ state | inference.gpu_host.base_plan(wanted) }}"
"""

RETURN = r"""
_value:
  description:
    - C(install_packages) (missing packages), C(ca_write) (certificates to write, with C(dest_name) and C(content)),
      C(ca_refresh), C(record) (the record to write) and C(record_changed), C(group_changed), C(user_changed),
      C(directories) (those to fix), C(limits_changed), and C(noop) (nothing to do).
  type: dict
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def base_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._host.base_state import BaseStateError, ca_certificates, plan
    if not isinstance(wanted, dict):
        raise AnsibleFilterError("base_plan: wanted must be a mapping, got %.80r" % (wanted,))
    try:
        wanted = dict(wanted)
        wanted["ca_certificates"] = ca_certificates(wanted.get("ca_certificates") or [],
                                                    wanted.pop("ca_contents", []))
        return plan(state, wanted)
    except BaseStateError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"base_plan": base_plan}
