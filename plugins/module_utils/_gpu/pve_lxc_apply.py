# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The proxmox_lxc_gpu_conf module's run on the Proxmox node: read the node (device nodes, /proc/devices,
/proc/mounts) and the container config, plan the owned lines (pve_lxc_conf.update_conf), write under the lock.

Entry point: ``apply(module)`` -> (result, failure message or None), through the module's params, check_mode
and warn. Every option value that ends up in a config line is checked before anything is read or written.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import (
    GpuFactsError,
    parse_proc_devices,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_conf import (
    CGROUP_KEYS,
    CONTROL_DEVICES,
    PveLxcConfError,
    check_node_name,
    check_options,
    config_lock,
    decode_conf,
    detect_cgroup_layout,
    display,
    lock_config,
    majors_drift,
    read_bounded,
    update_conf,
    write_atomic,
)

_GPU_RE = re.compile(r"[0-9]{1,3}")


def _read_text(path, what):
    """A small text file of the node (/proc/devices, /proc/mounts); bytes that are not UTF-8 kept as escapes."""
    return decode_conf(read_bounded(path, what))


def _check_gpus(gpus):
    for gpu in gpus:
        if not isinstance(gpu, str) or not (gpu.lower() == "all" or _GPU_RE.fullmatch(gpu)):
            raise PveLxcConfError("gpus: %r is not 'all' or a device minor (0 for /dev/nvidia0; digits only, no "
                                  "spaces or line breaks); UUIDs are not supported here, find the minor in "
                                  "/proc/driver/nvidia/gpus/*/information" % (gpu,))


def _gpu_minors(gpus, dev_dir):
    if any(gpu.lower() == "all" for gpu in gpus):
        try:
            names = os.listdir(dev_dir)
        except OSError as exc:
            raise PveLxcConfError("gpus: all: cannot list dev_dir %s: %s" % (dev_dir, exc.strerror or exc))
        minors = sorted(int(n[len("nvidia"):]) for n in names if re.fullmatch(r"nvidia[0-9]{1,3}", n))
        if not minors:
            raise PveLxcConfError("gpus: all: there is no /dev/nvidiaN in %s (is the NVIDIA driver loaded on the node?)"
                                  % dev_dir)
        return minors
    return sorted(set(int(gpu) for gpu in gpus))


def _check_nodes(dev_dir, nodes, kinds):
    """Device nodes that are missing; a node of the wrong kind (a directory for a device, or the
    other way round) is an error: it will not turn into the right one, unlike a driver not loaded yet."""
    missing = []
    for node in nodes:
        path = os.path.join(dev_dir, node)
        if not os.path.lexists(path):
            missing.append(node)
        elif kinds.get(node, "file") == "file" and os.path.isdir(path):
            raise PveLxcConfError("dev_dir: %s is a directory, expected the device node /dev/%s" % (path, node))
        elif kinds.get(node) == "dir" and not os.path.isdir(path):
            raise PveLxcConfError("dev_dir: %s is not a directory, expected the directory of device nodes /dev/%s"
                                  % (path, node))
    return missing


def _dir_nodes(dev_dir, name):
    """The node names in a directory device (nvidia-caps), each checked to be fit for a conf line; None if absent."""
    path = os.path.join(dev_dir, name)
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return None
    for entry in entries:
        check_node_name(entry, "dev_dir: %s holds a node named" % path)
    return entries


def _plan(module, params, conf_path, text, proc_devices):
    dev_dir = params["dev_dir"]
    mode = params["mode"]
    state = params["state"]
    minors, layout, dir_entries = [], "cgroup2", {}
    if state == "present":
        minors = _gpu_minors(params["gpus"], dev_dir)
        kinds = dict((n, CONTROL_DEVICES[n][1]) for n in params["control_devices"])
        gpu_nodes = ["nvidia%d" % m for m in minors]
        missing = _check_nodes(dev_dir, gpu_nodes + list(params["control_devices"]), kinds)
        missing_files = [n for n in missing if kinds.get(n, "file") == "file"]
        if mode == "devices":
            if missing_files:
                raise PveLxcConfError(
                    "devices mode: %s missing in %s; Proxmox refuses devN entries for absent nodes and the container "
                    "would not start (create /dev/nvidia-uvm at boot, e.g. nvidia-modprobe -u -c 0)"
                    % (", ".join("/dev/" + p for p in missing_files), dev_dir))
            for name in params["control_devices"]:
                if kinds[name] == "dir":
                    dir_entries[name] = _dir_nodes(dev_dir, name)
                    if dir_entries[name] is None:
                        module.warn("devices mode: %s has no %s directory, so none of its nodes are passed"
                                    % (dev_dir, name))
        else:
            for node in missing_files:
                module.warn("%s/%s does not exist now; its optional bind mount is skipped until it does"
                            % (dev_dir, node))
            if params["cgroup_key"] == "auto":
                layout = detect_cgroup_layout(_read_text(params["proc_mounts"], "mount table"), params["proc_mounts"])
            else:
                layout = params["cgroup_key"]
    result = update_conf(text, mode, minors, proc_devices, cgroup_layout=layout,
                         control_devices=params["control_devices"], dir_entries=dir_entries,
                         dev_options=params["dev_options"], shm_size=params["shm_size"], state=state,
                         path=os.path.basename(conf_path))
    return result, minors, (CGROUP_KEYS[layout] if state == "present" and mode == "raw" else None)


def apply(module):
    """The module's run: (result, failure message or None); a failure keeps changed=False and conf_path."""
    params = module.params
    vmid = params["vmid"]
    conf_path = os.path.join(params["conf_dir"], "%d.conf" % vmid)
    result = dict(changed=False, conf_path=conf_path)
    try:
        if vmid < 100:
            raise PveLxcConfError("vmid: %d is below 100; Proxmox reserves IDs < 100" % vmid)
        # Every value that ends up in a conf line is checked before anything is read or written.
        check_options(params["mode"], params["control_devices"], params["dev_options"], params["shm_size"])
        _check_gpus(params["gpus"])
        if not os.path.lexists(conf_path):
            raise PveLxcConfError("%s does not exist: create container %d first" % (conf_path, vmid))
        before = read_bounded(conf_path, "container config")
        try:
            proc_devices = parse_proc_devices(_read_text(params["proc_devices"], "device list"), params["proc_devices"])
        except GpuFactsError as exc:
            raise PveLxcConfError(str(exc))
        lock_path = os.path.join(params["lock_dir"], "pve-config-%d.lock" % vmid)
        use_lock = not module.check_mode and os.path.isdir(params["lock_dir"])
        plan, minors, key = _plan(module, params, conf_path, before, proc_devices)
        lock = config_lock(before)
        if plan["changed"] and module.check_mode and lock:
            module.warn("%s is locked (lock: %s): applying this change would be refused" % (conf_path, display(lock)))
        if plan["changed"] and not module.check_mode:
            if use_lock:
                with lock_config(lock_path):
                    _write(conf_path, before, plan["text"])
            else:
                _write(conf_path, before, plan["text"])
        result.update(
            changed=plan["changed"],
            # The exact bytes before and after; only bytes that are not UTF-8 are shown escaped (\xNN).
            diff=dict(before=display(before), after=display(plan["text"]), before_header=conf_path,
                      after_header=conf_path),
            unified_diff=plan["diff"],
            lines=plan["lines"],
            removed=plan["removed"],
            majors=plan["majors"],
            majors_drift=majors_drift(before, proc_devices),
            cgroup_key=key,
            gpu_minors=minors,
        )
    except PveLxcConfError as exc:
        return result, str(exc)
    return result, None


def _write(conf_path, before, after):
    # Atomic on pmxcfs as Proxmox itself writes /etc/pve: "<vmid>.conf.tmp.<pid>" in the same
    # directory, then rename(), which pmxcfs applies as one replicated memdb operation
    # (sources cited at write_atomic). Done under PVE's per-CT flock, as `pct set` does.
    lock = config_lock(before)
    if lock:
        raise PveLxcConfError("%s: the container is locked (lock: %s); Proxmox refuses changes until it is "
                              "unlocked (pct unlock) or the operation ends" % (conf_path, display(lock)))
    # Re-checked under the lock: a concurrent `pct set` since the read means run again.
    write_atomic(conf_path, after, expected_before=before)
