# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter role's placement decision, through module_utils/_drafter/placement.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drafter_place_reason
short_description: Why the drafter's weights must be placed again, or an empty string
version_added: 0.2.0
description:
  - Compares the record of the last placement with the wanted source and a stat of the installed
    C(model.safetensors). Returns C(not installed yet), C(the source changed),
    C(model.safetensors changed on the host) (its size or mtime differ from the ones recorded right after placing),
    or an empty string when nothing is to be placed.
options:
  _input:
    description: The record of the last placement (an empty mapping when there is none; anything else counts as none).
    type: raw
    required: true
  wanted:
    description: The wanted source (C(type), C(source), C(sha256), and the source file's C(size) and C(mtime) when known).
    type: dict
    required: true
  dest_stat:
    description: The C(stat) result of the installed C(model.safetensors) (the module's C(stat) key).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Decide the placement
  ansible.builtin.set_fact:
    reason: "{{ record | inference.gpu_host.drafter_place_reason(wanted, dest.stat) }}"
"""

RETURN = r"""
_value:
  description: The reason, or an empty string.
  type: str
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def drafter_place_reason(record, wanted, dest_stat):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import place_reason
    if not isinstance(record, dict):
        record = {}  # a record broken on the host is no record: the weights are placed again
    for name, value in (("wanted", wanted), ("dest_stat", dest_stat)):
        if not isinstance(value, dict):
            raise AnsibleFilterError("drafter_place_reason: %s must be a mapping, got %r" % (name, value))
    return place_reason(record, wanted, dest_stat)


class FilterModule(object):
    def filters(self):
        return {"drafter_place_reason": drafter_place_reason}
