#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_state
short_description: One round trip for the roles - the host's run lock and one role's state read
version_added: "0.2.0"
description:
  - Reads what one role manages, exactly as that role's own module does - O(base) as
    M(inference.gpu_host.base_host_state), O(python_env) as M(inference.gpu_host.python_env_host_state), O(drafter) as
    M(inference.gpu_host.drafter_host_state), O(vllm_service) as M(inference.gpu_host.vllm_service_host_state) (the
    same options, checked against the same specification, the same result) - and returns that result as its own.
  - With O(lock), first takes or releases the host's run lock as M(inference.gpu_host.host_run_lock) does (the same
    record, waiting, stale-lock takeover and messages), in the same round trip. A read asked with O(lock) runs only
    once the lock is held; a lock held by another run is waited for, then the task fails naming the holder.
  - The action plugins of those modules and of M(inference.gpu_host.host_run_lock) run this module on the host, so that
    Ansible builds one module payload per run, not one per role (C(BENCHMARKS.md), issue 37). The roles call those
    modules by their own names.
  - Read-only apart from the lock; the lock is neither read nor taken in check mode (C(--check)), even where the task
    runs with C(check_mode=false) to read the host. Bad options fail naming the read and the option, before the lock
    is taken.
  - Runs on the controller as an action plugin (the lock's controller half) that calls the module of the same name.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: The reads run the same in check mode; the lock is neither read nor taken then.
options:
  base:
    description: The options of M(inference.gpu_host.base_host_state).
    type: dict
  python_env:
    description: The options of M(inference.gpu_host.python_env_host_state).
    type: dict
  drafter:
    description: The options of M(inference.gpu_host.drafter_host_state).
    type: dict
  vllm_service:
    description: The options of M(inference.gpu_host.vllm_service_host_state).
    type: dict
  texts:
    description:
      - Absolute paths of small text files to read (the drift check's benchmark records), returned in RV(texts).
    type: list
    elements: path
  lock:
    description:
      - Take (O(lock.state=acquired)) or release (V(released)) the host's run lock first, as
        M(inference.gpu_host.host_run_lock) with the same options.
    type: dict
    suboptions:
      state:
        description: Take the lock (V(acquired)) or release it (V(released)).
        type: str
        choices: [acquired, released]
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
        description: Set by the action plugin (this run's id, for O(lock.state=released)); do not set it.
        type: str
        default: ""
notes:
  - At most one of O(base), O(python_env), O(drafter) and O(vllm_service) per call.
"""

EXAMPLES = r"""
- name: Take the run lock and read the base role's state in one round trip
  inference.gpu_host.host_state:
    lock:
      timeout: 60
    base:
      packages: [curl]
      ca_dir: /usr/local/share/ca-certificates/inference-gpu-host
      record: /etc/ansible/facts.d/inference_gpu_host_base.fact
      user: vllm
      group: vllm
  register: base_state
  check_mode: false

- name: Release the run lock
  inference.gpu_host.host_state:
    lock:
      state: released
"""

RETURN = r"""
run_lock:
  description:
    - With O(lock), what M(inference.gpu_host.host_run_lock) returns (C(id), C(acquired) or C(released), C(holder),
      C(taken_over), C(waited)); in check mode C(skipped) and C(msg).
  returned: when lock is given
  type: dict
texts:
  description:
    - With O(texts), the text of each file in their order, at most 1 MiB of it; an empty string for a file that is
      missing, unreadable or not a regular file (a FIFO is never opened for long, so it cannot block the read).
  returned: when texts is given
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._host.host_state import LOCK_OPTIONS, READS, module_main


def main():
    module = AnsibleModule(
        argument_spec=dict(dict((name, dict(type="dict")) for name in READS), lock=dict(type="dict", options=LOCK_OPTIONS),
                           texts=dict(type="list", elements="path")),
        mutually_exclusive=[list(READS)],
        supports_check_mode=True,
    )
    module.exit_json(**module_main(module))


if __name__ == "__main__":
    main()
