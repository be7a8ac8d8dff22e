#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: proxmox_lxc_gpu_conf
short_description: Manage the NVIDIA GPU passthrough lines of a Proxmox container config
version_added: 0.1.0
description:
  - Edits C(/etc/pve/lxc/<vmid>.conf) on the Proxmox node so that the container sees the selected NVIDIA GPUs.
  - >-
    O(mode=devices) writes Proxmox VE 8.1+ device entries (C(devN: /dev/nvidia0), ...). O(mode=raw) writes
    C(lxc.cgroup2.devices.allow: c <major>:* rwm) (or the cgroup v1 key) with the majors read from O(proc_devices),
    never hard-coded, plus an C(lxc.mount.entry) bind mount for every GPU and control device.
  - Only the lines this module owns are touched (main section only), recognised by content rather than comment
    markers, which Proxmox moves - C(devN) entries and C(lxc.mount.entry) lines for C(/dev/nvidia*), the devices
    lines for an NVIDIA major (or a dynamic major no driver has now), and the C(dev/shm) mount when O(shm_size) is
    set. Every other line, and the snapshot and C([pve:pending]) sections, keep every byte.
  - Writes atomically while holding the lock C(pct) takes for the same container; it never restarts the container.
  - Every option value that becomes part of a config line must match its whole expected form; otherwise the
    module fails naming the option and writes nothing.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  vmid:
    description: The container's ID.
    type: int
    required: true
  conf_dir:
    description: Directory of the container configs.
    type: path
    default: /etc/pve/lxc
  state:
    description: V(present) writes the passthrough lines, V(absent) removes every owned line.
    type: str
    choices: [present, absent]
    default: present
  mode:
    description:
      - V(devices) for Proxmox VE 8.1+ C(devN) entries, V(raw) for C(lxc.cgroup*.devices.allow) plus C(lxc.mount.entry) lines.
      - Switching mode removes the other mode's owned lines.
    type: str
    choices: [devices, raw]
    default: raw
  gpus:
    description:
      - Which GPUs to pass, as device minors (V(0) for C(/dev/nvidia0)), or V(all) for every C(/dev/nvidiaN) in O(dev_dir).
      - Device minors usually equal nvidia-smi's index; C(/proc/driver/nvidia/gpus/*/information) (C(Device Minor)) is authoritative.
    type: list
    elements: str
    default: [all]
  control_devices:
    description:
      - Control devices passed besides the GPUs. V(nvidia-caps) and V(nvidia-caps-imex-channels) are directories
        (bind-mounted with C(create=dir) in raw mode; in devices mode their nodes are passed one by one).
    type: list
    elements: str
    default: [nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-caps]
  cgroup_key:
    description:
      - Which devices-cgroup key to write in raw mode. V(cgroup2) writes C(lxc.cgroup2.devices.allow) (Proxmox VE 7+),
        V(cgroup) writes C(lxc.cgroup.devices.allow) (devices controller on cgroup v1).
      - V(auto) reads O(proc_mounts) - V(cgroup) when a cgroup v1 hierarchy carries the devices controller, else V(cgroup2).
    type: str
    choices: [auto, cgroup2, cgroup]
    default: auto
  proc_devices:
    description: The node's C(/proc/devices), for the majors.
    type: path
    default: /proc/devices
  proc_mounts:
    description: The node's mount table, for O(cgroup_key=auto).
    type: path
    default: /proc/mounts
  dev_dir:
    description: Where the node's device nodes are looked up (for O(gpus=all), the nodes of directory devices, and existence checks).
    type: path
    default: /dev
  dev_options:
    description:
      - Options appended to every C(devN) entry in devices mode, comma-separated, from C(mode=0NNN), C(uid=N), C(gid=N), C(deny-write=0|1).
    type: str
  shm_size:
    description:
      - >-
        When set, also own and write C(lxc.mount.entry: tmpfs dev/shm tmpfs rw,nosuid,nodev,size=<shm_size>,create=dir 0 0)
        (tensor parallelism needs a large C(/dev/shm)). When not set, a C(dev/shm) line is left alone.
    type: str
  lock_dir:
    description:
      - Directory of Proxmox's per-container config locks; C(pve-config-<vmid>.lock) in it is held while writing.
        Skipped when the directory does not exist (not a Proxmox node).
    type: path
    default: /run/lock/lxc
