# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: base_host_state
short_description: Read, in one call, the host state the base role manages
version_added: 0.1.0
description:
  - Reads the Debian packages' install status, the size of C(/dev/shm), the SHA-256 of the extra CA
    certificates in O(ca_dir) (with owner, group and mode), the base role's record (a local fact, JSON), the service account and group,
    and owner, group, mode and (for regular files) SHA-256 of the given paths.
  - The base role hands the result to the P(inference.gpu_host.base_plan#filter) filter, which names the
    work left, so that a run with nothing to change makes no other round trip.
  - Read-only. Bad options fail with a message naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  packages:
    description: Debian packages whose status to read (C(python3-apt) is always read too).
    type: list
    elements: str
    default: []
  ca_dir:
    description: Absolute path of the directory the role installs extra CA certificates into.
    type: path
    required: true
  record:
    description:
      - Absolute path of the role's record (a C(.fact) file holding a JSON object).
      - Read only when it is a regular file, at most 16 MiB and 64 levels of JSON (a FIFO or a device there is
        never read, so it cannot block); otherwise the record is null and a warning names the file.
    type: path
    required: true
  user:
    description: The service account to read.
    type: str
    required: true
  group:
    description: The service group to read.
    type: str
    required: true
  paths:
    description: Absolute paths to read owner, group, mode and content hash of.
    type: list
    elements: path
    default: []
  gpus:
    description:
      - Also read the GPUs, as M(inference.gpu_host.nvidia_gpu_info) does with its defaults (C(gpu_info)), so that
        a run with nothing to change makes one round trip.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read the host's state
  inference.gpu_host.base_host_state:
    packages: [curl, git]
    ca_dir: /usr/local/share/ca-certificates/inference-gpu-host
    record: /etc/ansible/facts.d/inference_gpu_host_base.fact
    user: vllm
    group: vllm
    paths: [/srv/models, /etc/security/limits.d/90-inference-gpu-host.conf]
    gpus: true
  register: base_state
"""

RETURN = r"""
packages:
  description: "{package: installed} for O(packages) and C(python3-apt)."
  type: dict
  returned: always
shm_mib:
  description: Size of C(/dev/shm) in MiB, null when it cannot be read.
  type: int
  returned: always
ca_files:
  description: "{file name: {exists, isdir, owner, group, mode, sha256}} of the C(.crt) files in O(ca_dir)."
  type: dict
  returned: always
record:
  description: The role's record, null when absent or unreadable (a warning says why).
  type: dict
  returned: always
user:
  description: exists, and when it does its primary group, home, shell and whether the home exists.
  type: dict
  returned: always
group:
  description: exists.
  type: dict
  returned: always
paths:
  description: "{path: {exists, isdir, owner, group, mode, sha256}}; sha256 for regular files only."
  type: dict
  returned: always
gpu_info:
  description: What M(inference.gpu_host.nvidia_gpu_info) returns (gpu_count, gpus, reason, driver_version, ...).
  type: dict
  returned: when O(gpus=true)
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._host.base_state import BaseStateError, host_state


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            ca_dir=dict(type="path", required=True),
            record=dict(type="path", required=True),
            user=dict(type="str", required=True),
            group=dict(type="str", required=True),
            paths=dict(type="list", elements="path", default=[]),
            gpus=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    try:
        module.exit_json(**host_state(module))
    except BaseStateError as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
