# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The lxc_gpu role's bookkeeping decisions (module_utils/_gpu/lxc_state.py) as Jinja filters.

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _call(name, function, *args):
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import LxcGpuStateError
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    try:
        return function(*[plain(a) for a in args])
    except LxcGpuStateError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))


def lxc_gpu_driver_record(info, libraries, kernel_module):
    """{vmid: record}: one container's userspace driver against the node's kernel module."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import driver_record
    vmid, record = _call("lxc_gpu_driver_record", driver_record, info, libraries, kernel_module)
    return {vmid: record}


def lxc_gpu_driver_fixed(records, vmid, after, check_mode):
    """The driver records with container ``vmid``'s marked fixed (or would_fix in check mode)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import fixed_driver_record
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    if not isinstance(records, Mapping):
        raise AnsibleFilterError("lxc_gpu_driver_fixed: expected the driver records (a dict keyed by vmid), got %s"
                                 % type(records).__name__)
    records = plain(records)
    key = str(vmid)
    if key not in records:
        raise AnsibleFilterError("lxc_gpu_driver_fixed: no driver record for CT %s (have %s)"
                                 % (key, ", ".join(sorted(records)) or "none"))
    records[key] = _call("lxc_gpu_driver_fixed", fixed_driver_record, records[key], after, check_mode)
    return records


def lxc_gpu_deferred_vmids(containers, node_devices, check_mode):
    """The vmids (strings) whose config a check run cannot compute before nvidia-uvm is loaded."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import deferred_vmids
    return _call("lxc_gpu_deferred_vmids", deferred_vmids, containers, node_devices, check_mode)


def lxc_gpu_restart_states(containers, deferred, changed, reboot, reboot_result, check_mode):
    """{vmid: restart state} of every container."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import restart_states
    return _call("lxc_gpu_restart_states", restart_states, containers, deferred, changed, reboot, reboot_result,
                 check_mode)


def lxc_gpu_container_report(conf_result, conf_dir, restarts, drivers):
    """{vmid: report}: one container's entry of lxc_gpu_report."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import container_report
    vmid, report = _call("lxc_gpu_container_report", container_report, conf_result, conf_dir, restarts, drivers)
    return {vmid: report}


class FilterModule(object):
    def filters(self):
        return {"lxc_gpu_driver_record": lxc_gpu_driver_record, "lxc_gpu_driver_fixed": lxc_gpu_driver_fixed,
                "lxc_gpu_deferred_vmids": lxc_gpu_deferred_vmids, "lxc_gpu_restart_states": lxc_gpu_restart_states,
                "lxc_gpu_container_report": lxc_gpu_container_report}
