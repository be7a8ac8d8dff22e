# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The host subsystem's filters: the base role's plan (module_utils/_host/base_state.py). Plumbing only.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def base_plan(state, wanted):
    """The work a base role run has left, from base_host_state's result and the role's wanted state."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._host.base_state import BaseStateError, role_plan
    try:
        return role_plan(state, wanted)
    except BaseStateError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"base_plan": base_plan}
