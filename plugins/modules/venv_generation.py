#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: venv_generation
short_description: Versioned venvs behind one link - plan, adopt, switch and prune generations
version_added: "0.1.0"
description:
  - O(venv_dir) is a symbolic link to C(<venv_dir>.generations/<name>), the generation that serves; each generation
    is a venv made from one lock with one Python, named C(<distribution>-<version>-py<X.Y>-<sha12>) from the lock's
    requirement lines and the Python version (C(docs/generations.md) in the collection).
  - O(action=plan) reads the host and says what a run does (adopt, build, switch, prune, the free-space check, a
    generation that failed readiness before); it changes nothing. O(action=create) makes the wanted generation's
    directory with the collection's mark in it (C(.inference-gpu-host/created.json), holding a token of this call)
    before anything is built there. O(action=adopt) moves a plain venv directory found at O(venv_dir) into the
    generations directory, marked, and links it (never deletes it); a directory without C(pyvenv.cfg) and
    C(bin/python) is refused. O(action=switch) points the link at the wanted generation atomically (a new link
    renamed over the old one), and refuses one that does not exist, is not marked or has no C(bin/python) (the link
    stays as it is). O(action=prune) deletes old generations beyond O(keep), never the one serving, the wanted one,
    a protected one, or one a running process was started from. O(action=discard) removes the wanted generation
    when O(token) is the one O(action=create) returned (a failed build's half-built generation), unless it passed
    its checks, serves or runs.
  - Only marked generations are ever deleted; everything else in the generations directory is listed in
    RV(ignored), and a generations directory that is a symbolic link is refused (C(docs/generations.md), Layout).
  - The decisions are in C(plugins/module_utils/_venv/generations.py), the changes in
    C(plugins/module_utils/_venv/generation_actions.py).
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host.venv.GENERATIONS
attributes:
  check_mode:
    details: O(action=plan) changes nothing; the other actions report what they would do and do nothing.
  diff_mode:
    details: The link's target before and after (O(action=adopt), O(action=switch)), the generations before and after
      (O(action=prune)).
options:
  python_version:
    description: The full version of the Python the generation is made with (C(3.11.2)).
    type: str
    required: true
  action:
    description: What to do.
    type: str
    choices: [plan, create, adopt, switch, prune, discard]
    default: plan
  protect:
    description:
      - Generations O(action=prune) never deletes besides the serving and the wanted one - the role passes the one
        that served before this run's switch, the rollback target until the new one is ready.
      - Each item is a generation's name or its absolute directory inside the generations directory; empty items are
        skipped; anything else (a path elsewhere, C(..), a name with C(/)) fails naming the item.
    type: list
    elements: str
    default: []
  token:
    description: With O(action=discard), the token O(action=create) returned in this run.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Create the new generation's directory, marked as the collection's
  inference.gpu_host.venv_generation:
    venv_dir: /root/ml-env
    requirements: "{{ lookup('ansible.builtin.file', 'vllm-0.33.0.lock.txt') }}"
    python_version: 3.11.2
    action: create
  register: created

- name: Plan the generations of /root/ml-env
  inference.gpu_host.venv_generation:
    venv_dir: /root/ml-env
    requirements: "{{ lookup('ansible.builtin.file', 'vllm-0.33.0.lock.txt') }}"
    python_version: 3.11.2
  register: plan
"""

RETURN = r"""
wanted:
  description: The name of this run's generation.
  returned: always
  type: str
  sample: vllm-0.33.0-py3.11-3f2a9c01b7de
wanted_dir:
  description: Its directory.
  returned: always
  type: str
  sample: /root/ml-env.generations/vllm-0.33.0-py3.11-3f2a9c01b7de
generations_dir:
  description: Where the generations live (C(<venv_dir>.generations)).
  returned: always
  type: str
serving:
  description: The generation the link points at before this action (empty on a blank host).
  returned: always
  type: str
serving_dir:
  description: Its directory (the adopted venv's new place with O(action=plan) on a plain directory).
  returned: always
  type: str
adopt:
  description: O(venv_dir) is a plain directory that is (or would be) adopted.
  returned: always
  type: bool
build:
  description: The wanted generation has not passed its checks yet (it is built or completed in this run).
  returned: always
  type: bool
switch:
  description: The link does not point at the wanted generation yet.
  returned: always
  type: bool
prune:
  description: Generations deleted (or, with O(action=plan), deleted after a switch).
  returned: always
  type: list
  elements: str
in_use:
  description: Generations a running process was started from (never pruned).
  returned: always
  type: list
  elements: str
disk:
  description: The free-space check (C(ok), C(free) and C(need) in bytes, C(msg) when not ok).
  returned: always
  type: dict
refuse:
  description: Why a real run must not switch (the wanted generation failed readiness before), or empty.
  returned: always
  type: str
failed_record:
  description: The wanted generation's C(failed.json) (cause, time, unit), or null.
  returned: always
  type: dict
previous:
  description: With O(action=switch), the directory the link pointed at before.
  returned: when action is switch
  type: str
ignored:
  description: Entries of the generations directory that are not the collection's generations (never touched), each
    with C(name) and C(why).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "lost+found", "why": "not a generation name"}]
created:
  description: With O(action=create), this call made the directory.
  returned: when action is create
  type: bool
token:
  description: With O(action=create), the token written into the new generation's C(created.json) (for O(action=discard)).
  returned: when action is create and a directory was made
  type: str
removed:
  description: With O(action=prune), the generations actually deleted (on a failure part-way, those deleted before it).
  returned: when action is prune, not in check mode
  type: list
  elements: str
discarded:
  description: With O(action=discard), the half-built generation was (or would be) removed.
  returned: when action is discard
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generation_actions import generation_step


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv_dir=dict(type="path", required=True),
            requirements=dict(type="str", required=True),
            python_version=dict(type="str", required=True),
            action=dict(type="str", default="plan", choices=["plan", "create", "adopt", "switch", "prune", "discard"]),
            keep=dict(type="int", default=2),
            free_gib=dict(type="float", default=12),
            retry_failed=dict(type="bool", default=False),
            protect=dict(type="list", elements="str", default=[]),
            token=dict(type="str", default="", no_log=False),
        ),
        supports_check_mode=True,
    )
    outcome = generation_step(module.params, module.check_mode)
    if outcome["failed"]:
        module.fail_json(**outcome["result"])
    module.exit_json(**outcome["result"])


if __name__ == "__main__":
    main()
