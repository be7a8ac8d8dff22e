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
  - Reads what one role manages exactly as that role's own module does - O(base) as M(inference.gpu_host.base_host_state),
    O(python_env) as M(inference.gpu_host.python_env_host_state), O(drafter) as M(inference.gpu_host.drafter_host_state),
    O(vllm_service) as M(inference.gpu_host.vllm_service_host_state) (same options, same result) - after taking or
    releasing the run lock (O(lock)) as M(inference.gpu_host.host_run_lock) does, in the same round trip.
  - Those modules' action plugins run this one, so that Ansible builds one module payload per run, not one per role
    (C(BENCHMARKS.md), issue 37); the roles call them by their own names.
  - Read-only apart from the lock, which check mode neither reads nor takes. Bad options fail naming the read and the
    option, before the lock is taken.
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
    description: Small text files to read (the drift check's benchmark records), returned in RV(texts).
    type: list
    elements: path
  lock:
    description: Take or release the host's run lock first, with the options of M(inference.gpu_host.host_run_lock).
    type: dict
    suboptions:
      state:
        description: V(acquired) or V(released).
        type: str
        choices: [acquired, released]
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
notes:
  - At most one of O(base), O(python_env), O(drafter) and O(vllm_service) per call.
"""

EXAMPLES = r"""
- name: Take the run lock and read the base role's state in one round trip
  inference.gpu_host.host_state:
    lock:
      timeout: 60
    base:
      ca_dir: /usr/local/share/ca-certificates/inference-gpu-host
      record: /etc/ansible/facts.d/inference_gpu_host_base.fact
      user: vllm
      group: vllm
  register: base_state
  check_mode: false
"""

RETURN = r"""
run_lock:
  description: With O(lock), what M(inference.gpu_host.host_run_lock) returns; in check mode C(skipped) and C(msg).
  returned: when lock is given
  type: dict
texts:
  description: The text of each of O(texts) (at most 1 MiB); empty for a file missing, unreadable or not regular.
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
