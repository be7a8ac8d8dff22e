# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter subsystem's filters (drafter role, drift check): plumbing to module_utils/_drafter, nothing else.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _drafter_plan(state, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.state import (
        DrafterStateError, controller_plan)
    try:
        return controller_plan(state, wanted)
    except DrafterStateError as exc:
        raise AnsibleFilterError(str(exc))


def _drafter_local_facts(result, wanted):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.state import DrafterStateError, facts_for
    try:
        return facts_for(result, wanted)
    except DrafterStateError as exc:
        raise AnsibleFilterError(str(exc))


def _drafter_place_reason(record, wanted, dest_stat):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import (
        PlacementError, checked_place_reason)
    try:
        return checked_place_reason(record, wanted, dest_stat)
    except PlacementError as exc:
        raise AnsibleFilterError(str(exc))


def _dflash_stale_ids(config, vllm_version):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.formats import (
        DflashConfigError, stale_ids_message)
    try:
        return stale_ids_message(config, str(vllm_version)) or ""
    except DflashConfigError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"drafter_plan": _drafter_plan, "drafter_local_facts": _drafter_local_facts,
                "drafter_place_reason": _drafter_place_reason, "dflash_stale_ids": _dflash_stale_ids}
