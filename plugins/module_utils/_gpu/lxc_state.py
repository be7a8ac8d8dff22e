# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The decisions of the lxc_gpu role's bookkeeping, in one tested place: which
# containers a check run cannot compute, each container's restart state, its
# driver comparison (node kernel module against container userspace) and the
# per-container report. The role reaches them through plugins/filter/gpu.py.
#
# Each function gives what the role's Jinja gave before: vmids as strings, lists in
# first-seen order, a Jinja `a or b or c` chain as "the first truthy value, else the last".
#
# Public API (stdlib only; input of the wrong shape raises LxcGpuStateError naming it):
# * nvml_versions(paths) -> ["550.54.14", ...] from libnvidia-ml.so.X.Y[.Z] file names
# * userspace_version(info, library_versions) -> the container's userspace driver version, or None
# * driver_status(info, kernel_module, userspace) -> unreachable | no_kernel_module | match | mismatch
#   | no_userspace | unknown
# * driver_record(info, libraries, kernel_module) -> (vmid, record): one container's driver comparison
# * fixed_driver_record(record, after, check_mode) -> the record after (or, in check mode, before) the fix
# * fixed_driver_records(records, vmid, after, check_mode) -> the records with container vmid's fixed
# * deferred_vmids(containers, node_devices, check_mode) -> vmids whose config needs nvidia-uvm's major
# * node_devices(text, source, containers, check_mode) -> {"names": the node's NVIDIA character devices (from
#   /proc/devices' text, facts.py's parser), "deferred": deferred_vmids of them}
# * rebooted_vmids(reboot_result) -> vmids the reboot handler rebooted
# * restart_state(vmid, deferred, changed, reboot, rebooted, check_mode) -> deferred | none | pending
#   | would_reboot | rebooted | stopped
# * restart_states(containers, deferred, changed, reboot, reboot_result, check_mode) -> {vmid: state}
# * container_report(conf_result, conf_dir, restarts, drivers) -> (vmid, report)

import posixpath
import re
from collections.abc import Mapping

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu import facts

# The NVML library's file name carries the userspace driver's version (the same pattern the role used).
_NVML_LIBRARY = re.compile(r"^libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$")

# The control devices whose (dynamic) major exists only once nvidia-uvm is loaded, in the order the role
# listed the containers needing them.
UVM_DEVICES = ("nvidia-uvm", "nvidia-uvm-tools")

NOT_CHECKED = {"status": "not_checked"}


class LxcGpuStateError(ValueError):
    """Input of the wrong shape (the message names it and what was expected)."""


def _mapping(value, what):
    if not isinstance(value, Mapping):
        raise LxcGpuStateError("%s: expected a dict, got %s" % (what, type(value).__name__))
    return value


def _sequence(value, what):
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise LxcGpuStateError("%s: expected a list, got %s" % (what, type(value).__name__))
    return list(value)


def _vmid(container, what):
    """A container's vmid as the role keys it (Jinja's `vmid | string`)."""
    container = _mapping(container, what)
    if "vmid" not in container:
        raise LxcGpuStateError("%s: has no vmid" % what)
    return str(container["vmid"])


