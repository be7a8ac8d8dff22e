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
  - Reads the packages' install status, the size of C(/dev/shm), the extra CA certificates in O(ca_dir), the role's
    record, the service account and group, and owner, group, mode and SHA-256 of O(paths).
  - The base role hands the result to the P(inference.gpu_host.base_plan#filter) filter (C(docs/architecture.md)).
  - Read-only, apart from the run lock O(lock) takes first in the same round trip. Bad options fail naming the option,
    before the lock is taken.
  - An action plugin runs the collection's M(inference.gpu_host.host_state) module on the host.
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
    description: The directory the role installs extra CA certificates into.
    type: path
    required: true
  record:
    description: The role's record (a JSON C(.fact) file); one that is not a regular file or not JSON reads as null, with a warning.
    type: path
    required: true
  user:
    description: The service account.
    type: str
    required: true
  group:
    description: The service group.
    type: str
    required: true
  paths:
    description: Paths to read owner, group, mode and content hash of.
    type: list
    elements: path
    default: []
  gpus:
    description: Also read the GPUs, as M(inference.gpu_host.nvidia_gpu_info) does (RV(gpu_info)).
    type: bool
    default: false
  lock:
    description:
      - Take the host's run lock first, as M(inference.gpu_host.host_run_lock) does; not in check mode. RV(run_lock)
        says what was done.
    type: dict
    suboptions:
      state:
        description: Only V(acquired) here.
        type: str
        choices: [acquired]
        default: acquired
      path:
        description: As for M(inference.gpu_host.host_run_lock).
        type: path
        default: /run/inference-gpu-host/run.lock
      timeout:
        description: As for M(inference.gpu_host.host_run_lock).
        type: int
        default: 0
      break_id:
        description: As for M(inference.gpu_host.host_run_lock).
        type: str
        default: ""
      record:
        description: Set by the action plugin.
        type: dict
      takeover:
        description: Set by the action plugin.
        type: str
        default: ""
      id:
        description: Set by the action plugin.
        type: str
        default: ""
"""

EXAMPLES = r"""
- name: Read the host's state
  inference.gpu_host.base_host_state:
    packages: [curl, git]
    ca_dir: /usr/local/share/ca-certificates/inference-gpu-host
    record: /etc/ansible/facts.d/inference_gpu_host_base.fact
    user: vllm
    group: vllm
    paths: [/srv/models]
    gpus: true
  register: base_state
"""

RETURN = r"""
run_lock:
  description: With O(lock), what M(inference.gpu_host.host_run_lock) returns; in check mode C(skipped) and C(msg).
  type: dict
  returned: when lock is given
packages:
  description: "{package: installed}."
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
  description: The role's record, null when absent or unreadable.
  type: dict
  returned: always
user:
  description: C(exists), and its primary group, home, shell and whether the home exists.
  type: dict
  returned: always
group:
  description: C(exists).
  type: dict
  returned: always
paths:
  description: "{path: {exists, isdir, owner, group, mode, sha256}}."
  type: dict
  returned: always
gpu_info:
  description: What M(inference.gpu_host.nvidia_gpu_info) returns.
  type: dict
  returned: when O(gpus=true)
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._host.base_state import ARGUMENT_SPEC
from ansible_collections.inference.gpu_host.plugins.module_utils._host.host_state import LOCK_OPTIONS, run


def main():
    module = AnsibleModule(argument_spec=dict(ARGUMENT_SPEC, lock=dict(type="dict", options=dict(
        LOCK_OPTIONS, state=dict(type="str", default="acquired", choices=["acquired"])))), supports_check_mode=True)
    params = dict(module.params)
    lock = params.pop("lock")
    out = run(module, {"base": params}, lock)
    module.exit_json(**dict(out.pop("base", {}), **out))


if __name__ == "__main__":
    main()
