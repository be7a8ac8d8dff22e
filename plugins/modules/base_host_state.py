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
  - The base role hands the result to the P(inference.gpu_host.base_plan#filter) filter, which names the work left
    (C(docs/architecture.md), the rule of the house).
  - Read-only, apart from the host's run lock that O(lock) takes first in the same round trip (C(playbooks/site.yml)
    takes it so). Bad options fail with a message naming the option, before the lock is taken.
  - Runs on the controller as an action plugin that runs the collection's M(inference.gpu_host.host_state) module on
    the host (one module payload for every role's read and the lock).
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
  lock:
    description:
      - Take the host's run lock first, as M(inference.gpu_host.host_run_lock) takes it (the same record, waiting,
        stale-lock takeover and messages); the host is read only once this run holds the lock. Not taken in check
        mode (C(--check)), even with the task's C(check_mode=false). Release it with
        M(inference.gpu_host.host_run_lock) O(inference.gpu_host.host_run_lock#module:state=released).
      - RV(run_lock) says what was done.
    type: dict
    suboptions:
      state:
        description: Only V(acquired) here.
        type: str
        choices: [acquired]
        default: acquired
      path:
        description: The lock record on the host; absolute.
        type: path
        default: /run/inference-gpu-host/run.lock
      timeout:
        description: Seconds to wait for a lock held by another live run before failing; V(0) fails at once.
        type: int
        default: 0
      break_id:
        description: The id of a holder to take the lock from on purpose (the id the failure message names).
        type: str
        default: ""
      record:
        description: Set by the action plugin (this run's record); do not set it.
        type: dict
      takeover:
        description: Set by the action plugin (the id of the holder to replace); do not set it.
        type: str
        default: ""
      id:
        description: Set by the action plugin; not used here.
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
    paths: [/srv/models, /etc/security/limits.d/90-inference-gpu-host.conf]
    gpus: true
  register: base_state
"""

RETURN = r"""
run_lock:
  description: With O(lock), what M(inference.gpu_host.host_run_lock) returns (C(id), C(acquired), C(holder),
    C(taken_over), C(waited)); in check mode C(skipped) and C(msg).
  type: dict
  returned: when lock is given
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
