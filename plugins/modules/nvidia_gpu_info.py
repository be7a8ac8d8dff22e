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
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv,noheader,nounits)
    and plain C(nvidia-smi) (for the CUDA version), and reads the kernel module version from C(/proc/driver/nvidia/version).
  - Returns the GPUs with their compute capability as numbers, the driver and CUDA versions and the GPU count.
  - On a host without NVIDIA (no C(nvidia-smi), no driver loaded, driver/library mismatch, no GPU) it returns an
    empty RV(gpus) list and a sentence in RV(reason); it never fails for that.
  - Optionally answers whether a flash-attn major version may be installed for these GPUs (O(flash_attn_major))
    and whether a tensor-parallel size fits them (O(tensor_parallel_size)); the answers are returned, the caller
    decides (a role asserts on C(flash_attn_gate.ok)).
  - Read-only. Bad options fail before C(nvidia-smi) runs, with a message naming the option.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  nvidia_smi_path:
    description:
      - Absolute path of the C(nvidia-smi) executable.
      - When not set, C(nvidia-smi) is looked up on E(PATH) (and in C(/usr/bin), C(/usr/local/bin), C(/usr/sbin)).
    type: path
  kernel_module_version_path:
    description:
      - Absolute path of the file that holds the loaded NVIDIA kernel module's version.
      - Read when it is a readable regular file (its first 64 KiB); inside an LXC container it shows the Proxmox
        node's module, which is what a driver/library mismatch is measured against.
    type: path
    default: /proc/driver/nvidia/version
  flash_attn_major:
    description:
      - When set, RV(flash_attn_gate) tells whether this flash-attn major version suits every GPU
        (flash-attn 2 needs compute capability 8.0 or newer, flash-attn 3 and 4 need 9.0 or newer).
    type: int
    choices: [2, 3, 4]
  tensor_parallel_size:
    description:
      - When set, RV(tensor_parallel) tells whether this tensor-parallel size fits the GPU count. At least 1.
    type: int
notes:
  - Compute capability needs the C(compute_cap) query field of newer drivers; an older C(nvidia-smi) is reported in RV(reason).
  - See C(docs/bad-input.md) in the collection for what bad input gets.
seealso:
  - name: nvidia-smi documentation
    description: The query fields and exit codes.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Read the GPUs
  inference.gpu_host.nvidia_gpu_info:
  register: __gpu

- name: Refuse flash-attn 4 on GPUs older than Hopper
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
  description: The GPUs, in nvidia-smi's index order; empty when there is none (see RV(reason)).
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: nvidia-smi's GPU index.
      type: int
      sample: 0
    name:
      description: Product name.
      type: str
      sample: NVIDIA H200
    uuid:
      description: GPU UUID.
      type: str
      sample: GPU-35975a73-7769-4d54-c326-097dbcf602f8
    compute_capability:
      description: Compute capability as C(major.minor); null when nvidia-smi reports N/A.
      type: str
      sample: "9.0"
    compute_capability_major:
      description: Major part of the compute capability.
      type: int
      sample: 9
    compute_capability_minor:
      description: Minor part of the compute capability.
      type: int
      sample: 0
    driver_version:
      description: Driver version nvidia-smi reports for this GPU.
      type: str
      sample: 580.159.04
    memory_total_mib:
      description: Total GPU memory in MiB.
      type: int
      sample: 143771
gpu_count:
  description: Number of GPUs found.
  returned: always
  type: int
  sample: 1
driver_version:
  description: NVIDIA driver version (userspace, as nvidia-smi reports it); null when unknown.
  returned: always
  type: str
  sample: 580.159.04
cuda_version:
  description: Highest CUDA version the driver supports, from nvidia-smi's header; null when unknown.
  returned: always
  type: str
  sample: "13.0"
kernel_module_version:
  description: Version of the loaded NVIDIA kernel module from O(kernel_module_version_path); null when not readable.
  returned: always
  type: str
  sample: 580.159.04
nvml_library_version:
  description: Userspace NVML library version, reported by nvidia-smi on a driver/library mismatch; null otherwise.
  returned: always
  type: str
  sample: "535.161"
nvidia_smi_path:
  description: The nvidia-smi that was run; null when none was found.
  returned: always
  type: str
  sample: /usr/bin/nvidia-smi
failure:
  description:
    - Empty when GPUs were found, else one of V(not_found), V(no_driver), V(mismatch), V(no_devices),
      V(library_not_found), V(no_compute_cap), V(failed).
  returned: always
  type: str
  sample: mismatch
reason:
  description: Empty when GPUs were found; otherwise a sentence saying why there are none and what to do.
  returned: always
  type: str
  sample: "nvidia-smi was not found on PATH: no NVIDIA userspace driver is installed on this host (or nvidia_smi_path points elsewhere)"
flash_attn_gate:
  description:
    - The flash-attn check for O(flash_attn_major).
    - C(status) is V(ok), V(refused) (C(message) names each GPU below the minimum and its compute capability)
      or V(skipped) (no GPU; C(ok) is then true).
  returned: when O(flash_attn_major) is set
  type: dict
  sample:
    ok: false
    status: refused
    skipped: false
    flash_attn_major: 4
    min_compute_capability: "9.0"
    refused: [{index: 0, name: NVIDIA RTX A6000, compute_capability: "8.6"}]
    message: "flash-attn 4 needs compute capability >= 9.0 (SM 90), but GPU 0 (NVIDIA RTX A6000, compute capability 8.6) is below it"
tensor_parallel:
  description: The tensor-parallel check for O(tensor_parallel_size); C(status) as in RV(flash_attn_gate).
  returned: when O(tensor_parallel_size) is set
  type: dict
  sample:
    ok: true
    status: ok
    skipped: false
    tensor_parallel_size: 2
    gpu_count: 2
    message: tensor_parallel_size 2 fits the 2 GPUs of this host
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