def _as_int(value):
    """Jinja's `int` filter: "42" -> 42, "42.5" -> 42, anything else that is not a number -> 0."""
    try:
        return int(value, 10) if isinstance(value, str) else int(value)
    except (TypeError, ValueError, OverflowError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return 0


def _unique(values):
    """Jinja's `unique` (as Ansible calls it): each value once, first seen kept, strings compared caselessly."""
    seen = []
    kept = []
    for value in values:
        key = value.lower() if isinstance(value, str) else value
        if key not in seen:
            seen.append(key)
            kept.append(value)
    return kept


def nvml_versions(paths):
    """The versions in the NVML library file names among ``paths``, each once, in the order found."""
    found = []
    for path in _sequence(paths, "NVML library paths"):
        if not isinstance(path, str):
            raise LxcGpuStateError("NVML library paths: expected file paths, got %s" % type(path).__name__)
        match = _NVML_LIBRARY.search(posixpath.basename(path))
        if match:
            found.append(match.group(1))
    return _unique(found)


def userspace_version(info, library_versions):
    """nvidia-smi's driver version, else NVML's library version, else the one NVML library file's version.

    None when none is known (two library files of different versions name no version).
    """
    info = _mapping(info, "driver probe result")
    sole_library = library_versions[0] if len(library_versions) == 1 else None
    return info.get("driver_version") or info.get("nvml_library_version") or sole_library or None


def driver_status(info, kernel_module, userspace):
    """One word for how the container's userspace driver compares with the node's kernel module."""
    info = _mapping(info, "driver probe result")
    failure = info.get("failure", "")
    if info.get("unreachable", False):
        return "unreachable"
    if not kernel_module:
        return "no_kernel_module"
    if userspace == kernel_module:
        return "match"
    if userspace or failure == "mismatch":
        return "mismatch"
    if failure == "not_found":
        return "no_userspace"
    return "unknown"


def driver_record(info, libraries, kernel_module):
    """(vmid, record) of one container: ``info`` the driver probe's loop result (its ``item`` the container),
    ``libraries`` the NVML library search's loop result for the same container."""
    info = _mapping(info, "driver probe result")
    vmid = _vmid(info.get("item"), "driver probe result's item")
    files = _mapping(libraries, "NVML library search result").get("files", [])
    paths = []
    for entry in _sequence(files, "NVML library search result's files"):
        paths.append(_mapping(entry, "NVML library search result's files").get("path"))
    versions = nvml_versions(paths)
    userspace = userspace_version(info, versions)
    return vmid, {
        "host": info["item"].get("host"),
        "status": driver_status(info, kernel_module, userspace),
        "node_kernel_module": kernel_module,
        "container_userspace": userspace,
        "container_libraries": versions,
        "container_reason": info.get("reason", info.get("msg", "")),
        "fixed": False,
    }


def fixed_driver_record(record, after, check_mode):
    """The record of a container whose userspace driver was installed (``after`` the probe that followed), or in
    check mode would be: status fixed/would_fix, the version before kept as container_userspace_before."""
    record = _mapping(record, "driver record")
    before = record.get("container_userspace")
    updated = dict(record)
    updated.update({
        "status": "would_fix" if check_mode else "fixed",
        "container_userspace_before": before,
        "container_userspace": before if check_mode else _mapping(after, "driver probe after the fix").get(
            "driver_version"),
        "fixed": not check_mode,
    })
    return updated


def fixed_driver_records(records, vmid, after, check_mode):
    """The driver records (keyed by vmid) with container ``vmid``'s record made by fixed_driver_record."""
    if not isinstance(records, Mapping):
        raise LxcGpuStateError("expected the driver records (a dict keyed by vmid), got %s" % type(records).__name__)
    records = dict(records)
    key = str(vmid)
    if key not in records:
        raise LxcGpuStateError("no driver record for CT %s (have %s)" % (key, ", ".join(sorted(records)) or "none"))
    records[key] = fixed_driver_record(records[key], after, check_mode)
    return records


def _needs(container, device, what):
    """Whether a container lists ``device`` among its control devices (`in`, as Jinja's `contains` test)."""
    devices = container.get("control_devices", [])
    if not isinstance(devices, (str, list, tuple)):
        raise LxcGpuStateError("%s.control_devices: expected a list of device names, got %s"
                               % (what, type(devices).__name__))
    return device in devices


def deferred_vmids(containers, node_devices, check_mode):
    """The present containers whose config needs nvidia-uvm's major while a check run finds it not loaded.

    A real run loads nvidia-uvm before writing the configs, so it defers none.
    """
    containers = _sequence(containers, "containers")
    if not check_mode or "nvidia-uvm" in _sequence(node_devices, "node devices"):
        return []
    vmids = []
    for device in UVM_DEVICES:
        for index, container in enumerate(containers):
            what = "containers[%d]" % index
            vmid = _vmid(container, what)
            if container.get("state") == "present" and _needs(container, device, what):
                vmids.append(vmid)
    return _unique(vmids)


def rebooted_vmids(reboot_result):
    """The vmids the reboot handler's registered (loop) result says it rebooted."""
    results = _mapping(reboot_result, "reboot result").get("results", [])
    vmids = []
    for index, result in enumerate(_sequence(results, "reboot result's results")):
        result = _mapping(result, "reboot result's results[%d]" % index)
        if result.get("changed"):
            status = result.get("item")
            vmids.append(str(status.get("item", "")) if isinstance(status, Mapping) else "")
    return vmids


def restart_state(vmid, deferred, changed, reboot, rebooted, check_mode):
    """One word for a container's restart: the vmid (a string) against the lists of vmids (strings)."""
    if vmid in deferred:
        return "deferred"
    if vmid not in changed:
        return "none"
    if vmid not in reboot:
        return "pending"
    if check_mode:
        return "would_reboot"
    if vmid in rebooted:
        return "rebooted"
    return "stopped"


def restart_states(containers, deferred, changed, reboot, reboot_result, check_mode):
    """{vmid: restart state} of every container."""
    deferred = _sequence(deferred, "deferred vmids")
    changed = _sequence(changed, "changed vmids")
    reboot = _sequence(reboot, "reboot vmids")
    rebooted = rebooted_vmids(reboot_result)
    states = {}
    for index, container in enumerate(_sequence(containers, "containers")):
        vmid = _vmid(container, "containers[%d]" % index)
        states[vmid] = restart_state(vmid, deferred, changed, reboot, rebooted, check_mode)
    return states


def container_report(conf_result, conf_dir, restarts, drivers):
    """(vmid, report) of one container from its config task's loop result (its ``item`` the container), the
    restart states and the driver records (keyed by vmid; a container without one was not checked)."""
    conf_result = _mapping(conf_result, "config result")
    container = _mapping(conf_result.get("item"), "config result's item")
    vmid = _vmid(container, "config result's item")
    restarts = _mapping(restarts, "restart states")
    if vmid not in restarts:
        raise LxcGpuStateError("restart states: no state for CT %s" % vmid)
    return vmid, {
        "vmid": _as_int(container["vmid"]),
        "mode": container.get("mode"),
        "state": container.get("state"),
        "conf_path": conf_result.get("conf_path", "%s/%s.conf" % (conf_dir, container["vmid"])),
        "conf_changed": conf_result.get("changed", False),
        "deferred": conf_result.get("skipped", False),
        "lines": conf_result.get("lines", []),
        "removed": conf_result.get("removed", []),
        "unified_diff": conf_result.get("unified_diff", ""),
        "cgroup_key": conf_result.get("cgroup_key"),
        "majors": conf_result.get("majors", {}),
        "majors_drift": conf_result.get("majors_drift", {}),
        "restart": restarts[vmid],
        "driver": _mapping(drivers, "driver records").get(vmid, dict(NOT_CHECKED)),
    }


# The lxc_gpu role's filters combine each container's entry into a dict keyed by vmid.
def driver_record_by_vmid(info, libraries, kernel_module):
    """{vmid: record}: driver_record of one container (the lxc_gpu_driver_record filter)."""
    vmid, record = driver_record(info, libraries, kernel_module)
    return {vmid: record}


def container_report_by_vmid(conf_result, conf_dir, restarts, drivers):
    """{vmid: report}: container_report of one container (the lxc_gpu_container_report filter)."""
    vmid, report = container_report(conf_result, conf_dir, restarts, drivers)
    return {vmid: report}


def node_devices(text, source, containers, check_mode):
    """{"names": the NVIDIA character device names of the node's /proc/devices ``text`` (``source``: its file, named
    in an error), in file order; "deferred": deferred_vmids of the containers against them} (the lxc_gpu_node_devices
    filter)."""
    try:
        names = facts.nvidia_char_devices(text, source)
    except facts.GpuFactsError as exc:
        raise LxcGpuStateError(str(exc))
    return {"names": names, "deferred": deferred_vmids(containers, names, check_mode)}
