# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The venv_generation module's work on the host: create, adopt, switch, prune or discard a generation.

What to do is decided by generations.plan (read through state.read_generations); this file only carries it
out, check mode reporting what it would do. Only marked generations are ever deleted (generations.py).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import binascii
import os

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    COMPLETE_FILE, CREATED_FILE, STATE_SUBDIR, GenerationError, _keep, check_free_gib, created_token, marked,
    mark_created, protected_names, prune_plan, remove_generation, scan, usable_generation)
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import read_generations


def _relink(link, target):
    """Point ``link`` at ``target`` atomically: a new link in the same directory renamed over the old one."""
    tmp = "%s.new-%d" % (link, os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.rename(tmp, link)


def _create(check_mode, result, gens, wanted, wanted_dir):
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
        if not check_mode:
            mark_created(wanted_dir, "")
        return
    result.update(changed=True, created=True)
    result["diff"] = {"before": "", "after": "%s/ (new generation)\n" % wanted_dir}
    if check_mode:
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


def _adopt(check_mode, result, venv_dir, decided):
    """Move the plain venv directory at ``venv_dir`` into the generations directory, marked, and link it."""
    gens = decided["generations_dir"]
    if os.path.lexists(decided["adopt_dir"]):
        raise GenerationError("cannot adopt %s as %s: something is there already (not a generation); move "
                              "one of them away" % (venv_dir, decided["adopt_dir"]))
    result["changed"] = True
    result["diff"] = {"before": "%s (a directory)\n" % venv_dir, "after": "%s -> %s\n" % (venv_dir, decided["adopt_dir"])}
    if not check_mode:
        if not os.path.isdir(gens):
            os.mkdir(gens, 0o755)
        # Marked first, so the collection knows it later as the generation it moved in.
        mark_created(venv_dir, "", adopted_from=venv_dir)
        # Same parent directory, so the same filesystem: a rename, never a copy. The link follows at
        # once; a process running from the old path finds the same files through it.
        os.rename(venv_dir, decided["adopt_dir"])
        _relink(venv_dir, decided["adopt_dir"])


def _switch(check_mode, result, venv_dir, decided, layout, target):
    """Point the link at the wanted generation, which must be usable (a real switch)."""
    wanted, wanted_dir = decided["wanted"], decided["wanted_dir"]
    result["previous"] = target if layout == "link" else decided["adopt_dir"]
    if not decided["switch"]:
        return
    why = usable_generation(decided["generations_dir"], wanted)
    if why and not check_mode:
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
    if not check_mode:
        _relink(venv_dir, wanted_dir)


def _prune(check_mode, result, decided, keep, protect):
    """Delete the marked generations beyond ``keep``, never a protected, serving, wanted or running one."""
    if decided["refuse"]:
        result["prune"] = []
        return
    gens = decided["generations_dir"]
    # After a switch the link names the wanted generation; the one it named before comes in
    # `protect`. Only marked generations are candidates (scan); anything else is reported as ignored.
    found = scan(gens)
    result["ignored"] = found["ignored"]
    protected = [decided["wanted"]] + ([decided["serving"]] if decided["serving"] else []) + decided["in_use"] + protect
    result["prune"] = prune_plan(found["generations"], keep, protected)
    result["changed"] = bool(result["prune"])
    names = [g["name"] for g in found["generations"]]
    result["diff"] = {"before": "".join(n + "\n" for n in names),
                      "after": "".join(n + "\n" for n in names if n not in result["prune"])}
    if not check_mode:
        result["removed"] = []
        for name in result["prune"]:
            remove_generation(gens, name)
            result["removed"].append(name)


def _discard(check_mode, result, decided, token):
    """Remove the wanted generation when ``token`` is its creation's, unless it passed its checks, serves or runs."""
    wanted, wanted_dir = decided["wanted"], decided["wanted_dir"]
    result["discarded"] = False
    keep_why = ""
    if not token:
        raise GenerationError("discard: token (what action=create returned) is required")
    if not os.path.lexists(wanted_dir):
        keep_why = "not there"
    elif created_token(wanted_dir) != token:
        keep_why = "not created by this run (its %s/%s names another)" % (STATE_SUBDIR, CREATED_FILE)
    elif decided["serving"] == wanted or wanted in decided["in_use"]:
        keep_why = "it serves, or a running process was started from it"
    elif os.path.isfile(os.path.join(wanted_dir, STATE_SUBDIR, COMPLETE_FILE)):
        keep_why = "it passed its checks (generation.json)"
    if keep_why:
        result["msg"] = "kept %s: %s" % (wanted_dir, keep_why)
        return
    result.update(changed=True, discarded=True, msg="removed the half-built generation %s" % wanted_dir)
    result["diff"] = {"before": "%s/ (half-built)\n" % wanted_dir, "after": ""}
    if not check_mode:
        remove_generation(decided["generations_dir"], wanted)


def generation_step(params, check_mode=False):
    """The venv_generation module's work, from its parameters: {"failed", "result", "warnings"}.

    The options are checked first: nothing is read or changed with a bad one. A prune stopped half-way
    reports what it removed before (``removed``, and changed).
    """
    p = params
    venv_dir = p["venv_dir"].rstrip("/") if p["venv_dir"] else p["venv_dir"]
    try:
        _keep(p["keep"])
        check_free_gib(p["free_gib"])
        decided = read_generations(venv_dir, p["requirements"], p["python_version"], p["keep"], p["free_gib"],
                                   p["retry_failed"])
        protect = protected_names(p["protect"], decided["generations_dir"])
    except GenerationError as exc:
        return {"failed": True, "result": {"msg": str(exc), "changed": False}, "warnings": []}
    except OSError as exc:
        return {"failed": True, "result": {"msg": "reading %s and its generations: %s" % (venv_dir, exc),
                                           "changed": False}, "warnings": []}
    layout, target = decided.pop("layout"), decided.pop("target")
    result = dict(decided, changed=False)
    action = p["action"]
    try:
        if action == "create":
            _create(check_mode, result, decided["generations_dir"], decided["wanted"], decided["wanted_dir"])
        elif action == "adopt" and decided["adopt"]:
            _adopt(check_mode, result, venv_dir, decided)
        elif action == "switch":
            _switch(check_mode, result, venv_dir, decided, layout, target)
        elif action == "prune":
            _prune(check_mode, result, decided, p["keep"], protect)
        elif action == "discard":
            _discard(check_mode, result, decided, p["token"])
    except GenerationError as exc:
        result.update(changed=bool(result.get("removed")), msg=str(exc))
        return {"failed": True, "result": result, "warnings": []}
    except OSError as exc:
        result.update(changed=bool(result.get("removed")), msg="%s of %s failed: %s" % (action, venv_dir, exc))
        return {"failed": True, "result": result, "warnings": []}
    return {"failed": False, "result": result, "warnings": []}
