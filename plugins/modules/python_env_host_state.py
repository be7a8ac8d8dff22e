#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: python_env_host_state
short_description: Read, in one call, the venv state the python_env role manages
version_added: 0.1.0
description:
  - Reads the versions of the venv's Python and of uv, the venv link and its generations (as
    M(inference.gpu_host.venv_generation) plans them), the wanted generation's lock and expected package set, the
    venv against that set (as M(inference.gpu_host.python_venv_lock) with O(ignore:exact=true)), the owners of
    C(flash_attn) (as M(inference.gpu_host.flash_attn_guard)), the installed vLLM and the role's record.
  - The role hands the result to the P(inference.gpu_host.python_env_plan#filter) filter; when it is C(settled) the run
    skips every install, check and write (C(docs/generations.md)).
  - Read-only; runs O(python) and O(uv) with C(--version)-like arguments only. Bad options fail naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host.venv.GENERATIONS
options:
  lock:
    description: The lock file's text, as placed in the generation (C(lock.txt)).
    type: str
    required: true
  expected:
    description: C(expected.txt) as the role writes it (the lock plus the flash-attn pin). Defaults to O(requirements).
    type: str
  python:
    description: The Python the venv is made with (C(python_env_python)).
    type: str
    required: true
  state_subdir:
    description: The role's state directory inside a generation (C(python_env_state_dir)), relative.
    type: str
    default: .inference-gpu-host
  uv:
    description: The uv the role installs (absolute); empty for pip.
    type: str
    default: ""
  uv_cache_dir:
    description: The uv cache directory.
    type: str
    default: ""
  keep_packages:
    description: Packages the venv may hold although the lock does not name them (C(python_env_keep_packages)).
    type: list
    elements: str
    default: []
  flash_attn:
    description: Whether the role manages C(flash_attn) (installs flash-attn 2 or guards); its owners are read then.
    type: bool
    default: false
  record:
    description: The role's record (C(python_env_local_facts_file)); unreadable reads as null, with a warning.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Read the venv's state
  inference.gpu_host.python_env_host_state:
    venv_dir: /root/ml-env
    requirements: "{{ lookup('ansible.builtin.file', 'vllm-0.20.1.lock.txt') }}"
    lock: "{{ lookup('ansible.builtin.file', 'vllm-0.20.1.lock.txt') }}"
    python: /usr/bin/python3
    uv: /opt/inference-gpu-host/tools/bin/uv
    record: /etc/ansible/facts.d/inference_gpu_host_python_env.fact
  register: python_env_state
"""

RETURN = r"""
python_version:
  description: The full version O(python) printed.
  type: str
  returned: always
uv_version:
  description: The version of O(uv), empty when absent or not used.
  type: str
  returned: always
generation:
  description: What M(inference.gpu_host.venv_generation) returns for O(inference.gpu_host.venv_generation#module:action=plan).
  type: dict
  returned: always
paths:
  description: "C(uv_cache_dir), C(generations_dir), C(state_dir): {exists, isdir, owner, group, mode}."
  type: dict
  returned: always
venv_python:
  description: The wanted generation has C(bin/python).
  type: bool
  returned: always
complete:
  description: The wanted generation passed its checks once (C(generation.json)).
  type: bool
  returned: always
lock_same:
  description: The generation's C(lock.txt) holds exactly O(lock).
  type: bool
  returned: always
expected_same:
  description: The generation's C(expected.txt) names the same requirements as O(expected).
  type: bool
  returned: always
venv:
  description: C(in_sync), C(missing), C(mismatched), C(unexpected).
  type: dict
  returned: always
flash_attn:
  description: C(state) (C(ok), C(absent), C(conflict), C(unknown) when not read), C(version), C(damaged) (a count).
  type: dict
  returned: always
vllm:
  description: C(installed) and, as M(inference.gpu_host.vllm_version_info) returns them, C(version) ... C(entry_point).
  type: dict
  returned: always
record:
  description: The role's record, null when absent or unreadable.
  type: dict
  returned: always
record_prev:
  description: The record's rollback copy C(<record>.prev) exists.
  type: bool
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import ARGUMENT_SPEC, module_result


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**module_result(module))


if __name__ == "__main__":
    main()
