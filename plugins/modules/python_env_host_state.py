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
  - Reads the version of the Python the venv is made with and of the installed uv, the venv link and its generations
    (what M(inference.gpu_host.venv_generation) plans), the wanted generation's placed lock and expected package set,
    the venv against that set exactly (as M(inference.gpu_host.python_venv_lock) with O(ignore:exact=true) does),
    the owners of C(flash_attn) (as M(inference.gpu_host.flash_attn_guard) sees them), the installed vLLM (as
    M(inference.gpu_host.vllm_version_info) describes it) and the role's record.
  - The python_env role hands the result to the P(inference.gpu_host.python_env_plan#filter) filter; when it says
    C(settled), a run with nothing to change skips every install, check and write (C(docs/generations.md)).
  - Read-only; it runs O(python) and O(uv) with C(--version)-like arguments only. Bad options fail naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host.venv.GENERATIONS
options:
  lock:
    description: The lock file's text, as the role places it in the generation (C(lock.txt)).
    type: str
    required: true
  expected:
    description: C(expected.txt) as the role writes it (the lock plus the flash-attn pin); its requirement lines are
      compared with the generation's. Defaults to O(requirements).
    type: str
  python:
    description: The Python the venv is made with (C(python_env_python), a path or a command name); the module
      prints its version.
    type: str
    required: true
  state_subdir:
    description: The role's state directory inside a generation, relative to it (C(python_env_state_dir)).
    type: str
    default: .inference-gpu-host
  uv:
    description: Absolute path of the uv the role installs; its version is read when it exists. Empty for pip.
    type: str
    default: ""
  uv_cache_dir:
    description: The uv cache directory (owner, group and mode are read).
    type: str
    default: ""
  keep_packages:
    description: Packages the venv may hold although the lock does not name them (C(python_env_keep_packages)).
    type: list
    elements: str
    default: []
  flash_attn:
    description:
      - Whether the role manages C(flash_attn) - installs flash-attn 2, or guards against flash-attn-4 where it does
        not (C(python_env_flash_attn_enabled), the C(flash_attn_choice) of P(inference.gpu_host.vllm_version_table#filter));
        its owners are read then.
    type: bool
    default: false
  record:
    description:
      - Absolute path of the role's record (C(python_env_local_facts_file)).
      - Read only when it is a regular file, at most 16 MiB and 64 levels of JSON (a FIFO or a device there is
        never read, so it cannot block); otherwise the record is null and a warning names the file.
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
  description: What M(inference.gpu_host.venv_generation) with O(inference.gpu_host.venv_generation#module:action=plan)
    returns (C(wanted), C(wanted_dir), C(serving_dir), C(adopt), C(build), C(switch), C(prune), C(refuse), C(disk) ...).
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
  description: C(in_sync) (the venv holds exactly the expected set), C(missing), C(mismatched), C(unexpected).
  type: dict
  returned: always
flash_attn:
  description: C(state) (C(ok), C(absent), C(conflict), C(unknown) when not read), C(version), C(damaged) (a count).
  type: dict
  returned: always
vllm:
  description: C(installed); when installed C(version), C(distribution), C(behaviour), C(known_problems) and
    C(entry_point) as M(inference.gpu_host.vllm_version_info) returns them.
  type: dict
  returned: always
record:
  description: The role's record, null when absent or unreadable.
  type: dict
  returned: always
record_prev:
  description: The record's rollback copy C(<record>.prev) exists (left by a run that switched; the role removes a
    stale one).
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
