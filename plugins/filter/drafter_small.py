# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter subsystem's small filters: the drift check's stale-ids message.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type


from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _dflash_stale_ids(config, vllm_version):
    """The drift check's message when a drafter config.json was written for another vLLM, else ''."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import stale_ids_message
    if not isinstance(config, dict):
        raise AnsibleFilterError("dflash_stale_ids: expected the parsed config.json (a dict), got %s" % type(config).__name__)
    return stale_ids_message(config, str(vllm_version)) or ""


class FilterModule(object):
    def filters(self):
        return {"dflash_stale_ids": _dflash_stale_ids}
