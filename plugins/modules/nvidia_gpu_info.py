#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: nvidia_gpu_info
short_description: Read the NVIDIA GPUs of a host (nvidia-smi), with the flash-attn and tensor-parallel checks
version_added: 0.1.0
description:
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total) and plain C(nvidia-smi)
    (for the CUDA version), and reads the kernel module version; returns the GPUs, their compute capability as
    numbers, the driver and CUDA versions.
  - A host without NVIDIA (no C(nvidia-smi), no driver, a driver/library mismatch, no GPU) gets an empty RV(gpus) and
    a sentence in RV(reason), never a failure.
  - Optionally answers whether a flash-attn major suits the GPUs (O(flash_attn_major)) and whether a tensor-parallel
    size fits them (O(tensor_parallel_size)); the caller decides.
  - Read-only. Bad options fail naming the option, before C(nvidia-smi) runs.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  nvidia_smi_path:
    description: The C(nvidia-smi) to run (absolute); default the one on E(PATH), C(/usr/bin), C(/usr/local/bin), C(/usr/sbin).
    type: path
  kernel_module_version_path:
    description: The loaded kernel module's version file (in an LXC container, the Proxmox node's module).
    type: path
    default: /proc/driver/nvidia/version
  flash_attn_major:
    description: Check this flash-attn major (2 needs compute capability 8.0 or newer, 3 and 4 need 9.0) in RV(flash_attn_gate).
    type: int
    choices: [2, 3, 4]
  tensor_parallel_size:
    description: Check this tensor-parallel size against the GPU count in RV(tensor_parallel).
    type: int
notes:
  - Compute capability needs the C(compute_cap) query field of newer drivers; an older C(nvidia-smi) is reported in RV(reason).
seealso:
  - name: nvidia-smi documentation
    description: The query fields and exit codes.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Read the GPUs, checking flash-attn 4 and tensor parallel 2
  inference.gpu_host.nvidia_gpu_info:
    flash_attn_major: 4
    tensor_parallel_size: 2
  register: __gpu_gate

- name: Stop when a GPU is too old (a host without GPU passes as skipped)
  ansible.builtin.assert:
    that: __gpu_gate.flash_attn_gate.ok and __gpu_gate.tensor_parallel.ok
    fail_msg: "{{ __gpu_gate.flash_attn_gate.message }} / {{ __gpu_gate.tensor_parallel.message }}"
"""

RETURN = r"""
gpus:
  description: >-
    The GPUs in nvidia-smi's order - C(index), C(name), C(uuid), C(compute_capability) (null when N/A),
    C(compute_capability_major), C(compute_capability_minor), C(driver_version), C(memory_total_mib).
  returned: always
  type: list
  elements: dict
  sample:
    - {index: 0, name: NVIDIA H200, uuid: GPU-35975a73-7769-4d54-c326-097dbcf602f8, compute_capability: "9.0",
       compute_capability_major: 9, compute_capability_minor: 0, driver_version: 580.159.04, memory_total_mib: 143771}
gpu_count:
  description: Number of GPUs found.
  returned: always
  type: int
driver_version:
  description: The userspace driver version; null when unknown.
  returned: always
  type: str
  sample: 580.159.04
cuda_version:
  description: Highest CUDA version the driver supports; null when unknown.
  returned: always
  type: str
  sample: "13.0"
kernel_module_version:
  description: The loaded kernel module's version; null when not readable.
  returned: always
  type: str
nvml_library_version:
  description: The NVML library version nvidia-smi reports on a driver/library mismatch; null otherwise.
  returned: always
  type: str
nvidia_smi_path:
  description: The nvidia-smi that was run; null when none was found.
  returned: always
  type: str
failure:
  description: >-
    Empty when GPUs were found, else V(not_found), V(no_driver), V(mismatch), V(no_devices), V(library_not_found),
    V(no_compute_cap) or V(failed).
  returned: always
  type: str
reason:
  description: Empty when GPUs were found; else why there are none and what to do.
  returned: always
  type: str
flash_attn_gate:
  description: C(ok), C(status) (V(ok), V(refused), V(skipped) without GPU, then C(ok) true), C(refused), C(message) ...
  returned: when O(flash_attn_major) is set
  type: dict
  sample:
    ok: false
    status: refused
    message: "flash-attn 4 needs compute capability >= 9.0 (SM 90), but GPU 0 (NVIDIA RTX A6000, compute capability 8.6) is below it"
tensor_parallel:
  description: The tensor-parallel check, as RV(flash_attn_gate).
  returned: when O(tensor_parallel_size) is set
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import gpu_info


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            kernel_module_version_path=dict(type="path", default="/proc/driver/nvidia/version"),
            flash_attn_major=dict(type="int", choices=[2, 3, 4]),
            tensor_parallel_size=dict(type="int"),
        ),
        supports_check_mode=True,
    )
    result, error = gpu_info(module)
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
