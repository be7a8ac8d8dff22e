#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: python_venv_lock
short_description: Compare a venv with a lock file, reading files only
version_added: "0.1.0"
description:
  - Reads a lock file as C(uv pip compile) writes it (pins, C(--hash) lines, extras, markers, C(name @ url)) and the
    C(METADATA) of every distribution in a venv, and reports which locked packages are missing or at another version.
  - Runs no installer, resolver or subprocess, and never the venv's Python. Names compare in PEP 503 form, versions by
    PEP 440 (a pin without a local label such as C(+cu130) accepts any); markers are evaluated for the venv's Python.
  - Bad input fails naming the option or file (C(docs/bad-input.md)). A broken C(direct_url.json) is ignored with a
    warning; that package then differs from its C(name @ url) pin and is reinstalled.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  venv:
    description: The venv on the managed node (absolute), or its C(site-packages) directory.
    type: path
    required: true
  lock:
    description:
      - The lock file on the managed node (absolute, UTF-8, at most 16 MiB); every requirement an exact pin (C(==),
        C(===)) or a C(name @ url). Option lines (C(-r), C(--index-url) ...) are skipped.
    type: path
    required: true
  exact:
    description:
      - The venv must hold the lock's packages and nothing else; an unlocked package is in RV(unexpected). C(flash-attn)
        and C(flash-attn-4) are left to M(inference.gpu_host.flash_attn_guard).
    type: bool
    default: false
  keep:
    description: With O(exact), packages that may be installed although the lock does not name them.
    type: list
    elements: str
    default: []
attributes:
  diff_mode:
    details: RV(differences) lists what differs from the lock.
seealso:
  - module: inference.gpu_host.flash_attn_guard
"""

EXAMPLES = r"""
- name: Compare the venv with the lock
  inference.gpu_host.python_venv_lock:
    venv: /root/ml-env
    lock: /root/ml-env.lock
  register: python_env_lock_state

- name: Install from the lock only when the venv differs
  ansible.builtin.command:
    cmd: uv pip sync --python /root/ml-env/bin/python /root/ml-env.lock
  when: not python_env_lock_state.in_sync
  changed_when: true
"""

RETURN = r"""
in_sync:
  description: Every locked package that applies is installed at its version (and, with O(exact), nothing else).
  returned: always
  type: bool
  sample: false
differences:
  description: One C(name), C(locked), C(installed) (null when missing) per package that differs, sorted by name.
  returned: always
  type: list
  elements: dict
  sample: [{name: six, locked: 1.16.0, installed: 1.17.0}, {name: idna, locked: "3.7", installed: null}]
missing:
  description: Locked packages that are not installed.
  returned: always
  type: list
  elements: str
unexpected:
  description: With O(exact), installed packages the lock does not name and O(keep) does not allow.
  returned: always
  type: list
  elements: dict
extra:
  description: Installed packages the lock does not list (informational).
  returned: always
  type: list
  elements: dict
site_packages:
  description: The site-packages directory read.
  returned: always
  type: str
locked_count:
  description: How many lock entries apply to this venv.
  returned: always
  type: int
installed_count:
  description: How many distributions are installed.
  returned: always
  type: int
warnings:
  description: Broken optional files that were ignored.
  returned: when there is something to warn about
  type: list
  elements: str
msg:
  description: One sentence on the outcome.
  returned: always
  type: str
  sample: venv /root/ml-env differs from /root/ml-env.lock in 2 package(s)
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import lock_step


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            lock=dict(type="path", required=True),
            exact=dict(type="bool", default=False),
            keep=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    outcome = lock_step(module.params)
    for warning in outcome["warnings"]:
        module.warn(warning)
    if outcome["failed"]:
        module.fail_json(**outcome["result"])
    module.exit_json(**outcome["result"])


if __name__ == "__main__":
    main()
