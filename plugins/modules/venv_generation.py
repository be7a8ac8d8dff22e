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
    generation that failed readiness before); it changes nothing. O(action=adopt) moves a plain venv directory found
    at O(venv_dir) into the generations directory and links it (never deletes it). O(action=switch) points the link at
    the wanted generation atomically (a new link renamed over the old one). O(action=prune) deletes old generations
    beyond O(keep), never the one serving, the wanted one, or one a running process was started from.
  - The decisions are in C(plugins/module_utils/venv_generations.py).
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: O(action=plan) changes nothing; the other actions report what they would do and do nothing.
  diff_mode:
    details: The link's target before and after (O(action=adopt), O(action=switch)), the generations before and after
      (O(action=prune)).
options:
  venv_dir:
    description: The stable path of the venv (C(python_env_venv_dir)); absolute.
    type: path
    required: true
  requirements:
    description: The package set of this run (the lock plus the flash-attn pin), as text; names the wanted generation.
    type: str
    required: true
  python_version:
    description: The full version of the Python the generation is made with (C(3.11.2)).
    type: str
    required: true
  action:
    description: What to do.
    type: str
    choices: [plan, adopt, switch, prune]
    default: plan
  keep:
    description: How many generations to keep (C(python_env_keep_generations)), the serving one included.
    type: int
    default: 2
  free_gib:
    description: Free space (GiB) the generations' filesystem must have before a new generation is built.
    type: float
    default: 12
  protect:
    description:
      - Generations (names or directories) O(action=prune) never deletes besides the serving and the wanted one - the
        role passes the one that served before this run's switch, the rollback target until the new one is ready.
    type: list
    elements: str
    default: []
  retry_failed:
    description: Switch to a generation that failed readiness before (its C(failed.json) is removed by the role).
    type: bool
    default: false
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
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils.python_env_state import list_generations, read_generations
from ansible_collections.inference.gpu_host.plugins.module_utils.venv_generations import GenerationError, prune_plan


def _relink(link, target):
    """Point ``link`` at ``target`` atomically: a new link in the same directory renamed over the old one."""
    tmp = "%s.new-%d" % (link, os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.rename(tmp, link)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv_dir=dict(type="path", required=True),
            requirements=dict(type="str", required=True),
            python_version=dict(type="str", required=True),
            action=dict(type="str", default="plan", choices=["plan", "adopt", "switch", "prune"]),
            keep=dict(type="int", default=2),
            free_gib=dict(type="float", default=12),
            retry_failed=dict(type="bool", default=False),
            protect=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    venv_dir = p["venv_dir"].rstrip("/") if p["venv_dir"] else p["venv_dir"]
    try:
        decided = read_generations(venv_dir, p["requirements"], p["python_version"], p["keep"], p["free_gib"],
                                   p["retry_failed"])
    except GenerationError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="reading %s and its generations: %s" % (venv_dir, exc))
    gens, wanted, wanted_dir, in_use = (decided["generations_dir"], decided["wanted"], decided["wanted_dir"],
                                        decided["in_use"])
    layout, target = decided.pop("layout"), decided.pop("target")
    result = dict(decided, changed=False)
    action = p["action"]
    try:
        if action == "adopt" and decided["adopt"]:
            result["changed"] = True
            result["diff"] = {"before": "%s (a directory)\n" % venv_dir,
                              "after": "%s -> %s\n" % (venv_dir, decided["adopt_dir"])}
            if not module.check_mode:
                if not os.path.isdir(gens):
                    os.mkdir(gens, 0o755)
                # Same parent directory, so the same filesystem: a rename, never a copy. The link follows at
                # once; a process running from the old path finds the same files through it.
                os.rename(venv_dir, decided["adopt_dir"])
                _relink(venv_dir, decided["adopt_dir"])
        elif action == "switch":
            result["previous"] = target if layout == "link" else decided["adopt_dir"]
            if decided["switch"]:
                result["changed"] = True
                result["diff"] = {"before": "%s -> %s\n" % (venv_dir, result["previous"] or "(nothing)"),
                                  "after": "%s -> %s\n" % (venv_dir, wanted_dir)}
                if not module.check_mode:
                    _relink(venv_dir, wanted_dir)
        elif action == "prune":
            if decided["refuse"]:
                result["prune"] = []
            else:
                # After a switch the link names the wanted generation; the one it named before comes in
                # `protect`. Only entries of the generations directory are candidates.
                protected = [wanted] + ([decided["serving"]] if decided["serving"] else []) + in_use
                protected += [os.path.basename(x.rstrip("/")) for x in p["protect"] if x]
                result["prune"] = prune_plan(list_generations(gens), p["keep"], protected)
                result["changed"] = bool(result["prune"])
                names = [g["name"] for g in list_generations(gens)]
                result["diff"] = {"before": "".join(n + "\n" for n in names),
                                  "after": "".join(n + "\n" for n in names if n not in result["prune"])}
                if not module.check_mode:
                    for name in result["prune"]:
                        shutil.rmtree(os.path.join(gens, name))
    except OSError as exc:
        result.update(changed=False, msg="%s of %s failed: %s" % (action, venv_dir, exc))
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
