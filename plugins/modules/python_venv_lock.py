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
  - Reads a lock/constraints file as C(uv pip compile) writes it (C(name==version) lines, C(--hash) continuation
    lines, comments, extras, environment markers, C(name @ url) pins) and the C(*.dist-info/METADATA) of every
    distribution installed in a venv, and reports which locked packages are missing or installed at another version.
  - Read-only and fast (no installer, no resolver, no subprocess), and the venv's Python is never run. A role runs it
    first and calls the installer only when RV(in_sync) is false; the drift check prints RV(differences).
  - Names are compared in PEP 503 form; versions by PEP 440 (a pin without a local label such as C(+cu130) accepts any).
    Markers are evaluated for the venv's Python (from its C(pyvenv.cfg)) on this node's platform.
  - Bad input fails with a message naming the option or file, before anything is compared. A broken
    C(direct_url.json) is ignored with a warning (it only says where a URL-pinned package came from); that package
    then differs from its C(name @ url) pin, so the role reinstalls it.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  venv:
    description:
      - Absolute path of the venv on the managed node, or directly its C(site-packages) directory.
    type: path
    required: true
  lock:
    description:
      - Absolute path of the lock file on the managed node (UTF-8 text, at most 16 MiB).
      - Every requirement must be an exact pin (C(==), C(===)) or a C(name @ url); option lines (C(-r), C(--index-url),
        C(-e) ...) are skipped.
    type: path
    required: true
  exact:
    description:
      - The venv must hold the lock's packages and nothing else (sync semantics) - an installed package the lock does
        not name (for example installed by hand) is in RV(unexpected) and in RV(differences), and RV(in_sync) is false.
      - C(flash-attn) and C(flash-attn-4) are left to M(inference.gpu_host.flash_attn_guard).
    type: bool
    default: false
  keep:
    description: With O(exact), packages that may be installed although the lock does not name them (any spelling).
    type: list
    elements: str
    default: []
attributes:
  diff_mode:
    details: RV(differences) lists what differs from the lock.
notes:
  - See C(docs/bad-input.md) in the collection for what bad input gets (lock files that are binary, too large or hold
    control characters, METADATA that is not UTF-8).
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
  description: True when every locked package that applies to this venv is installed at its locked version.
    Packages installed but not locked (RV(extra)) do not count.
  returned: always
  type: bool
  sample: false
differences:
  description:
    - One entry per locked package that is missing or installed at another version, sorted by name.
    - RV(differences[].installed) is null for a missing package.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Package name, PEP 503 normalised.
      type: str
      sample: six
    locked:
      description: The locked version, or the URL of a C(name @ url) pin; null for an unexpected package.
      type: str
      sample: 1.16.0
    installed:
      description: The installed version (for a URL pin, the version and the URL it came from), or null.
      type: str
      sample: 1.17.0
  sample: [{name: six, locked: 1.16.0, installed: 1.17.0}, {name: idna, locked: "3.7", installed: null}]
missing:
  description: Names of locked packages that are not installed.
  returned: always
  type: list
  elements: str
  sample: [idna]
unexpected:
  description: With O(exact), the installed packages the lock does not name that O(keep) does not allow.
  returned: always
  type: list
  elements: dict
  sample: [{name: six, installed: 1.17.0}]
extra:
  description: Installed packages that the lock does not list (informational).
  returned: always
  type: list
  elements: dict
  sample: [{name: pip, installed: 24.0}]
site_packages:
  description: The site-packages directory that was read.
  returned: always
  type: str
  sample: /root/ml-env/lib/python3.12/site-packages
locked_count:
  description: How many lock entries apply to this venv (after markers).
  returned: always
  type: int
  sample: 109
installed_count:
  description: How many distributions are installed.
  returned: always
  type: int
  sample: 112
warnings:
  description: Broken optional files that were ignored (a C(direct_url.json) that cannot be read), as Ansible warnings.
  returned: when there is something to warn about
  type: list
  elements: str
  sample:
    - "/root/ml-env/lib/python3.12/site-packages/x-1.0.dist-info/direct_url.json: ignored, expected a JSON object
      with \"url\", got list"
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
