#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_run_lock
short_description: One converge, upgrade or rollback of a host at a time - take or release the host's run lock
version_added: "0.2.0"
description:
  - The lock is a JSON record at O(path) on the managed host (a tmpfs, so a reboot frees it) naming the run that holds
    it; C(playbooks/site.yml) takes it before the roles and releases it in an C(always) section.
  - O(state=acquired) takes a free lock, or a stale one of this controller; a holder on another controller is never
    assumed dead - the action waits up to O(timeout), then fails naming the holder and its id. O(state=released)
    removes the lock only when this run holds it. A corrupt lock entry fails naming it and its id.
  - An action plugin (the controller half) calls the module of the same name on the host. Staleness, the record and
    corrupt entries - C(docs/locking.md).
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: Check mode neither reads nor takes the lock.
  diff_mode:
    details: No diff - the lock is the run's bookkeeping, not configuration.
  idempotent:
    details: Taking and releasing report no change, so a second converge stays C(changed=0).
options:
  state:
    description: Take the lock (V(acquired)) or release it (V(released)).
    type: str
    choices: [acquired, released]
    default: acquired
  path:
    description: The lock record (absolute); its directory (C(0700), the module's user's) is made when absent.
    type: path
    default: /run/inference-gpu-host/run.lock
  timeout:
    description: Seconds to wait for a lock another live run holds; V(0) fails at once. At most 86400.
    type: int
    default: 0
  break_id:
    description: The id of a holder to take the lock from on purpose (the one a failure names); no other holder is replaced.
    type: str
    default: ""
  record:
    description: Set by the action plugin (this run's record).
    type: dict
  takeover:
    description: Set by the action plugin (the holder to replace).
    type: str
    default: ""
  id:
    description: Set by the action plugin (this run's id).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Converge while holding the host's run lock
  block:
    - name: Take the run lock
      inference.gpu_host.host_run_lock:
        timeout: 60
    - name: The roles
      ansible.builtin.import_role:
        name: inference.gpu_host.base
  always:
    - name: Release the run lock
      inference.gpu_host.host_run_lock:
        state: released
"""

RETURN = r"""
id:
  description: This run's id.
  returned: always
  type: str
  sample: ctl-a-48213-3f9a0c11d2
acquired:
  description: Whether this run holds the lock now.
  returned: when state is acquired
  type: bool
released:
  description: Whether this run's lock was removed (false when it held none).
  returned: when state is released
  type: bool
holder:
  description: The record (or corrupt entry) found before the action, or null.
  returned: always
  type: dict
taken_over:
  description: The holder replaced, or null.
  returned: when state is acquired
  type: dict
waited:
  description: Seconds spent waiting for another run.
  returned: when state is acquired
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import RunLockError, host_step


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="acquired", choices=["acquired", "released"]),
            path=dict(type="path", default="/run/inference-gpu-host/run.lock"),
            timeout=dict(type="int", default=0),
            break_id=dict(type="str", default=""),
            record=dict(type="dict"),
            takeover=dict(type="str", default=""),
            id=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    try:
        module.exit_json(**host_step(module.params, module.check_mode))
    except RunLockError as exc:
        module.fail_json(msg=str(exc))


if __name__ == "__main__":
    main()
