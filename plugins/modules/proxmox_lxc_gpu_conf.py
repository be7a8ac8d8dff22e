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
  - Edits C(/etc/pve/lxc/<vmid>.conf) on the Proxmox node so that the container sees the selected NVIDIA GPUs -
    O(mode=devices) as Proxmox VE 8.1+ C(devN) entries, O(mode=raw) as C(lxc.cgroup2.devices.allow) (or the cgroup v1
    key) lines with the majors read from O(proc_devices) plus an C(lxc.mount.entry) per device (C(docs/hosts.md)).
  - Owns only its lines of the main section, recognised by content (C(devN) and mount entries for C(/dev/nvidia*), the
    devices lines of an NVIDIA or orphaned dynamic major, the C(dev/shm) mount with O(shm_size)); every other byte is
    kept (C(docs/bad-input.md)).
  - Writes atomically under the lock C(pct) takes for the container; never restarts it (C(pct reboot <vmid>) applies a
    change). A bad option value fails naming the option; nothing is written.
author: inference.gpu_host contributors (!UNKNOWN)
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
    description: V(devices) or V(raw) (see above); switching removes the other mode's lines.
    type: str
    choices: [devices, raw]
    default: raw
  gpus:
    description:
      - Device minors to pass (V(0) for C(/dev/nvidia0); usually nvidia-smi's index, C(Device Minor) in
        C(/proc/driver/nvidia/gpus/*/information) for sure), or V(all) for every C(/dev/nvidiaN) in O(dev_dir).
    type: list
    elements: str
    default: [all]
  control_devices:
    description: Control devices passed besides the GPUs (directories such as V(nvidia-caps) node by node in devices mode).
    type: list
    elements: str
    default: [nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-caps]
  cgroup_key:
    description:
      - The devices-cgroup key of raw mode - V(cgroup2), V(cgroup) (cgroup v1), or V(auto) from O(proc_mounts).
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
    description: Where the node's device nodes are looked up.
    type: path
    default: /dev
  dev_options:
    description: Options appended to every C(devN) entry, from C(mode=0NNN), C(uid=N), C(gid=N), C(deny-write=0|1).
    type: str
  shm_size:
    description: Also own and write a C(dev/shm) tmpfs mount of this size (tensor parallelism needs a large one); unset
      leaves a C(dev/shm) line alone.
    type: str
  lock_dir:
    description: Directory of Proxmox's per-container config locks; skipped when absent (not a Proxmox node).
    type: path
    default: /run/lock/lxc
attributes:
  diff_mode:
    details: The exact change of the config file, byte for byte (bytes that are not UTF-8 show as C(\xNN)).
  platform:
    details: A Proxmox VE node (the container's host), not the container.
notes:
  - In raw mode a bind mount skips a node missing when the container starts, so create C(/dev/nvidia-uvm) at boot on
    the node (C(nvidia-modprobe -u -c 0)); in devices mode a missing node stops the start, so such entries are refused.
seealso:
  - name: pct.conf(5)
    description: The container configuration format, including C(dev[n]).
    link: https://pve.proxmox.com/pve-docs/pct.conf.5.html
"""

EXAMPLES = r"""
- name: Pass both GPUs into CT 129 with raw lxc keys, majors from /proc/devices
  inference.gpu_host.proxmox_lxc_gpu_conf:
    vmid: 129
    shm_size: 16G
  register: __ct_conf

- name: Proxmox VE 8.1+ device entries for GPU 1 only
  inference.gpu_host.proxmox_lxc_gpu_conf:
    vmid: 129
    mode: devices
    gpus: ["1"]
    dev_options: gid=44
"""

RETURN = r"""
conf_path:
  description: The config file.
  returned: always
  type: str
  sample: /etc/pve/lxc/129.conf
diff:
  description: C(before), C(after) (the config's text, line ends included) and their headers.
  returned: always
  type: dict
unified_diff:
  description: The change as a unified diff; empty when nothing changes.
  returned: always
  type: str
  sample: "--- a/129.conf\n+++ b/129.conf\n@@ -8,0 +9 @@\n+lxc.cgroup2.devices.allow: c 195:* rwm\n"
lines:
  description: The owned lines after the change.
  returned: always
  type: list
  elements: str
  sample: ["lxc.cgroup2.devices.allow: c 195:* rwm", "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file"]
removed:
  description: The owned lines found before.
  returned: always
  type: list
  elements: str
majors:
  description: Character majors of every C(nvidia*) driver in O(proc_devices).
  returned: always
  type: dict
  sample: {nvidia: 195, nvidiactl: 195, nvidia-uvm: 238, nvidia-caps: 241}
majors_drift:
  description: Whether the config's raw allow rules, as found, still match O(proc_devices) - C(drift), C(checked), C(messages).
  returned: always
  type: dict
  sample:
    drift: true
    checked: true
    messages: ["the conf mounts /dev/nvidia-uvm, whose major is now 511 (nvidia-uvm in /proc/devices), but no devices.allow rule allows c 511:*"]
cgroup_key:
  description: The devices-cgroup key written in raw mode; null in devices mode.
  returned: always
  type: str
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
