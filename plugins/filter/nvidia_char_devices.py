# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Filters over the node's device list, through module_utils/_gpu/facts.py (the one parser of /proc/devices)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: nvidia_char_devices
short_description: The NVIDIA character devices listed in a /proc/devices text
version_added: 0.2.0
description:
  - Parses the text of C(/proc/devices) with the collection's one parser of it and returns the names of the
    character devices whose name starts with C(nvidia), in file order (for example C(nvidia), C(nvidiactl),
    C(nvidia-uvm), C(nvidia-caps)).
  - A text that is not a device list fails with the line that is not.
options:
  _input:
    description: The content of C(/proc/devices).
    type: str
    required: true
  source:
    description: The file name to name in an error.
    type: str
    default: /proc/devices
"""

EXAMPLES = r"""
- name: Names of the NVIDIA character devices
  ansible.builtin.debug:
    msg: "{{ lookup('ansible.builtin.file', '/proc/devices') | inference.gpu_host.nvidia_char_devices }}"
"""

RETURN = r"""
_value:
  description: Device names, each once, in the order /proc/devices lists them.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def nvidia_char_devices(text, source="/proc/devices"):
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import GpuFactsError, nvidia_char_majors, parse_proc_devices
    try:
        return list(nvidia_char_majors(parse_proc_devices(text, source)))
    except GpuFactsError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"nvidia_char_devices": nvidia_char_devices}