attributes:
  diff_mode:
    details: The diff is the exact change of the config file, byte for byte (bytes that are not UTF-8 show as C(\xNN)).
  platform:
    details: A Proxmox VE node (the container's host), not the container.
notes:
  - The container must be restarted (C(pct reboot <vmid>)) for a change to apply; C(changed) says whether one is pending.
  - In raw mode the C(optional) bind mount silently skips a node that does not exist when the container starts, so create
    C(/dev/nvidia-uvm) at boot on the node (for example C(nvidia-modprobe -u -c 0)). In devices mode a missing node makes
    the container fail to start, so this module refuses to write entries for nodes that do not exist.
  - See C(docs/hosts.md) in the collection for cgroup v1 and v2 passthrough and the dynamic majors, and
    C(docs/bad-input.md) for how the file is edited byte for byte and what bad input gets.
seealso:
  - name: pct.conf(5)
    description: The container configuration format, including C(dev[n]).
    link: https://pve.proxmox.com/pve-docs/pct.conf.5.html
"""

EXAMPLES = r"""
- name: Pass both GPUs into CT 129 with raw lxc keys, majors from /proc/devices
  inference.gpu_host.proxmox_lxc_gpu_conf:
    vmid: 129
    mode: raw
    gpus: [all]
    shm_size: 16G
  register: __ct_conf

- name: Proxmox VE 8.1+ device entries for GPU 1 only
  inference.gpu_host.proxmox_lxc_gpu_conf:
    vmid: 129
    mode: devices
    gpus: ["1"]
    dev_options: gid=44

- name: Drift check - would anything change, and do the majors still match?
  inference.gpu_host.proxmox_lxc_gpu_conf:
    vmid: 129
  check_mode: true
  diff: true
  register: __ct_drift
"""

RETURN = r"""
conf_path:
  description: The config file.
  returned: always
  type: str
  sample: /etc/pve/lxc/129.conf
diff:
  description:
    - Before and after text of the config (what C(--diff) shows), exactly as the bytes are, line ends included;
      a byte that is not UTF-8 shows as C(\xNN) here only.
  returned: always
  type: dict
  contains:
    before:
      description: The config before.
      type: str
    after:
      description: The config after.
      type: str
    before_header:
      description: The config path.
      type: str
    after_header:
      description: The config path.
      type: str
unified_diff:
  description: The change as a unified diff; empty when nothing changes.
  returned: always
  type: str
  sample: "--- a/129.conf\n+++ b/129.conf\n@@ -8,0 +9 @@\n+lxc.cgroup2.devices.allow: c 195:* rwm\n"
lines:
  description: The owned lines the config holds after the change (empty for O(state=absent)).
  returned: always
  type: list
  elements: str
  sample: ["lxc.cgroup2.devices.allow: c 195:* rwm", "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file"]
removed:
  description: The owned lines found in the config before (they are replaced by RV(lines)).
  returned: always
  type: list
  elements: str
  sample: ["lxc.cgroup2.devices.allow: c 509:* rwm"]
majors:
  description: Character majors of every C(nvidia*) driver in O(proc_devices).
  returned: always
  type: dict
  sample: {nvidia: 195, nvidiactl: 195, nvidia-uvm: 238, nvidia-caps: 241}
majors_drift:
  description:
    - Whether the raw allow rules of the config as it was before this run still match O(proc_devices).
    - C(drift) true when a mounted node's major is not allowed, its driver is missing, or an allow rule names a dynamic
      major no driver has now; C(checked) false when the config has no raw NVIDIA lines (C(devN) entries never drift).
  returned: always
  type: dict
  sample:
    drift: true
    checked: true
    conf_majors: [195, 509]
    majors: {nvidia: 195, nvidia-uvm: 511}
    messages: ["the conf mounts /dev/nvidia-uvm, whose major is now 511 (nvidia-uvm in /proc/devices), but no devices.allow rule allows c 511:*"]
cgroup_key:
  description: The devices-cgroup key written in raw mode; null in devices mode.
  returned: always
  type: str
  sample: lxc.cgroup2.devices.allow
gpu_minors:
  description: The device minors passed through.
  returned: always
  type: list
  elements: int
  sample: [0, 1]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_apply import apply
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_conf import DEFAULT_CONTROL_DEVICES


def main():
    module = AnsibleModule(
        argument_spec=dict(
            vmid=dict(type="int", required=True),
            conf_dir=dict(type="path", default="/etc/pve/lxc"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            mode=dict(type="str", choices=["devices", "raw"], default="raw"),
            gpus=dict(type="list", elements="str", default=["all"]),
            control_devices=dict(type="list", elements="str", default=list(DEFAULT_CONTROL_DEVICES)),
            cgroup_key=dict(type="str", choices=["auto", "cgroup2", "cgroup"], default="auto"),
            proc_devices=dict(type="path", default="/proc/devices"),
            proc_mounts=dict(type="path", default="/proc/mounts"),
            dev_dir=dict(type="path", default="/dev"),
            dev_options=dict(type="str"),
            shm_size=dict(type="str"),
            lock_dir=dict(type="path", default="/run/lock/lxc"),
        ),
        supports_check_mode=True,
    )
    result, error = apply(module)
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
