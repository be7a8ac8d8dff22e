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
  - The lock is a JSON record at O(path) on the managed host (a tmpfs, so a reboot frees it) naming the run that
    holds it. C(playbooks/site.yml) takes it before the roles and releases it in an C(always) section.
  - O(state=acquired) takes a free lock, or a stale one of this controller (its C(ansible-playbook) and every task
    worker gone); a holder on another controller is never assumed dead - the action waits up to O(timeout) seconds,
    then fails naming the holder and its id, which O(break_id) takes over on purpose. O(state=released) removes the
    lock only when this run holds it.
  - A lock path that is not a run-lock record (a symbolic link, a FIFO, a directory, garbage) fails naming it and the
    id O(break_id) takes to replace it.
  - Runs on the controller as an action plugin that calls the module of the same name on the host. When a lock is
    stale, what is read and how a corrupt entry is handled - C(docs/locking.md) in the collection; the decisions are
    in C(plugins/module_utils/_host/run_lock.py).
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: Check mode neither reads nor takes the lock (a drift check never needs it).
  diff_mode:
    details: No diff - the lock is the run's bookkeeping, not configuration.
  idempotent:
    details:
      - Taking and releasing report no change - a run leaves the host as it found it (the lock taken at its start is
        released at its end), so a second converge stays C(changed=0).
options:
  state:
    description: Take the lock (V(acquired)) or release it (V(released)).
    type: str
    choices: [acquired, released]
    default: acquired
  path:
    description:
      - The lock record on the host; absolute. Its directory is made (mode C(0700)) when absent and must belong to the
        user the module runs as and not be writable by group or others.
    type: path
    default: /run/inference-gpu-host/run.lock
  timeout:
    description:
      - Seconds to wait for a lock held by another live run before failing; V(0) fails at once. At most 86400.
    type: int
    default: 0
  break_id:
    description:
      - The id of a holder to take the lock from on purpose (the id the failure message names) - a run of another
        controller known to be gone, or a corrupt lock entry. Only that holder is replaced; a lock held by anything
        else is not.
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
    description: Set by the action plugin (this run's id, for O(state=released)); do not set it.
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
  description: This run's id (the one a second run's failure names, and O(break_id) takes).
  returned: always
  type: str
  sample: ctl-a-48213-3f9a0c11d2
acquired:
  description: With O(state=acquired), whether this run holds the lock now.
  returned: when state is acquired
  type: bool
released:
  description: With O(state=released), whether this run's lock was removed (false when it held none).
  returned: when state is released
  type: bool
holder:
  description: The record (or corrupt entry, C(corrupt) and C(id)) found at O(path) before the action, or null.
  returned: always
  type: dict
taken_over:
  description: The holder replaced (a dead run of this controller, or the one O(break_id) named), or null.
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
