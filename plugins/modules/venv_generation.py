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
  - O(venv_dir) is a link to C(<venv_dir>.generations/<name>), the generation that serves; each generation is a venv
    of one lock and one Python, named C(<distribution>-<version>-py<X.Y>-<sha12>) (C(docs/generations.md)).
  - O(action=plan) says what a run does and changes nothing; V(create) makes the wanted generation's directory with
    the collection's mark; V(adopt) moves a plain venv at O(venv_dir) into the generations directory and links it;
    V(switch) points the link at the wanted generation atomically (refusing one missing, unmarked or without
    C(bin/python)); V(prune) deletes generations beyond O(keep), never the serving, wanted, protected or running
    one; V(discard) removes a half-built generation whose O(token) V(create) returned.
  - Only marked generations are ever deleted; anything else there is listed in RV(ignored), and a generations
    directory that is a link is refused.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host.venv.GENERATIONS
attributes:
  check_mode:
    details: The actions report what they would do and do nothing.
  diff_mode:
    details: The link's target (adopt, switch) or the generations (prune) before and after.
options:
  python_version:
    description: The full version of the generation's Python (C(3.11.2)).
    type: str
    required: true
  action:
    description: What to do.
    type: str
    choices: [plan, create, adopt, switch, prune, discard]
    default: plan
  protect:
    description:
      - Generations O(action=prune) keeps besides the serving and the wanted one (the rollback target), by name or
        directory inside the generations directory.
    type: list
    elements: str
    default: []
  token:
    description: With O(action=discard), the token O(action=create) returned in this run.
    type: str
    default: ""
"""

EXAMPLES = r"""
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
generations_dir:
  description: C(<venv_dir>.generations).
  returned: always
  type: str
serving:
  description: The generation the link points at before this action (empty on a blank host).
  returned: always
  type: str
serving_dir:
  description: Its directory.
  returned: always
  type: str
adopt:
  description: O(venv_dir) is a plain directory to adopt.
  returned: always
  type: bool
build:
  description: The wanted generation has not passed its checks yet.
  returned: always
  type: bool
switch:
  description: The link does not point at the wanted generation yet.
  returned: always
  type: bool
prune:
  description: Generations deleted (with O(action=plan), to delete after a switch).
  returned: always
  type: list
  elements: str
in_use:
  description: Generations a running process was started from (never pruned).
  returned: always
  type: list
  elements: str
disk:
  description: The free-space check - C(ok), C(free), C(need) (bytes), C(msg).
  returned: always
  type: dict
refuse:
  description: Why a real run must not switch (the wanted generation failed readiness before), or empty.
  returned: always
  type: str
failed_record:
  description: The wanted generation's C(failed.json), or null.
  returned: always
  type: dict
previous:
  description: The directory the link pointed at before.
  returned: when action is switch
  type: str
ignored:
  description: Entries of the generations directory that are not generations (never touched), with C(name) and C(why).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "lost+found", "why": "not a generation name"}]
created:
  description: This call made the directory.
  returned: when action is create
  type: bool
token:
  description: The token written into C(created.json), for O(action=discard).
  returned: when action is create and a directory was made
  type: str
removed:
  description: The generations actually deleted.
  returned: when action is prune, not in check mode
  type: list
  elements: str
discarded:
  description: The half-built generation was (or would be) removed.
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
