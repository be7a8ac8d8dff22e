# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The GPU subsystem's filters: the node's NVIDIA device list (module_utils/_gpu/facts.py, the one parser of
/proc/devices) and the lxc_gpu role's bookkeeping (module_utils/_gpu/lxc_state.py). Plumbing only.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _call(name, function, *args):
    """``function`` on plain copies of ``args``; its LxcGpuStateError as a filter error naming the filter."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import LxcGpuStateError
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    try:
        return function(*[plain(a) for a in args])
    except LxcGpuStateError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))


def nvidia_char_devices(text, source="/proc/devices"):
    """The NVIDIA character device names of a /proc/devices text, in file order."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import (
        GpuFactsError, nvidia_char_majors, parse_proc_devices)
    try:
        return list(nvidia_char_majors(parse_proc_devices(text, source)))
    except GpuFactsError as exc:
        raise AnsibleFilterError(str(exc))


def lxc_gpu_driver_record(info, libraries, kernel_module):
    """{vmid: record}: one container's userspace driver against the node's kernel module."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import driver_record
    vmid, record = _call("lxc_gpu_driver_record", driver_record, info, libraries, kernel_module)
    return {vmid: record}


def lxc_gpu_driver_fixed(records, vmid, after, check_mode):
    """The driver records with container ``vmid``'s marked fixed (or would_fix in check mode)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import fixed_driver_records
    return _call("lxc_gpu_driver_fixed", fixed_driver_records, records, vmid, after, check_mode)


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
        return {"nvidia_char_devices": nvidia_char_devices,
                "lxc_gpu_driver_record": lxc_gpu_driver_record, "lxc_gpu_driver_fixed": lxc_gpu_driver_fixed,
                "lxc_gpu_deferred_vmids": lxc_gpu_deferred_vmids, "lxc_gpu_restart_states": lxc_gpu_restart_states,
                "lxc_gpu_container_report": lxc_gpu_container_report}
