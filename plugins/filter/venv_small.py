# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The venv subsystem's small filters (python_env): the flash-attn gate and wheel tags.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.

_WHEEL = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+)-(?P<version>[^-]+?)(?:\+(?P<local>[^-]+))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


def _flash_attn_gate(gpus, flash_attn_major):
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import GpuFactsError, flash_attn_gate
    try:
        return flash_attn_gate(gpus or [], flash_attn_major)
    except GpuFactsError as exc:
        raise AnsibleFilterError(str(exc))


def _wheel_tags(filename):
    """Split a wheel file name into its tags; local tag parts cuXY / torchA.B / cxx11abi... as keys."""
    base = filename.rsplit("/", 1)[-1].split("?", 1)[0]
    match = _WHEEL.match(base)
    if not match:
        raise AnsibleFilterError("%s: not a wheel file name (name-version-python-abi-platform.whl)" % filename)
    tags = match.groupdict()
    local = tags.get("local") or ""
    cuda = re.search(r"cu(\d+)", local)
    torch = re.search(r"torch(\d+\.\d+)", local)
    tags["cuda_major"] = cuda.group(1)[:2] if cuda else ""
    tags["torch_minor"] = torch.group(1) if torch else ""
    tags["cxx11abi"] = ("TRUE" in local) if "cxx11abi" in local else None
    return tags


class FilterModule(object):
    def filters(self):
        return {"flash_attn_gate": _flash_attn_gate, "wheel_tags": _wheel_tags}
