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
  - Only entries that are real directories with a generation's name and the collection's mark
    (C(.inference-gpu-host/created.json), or C(generation.json) of a generation built before the mark existed) are
    ever deleted; everything else in the generations directory (C(lost+found), an operator's C(backup/), files,
    links) is left alone and listed in RV(ignored). A generations directory that is a symbolic link is refused by
    every action, naming the link - the module never follows it into another tree.
  - The decisions are in C(plugins/module_utils/_venv/generations.py).
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
    choices: [plan, create, adopt, switch, prune, discard]
    default: plan
  keep:
    description: How many generations to keep (C(python_env_keep_generations)), the serving one included; at least 1.
    type: int
    default: 2
  free_gib:
    description: Free space (GiB) the generations' filesystem must have before a new generation is built; a finite
      number >= 0 (C(nan) and C(inf) are refused).
    type: float
    default: 12
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
  retry_failed:
    description: Switch to a generation that failed readiness before (its C(failed.json) is removed by the role).
    type: bool
    default: false
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

import binascii
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import read_generations
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    COMPLETE_FILE, CREATED_FILE, STATE_SUBDIR, GenerationError, _keep, check_free_gib, created_token, marked, mark_created,
    protected_names, prune_plan, remove_generation, scan, usable_generation)


def _relink(link, target):
    """Point ``link`` at ``target`` atomically: a new link in the same directory renamed over the old one."""
    tmp = "%s.new-%d" % (link, os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.rename(tmp, link)


def _create(module, result, gens, wanted, wanted_dir):
    """Make the wanted generation's directory with the collection's marker in it, before anything else."""
    result["created"] = False
    if os.path.lexists(wanted_dir):
        if os.path.islink(wanted_dir) or not os.path.isdir(wanted_dir):
            raise GenerationError("%s is not a directory: move it away, the role builds generation %s there"
                                  % (wanted_dir, wanted))
        if marked(wanted_dir):
            return
        # A generation a role from before the marker began to build has the role's own lock files in it.
        state = os.path.join(wanted_dir, STATE_SUBDIR)
        if not any(os.path.isfile(os.path.join(state, f)) for f in ("lock.txt", "expected.txt")):
            raise GenerationError("%s exists but was not made by the collection (no %s/%s): move it away, the role "
                                  "builds generation %s there" % (wanted_dir, STATE_SUBDIR, CREATED_FILE, wanted))
        result["changed"] = True
        if not module.check_mode:
            mark_created(wanted_dir, "")
        return
    result.update(changed=True, created=True)
    result["diff"] = {"before": "", "after": "%s/ (new generation)\n" % wanted_dir}
    if module.check_mode:
        return
    if not os.path.isdir(gens):
        os.mkdir(gens, 0o755)
    token = binascii.hexlify(os.urandom(8)).decode("ascii")
    os.mkdir(wanted_dir, 0o755)
    try:
        mark_created(wanted_dir, token)
    except (OSError, GenerationError):
        # Disk full already: leave nothing behind (this call made the directory a moment ago).
        for remove, path in ((os.unlink, os.path.join(wanted_dir, STATE_SUBDIR, CREATED_FILE)),
                             (os.rmdir, os.path.join(wanted_dir, STATE_SUBDIR)), (os.rmdir, wanted_dir)):
            try:
                remove(path)
            except OSError:
                pass
        raise
    result["token"] = token


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
    p = module.params
    venv_dir = p["venv_dir"].rstrip("/") if p["venv_dir"] else p["venv_dir"]
    try:
        # The options first: nothing is read or changed with a bad one.
        _keep(p["keep"])
        check_free_gib(p["free_gib"])
        decided = read_generations(venv_dir, p["requirements"], p["python_version"], p["keep"], p["free_gib"],
                                   p["retry_failed"])
        protect = protected_names(p["protect"], decided["generations_dir"])
    except GenerationError as exc:
        module.fail_json(msg=str(exc), changed=False)
    except OSError as exc:
        module.fail_json(msg="reading %s and its generations: %s" % (venv_dir, exc), changed=False)
    gens, wanted, wanted_dir, in_use = (decided["generations_dir"], decided["wanted"], decided["wanted_dir"],
                                        decided["in_use"])
    layout, target = decided.pop("layout"), decided.pop("target")
    result = dict(decided, changed=False)
    action = p["action"]
    try:
        if action == "create":
            _create(module, result, gens, wanted, wanted_dir)
        elif action == "adopt" and decided["adopt"]:
            if os.path.lexists(decided["adopt_dir"]):
                raise GenerationError("cannot adopt %s as %s: something is there already (not a generation); move "
                                      "one of them away" % (venv_dir, decided["adopt_dir"]))
            result["changed"] = True
            result["diff"] = {"before": "%s (a directory)\n" % venv_dir,
                              "after": "%s -> %s\n" % (venv_dir, decided["adopt_dir"])}
            if not module.check_mode:
                if not os.path.isdir(gens):
                    os.mkdir(gens, 0o755)
                # Marked first, so the collection knows it later as the generation it moved in.
                mark_created(venv_dir, "", adopted_from=venv_dir)
                # Same parent directory, so the same filesystem: a rename, never a copy. The link follows at
                # once; a process running from the old path finds the same files through it.
                os.rename(venv_dir, decided["adopt_dir"])
                _relink(venv_dir, decided["adopt_dir"])
        elif action == "switch":
            result["previous"] = target if layout == "link" else decided["adopt_dir"]
            if decided["switch"]:
                why = usable_generation(gens, wanted)
                if why and not module.check_mode:
                    # A link to nothing would take the server down at its next start: leave the link as it is.
                    result["switch"] = False
                    raise GenerationError("not switching %s to %s: %s. The link is left as it is (%s)"
                                          % (venv_dir, wanted, why, result["previous"] or "nothing"))
                result["changed"] = True
                result["diff"] = {"before": "%s -> %s\n" % (venv_dir, result["previous"] or "(nothing)"),
                                  "after": "%s -> %s\n" % (venv_dir, wanted_dir)}
                if why:
                    result["msg"] = ("check mode: %s; a real switch needs it built first (the python_env role "
                                     "builds it before switching)" % why)
                if not module.check_mode:
                    _relink(venv_dir, wanted_dir)
        elif action == "prune":
            if decided["refuse"]:
                result["prune"] = []
            else:
                # After a switch the link names the wanted generation; the one it named before comes in
                # `protect`. Only marked generations are candidates (scan); anything else is reported as ignored.
                found = scan(gens)
                result["ignored"] = found["ignored"]
                protected = [wanted] + ([decided["serving"]] if decided["serving"] else []) + in_use + protect
                result["prune"] = prune_plan(found["generations"], p["keep"], protected)
                result["changed"] = bool(result["prune"])
                names = [g["name"] for g in found["generations"]]
                result["diff"] = {"before": "".join(n + "\n" for n in names),
                                  "after": "".join(n + "\n" for n in names if n not in result["prune"])}
                if not module.check_mode:
                    result["removed"] = []
                    for name in result["prune"]:
                        remove_generation(gens, name)
                        result["removed"].append(name)
        elif action == "discard":
            result["discarded"] = False
            keep_why = ""
            if not p["token"]:
                raise GenerationError("discard: token (what action=create returned) is required")
            if not os.path.lexists(wanted_dir):
                keep_why = "not there"
            elif created_token(wanted_dir) != p["token"]:
                keep_why = "not created by this run (its %s/%s names another)" % (STATE_SUBDIR, CREATED_FILE)
            elif decided["serving"] == wanted or wanted in in_use:
                keep_why = "it serves, or a running process was started from it"
            elif os.path.isfile(os.path.join(wanted_dir, STATE_SUBDIR, COMPLETE_FILE)):
                keep_why = "it passed its checks (generation.json)"
            if keep_why:
                result["msg"] = "kept %s: %s" % (wanted_dir, keep_why)
            else:
                result.update(changed=True, discarded=True, msg="removed the half-built generation %s" % wanted_dir)
                result["diff"] = {"before": "%s/ (half-built)\n" % wanted_dir, "after": ""}
                if not module.check_mode:
                    remove_generation(gens, wanted)
    except GenerationError as exc:
        # A prune stopped half-way changed what it removed before (the result says which).
        result.update(changed=bool(result.get("removed")), msg=str(exc))
        module.fail_json(**result)
    except OSError as exc:
        result.update(changed=bool(result.get("removed")), msg="%s of %s failed: %s" % (action, venv_dir, exc))
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
