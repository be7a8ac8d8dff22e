# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Who owns the `flash_attn` import package of a venv, from RECORD files alone.
#
# Two distributions install `flash_attn`: flash-attn 2.x (which has
# flash_attn/ops/triton/rotary.py, imported by vLLM's rotary embedding on every
# GPU) and flash-attn-4 (only flash_attn/cute/). With flash-attn-4 alone, vLLM
# dies with "No module named 'flash_attn.ops'"; after `pip uninstall
# flash-attn-4` an empty site-packages/flash_attn/ stays behind, Python resolves
# it as a namespace package, and vLLM fails the same way (shared/reference/
# gpu-host.md). Importing flash_attn raises on a host without CUDA, so this code
# never imports it: it reads every dist-info's RECORD (egg-info's
# installed-files.txt; top_level.txt as a claim) and walks the directory.
#
# Runs on the managed node with the SYSTEM Python and the stdlib only.

import base64
import csv
import hashlib
import os
import posixpath
import re
import shutil

from ansible_collections.inference.gpu_host.plugins.module_utils.venv_lock import (
    VenvLockError,
    canonicalize_name,
    find_site_packages,
    read_metadata_headers,
)

PACKAGE = "flash_attn"
ROTARY = "flash_attn/ops/triton/rotary.py"
EXPECTED_NAME = "flash-attn"
POLICIES = ("remove", "fail", "report")
STATES = ("ok", "absent", "conflict")

_PYC_RE = re.compile(r"^(?P<stem>[^.]+)\.[^.]+(?:\.opt-\d+)?\.pyc$")
_MAJOR_RE = re.compile(r"^\s*v?(?:\d+!)?(\d+)")


class FlashAttnGuardError(RuntimeError):
    """The flash_attn package of a venv is not what it must be, or cannot be fixed.

    ``result`` carries the guard's result dict when the error comes after a scan
    (so a caller can still report owners, leftovers and actions already taken).
    """

    def __init__(self, message, result=None):
        super(FlashAttnGuardError, self).__init__(message)
        self.result = result


def _major(version):
    match = _MAJOR_RE.match(version or "")
    return int(match.group(1)) if match else None


def _in_package(rel):
    return rel == PACKAGE or rel.startswith(PACKAGE + "/")


def _read_file_list(dist_path, site):
    """(entries, kind) of a distribution: [(rel path, hash or '')], 'RECORD'/'installed-files.txt'/None.

    Paths are made relative to site-packages in posix form (RECORD paths already
    are; installed-files.txt paths are relative to the egg-info directory).
    """
    record = os.path.join(dist_path, "RECORD")
    entries = []
    if os.path.isfile(record):
        with open(record, "r", encoding="utf-8", errors="replace", newline="") as handle:
            for row in csv.reader(handle):
                if row and row[0]:
                    entries.append((_norm_rel(row[0], site), row[1] if len(row) > 1 else ""))
        return entries, "RECORD"
    installed = os.path.join(dist_path, "installed-files.txt")
    if os.path.isfile(installed):
        base = os.path.relpath(dist_path, site).replace(os.sep, "/")
        with open(installed, "r", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                line = line.strip()
                if line:
                    entries.append((_norm_rel(posixpath.join(base, line), site), ""))
        return entries, "installed-files.txt"
    return entries, None


def _norm_rel(path, site):
    if os.path.isabs(path):
        path = os.path.relpath(path, site)
    return posixpath.normpath(path.replace(os.sep, "/"))


def _top_level(dist_path):
    try:
        with open(os.path.join(dist_path, "top_level.txt"), "r", encoding="utf-8", errors="replace") as handle:
            return set(line.strip().replace("/", ".").split(".")[0] for line in handle if line.strip())
    except (IOError, OSError):
        return set()


def _hash_matches(path, expected):
    """Whether a file's content matches a RECORD hash (``sha256=<urlsafe b64>``); None if unknown."""
    algo, sep, digest = (expected or "").partition("=")
    if not sep or algo not in hashlib.algorithms_available:
        return None
    hasher = hashlib.new(algo)
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(chunk)
    except (IOError, OSError):
        return None
    return base64.urlsafe_b64encode(hasher.digest()).decode("ascii").rstrip("=") == digest


class Owner(object):
    """One installed distribution that owns (or claims) files of flash_attn."""

    def __init__(self, name, raw_name, version, path, entries, list_kind, expected):
        self.name = name
        self.raw_name = raw_name
        self.version = version
        self.path = path
        self.entries = entries
        self.list_kind = list_kind
        self.expected = expected
        self.paths = set(rel for rel, _hash in entries)
        self.package_paths = sorted(rel for rel in self.paths if _in_package(rel))

    def label(self):
        return "%s %s" % (self.name, self.version)

    def as_dict(self):
        return {
            "name": self.name,
            "version": self.version,
            "files": len(self.package_paths),
            "expected": self.expected,
            "dist_info": self.path,
            "file_list": self.list_kind,
        }


class Inspection(object):
    """What a venv's flash_attn looks like; see ``inspect_venv``."""

    def __init__(self, venv, site, expected_major):
        self.venv = venv
        self.site = site
        self.expected_major = expected_major
        self.owners = []
        self.good = []
        self.offenders = []
        self.leftovers = []
        self.derived = {}
        self.damaged = []
        self.other_locations = []
        self.exists = False
        self.state = "absent"
        self.problems = []

    @property
    def rotary_owner(self):
        owners = [o for o in self.good if ROTARY in o.paths] or [o for o in self.owners if ROTARY in o.paths]
        return {"name": owners[0].name, "version": owners[0].version} if owners else None

    def as_dict(self):
        return {
            "venv": self.venv,
            "site_packages": self.site,
            "state": self.state,
            "owners": [o.as_dict() for o in self.owners],
            "leftovers": list(self.leftovers),
            "rotary_owner": self.rotary_owner,
            "damaged": [dict(d) for d in self.damaged],
            "problems": list(self.problems),
            "other_locations": list(self.other_locations),
        }


def _classify(good, offenders, leftovers, exists, site, expected_major):
    """(state, problems) from the owners and leftovers."""
    if not good and not offenders and not leftovers and not exists:
        return "absent", []
    problems = []
    for owner in offenders:
        if owner.list_kind is None:
            problems.append("%s claims flash_attn in top_level.txt but has no RECORD listing its files" % owner.label())
        elif owner.name == EXPECTED_NAME and _major(owner.version) != expected_major:
            problems.append("%s owns %d files under flash_attn/, but flash-attn %d.x is expected"
                            % (owner.label(), len(owner.package_paths), expected_major))
        else:
            problems.append("%s owns %d files under flash_attn/; only flash-attn %d.x may (it alone ships "
                            "flash_attn.ops.triton.rotary, which vLLM's rotary embedding imports)"
                            % (owner.label(), len(owner.package_paths), expected_major))
    if leftovers:
        shown = ", ".join(leftovers[:5]) + (" and %d more" % (len(leftovers) - 5) if len(leftovers) > 5 else "")
        problems.append("%d path(s) under flash_attn/ belong to no installed distribution (left by an uninstall; "
                        "Python still finds flash_attn as a namespace package): %s" % (len(leftovers), shown))
    if len(good) > 1:
        problems.append("several flash-attn %d.x distributions are installed at once: %s"
                        % (expected_major, ", ".join(o.label() for o in good)))
    elif not good:
        problems.append("no flash-attn %d.x distribution owns %s" % (expected_major, ROTARY))
    elif ROTARY not in good[0].paths:
        problems.append("%s does not list %s in its RECORD" % (good[0].label(), ROTARY))
    elif not os.path.isfile(os.path.join(site, ROTARY)):
        problems.append("%s is missing on disk, though %s's RECORD lists it" % (ROTARY, good[0].label()))
    return ("conflict" if problems else "ok"), problems


def _walk_package(site):
    """(files, dirs) under site-packages/flash_attn as posix paths relative to site-packages.

    Symlinks are listed as files and never followed: removal must not reach
    outside the venv through them.
    """
    top = os.path.join(site, PACKAGE)
    if os.path.islink(top) or os.path.isfile(top):
        return [PACKAGE], []
    if not os.path.isdir(top):
        return [], []
    files, dirs = [], [PACKAGE]
    for root, dirnames, filenames in os.walk(top):
        rel_root = os.path.relpath(root, site).replace(os.sep, "/")
        for name in list(dirnames):
            if os.path.islink(os.path.join(root, name)):
                dirnames.remove(name)
                filenames.append(name)
        dirs.extend(posixpath.join(rel_root, d) for d in dirnames)
        files.extend(posixpath.join(rel_root, f) for f in filenames)
    return sorted(files), sorted(dirs)


def _pyc_source(rel):
    """The .py a ``__pycache__/x.cpython-312.pyc`` was compiled from, or None."""
    parent, name = posixpath.split(rel)
    if posixpath.basename(parent) != "__pycache__":
        return None
    match = _PYC_RE.match(name)
    return posixpath.join(posixpath.dirname(parent), match.group("stem") + ".py") if match else None


def _pth_locations(site):
    """flash_attn entries found in directories that the venv's .pth files add to sys.path."""
    found = []
    try:
        names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
    except (IOError, OSError):
        return found
    for name in names:
        try:
            with open(os.path.join(site, name), "r", encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except (IOError, OSError):
            continue
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("import ") or line.startswith("import\t"):
                continue
            directory = os.path.normpath(os.path.join(site, line))
            candidate = os.path.join(directory, PACKAGE)
            if directory != os.path.normpath(site) and os.path.lexists(candidate) and candidate not in found:
                found.append(candidate)
    return found


def _site_for(venv):
    try:
        return find_site_packages(venv)
    except VenvLockError as exc:
        raise FlashAttnGuardError(str(exc))


def inspect_venv(venv, expected_major=2):
    """Inspect the flash_attn package of a venv (its directory, or its site-packages).

    Returns an ``Inspection``; ``as_dict()`` gives: ``state`` (``ok``: one
    flash-attn <expected_major>.x owns flash_attn, its RECORD lists
    ops/triton/rotary.py and the file is there, nothing else owns anything under
    flash_attn/ and nothing there is unowned; ``absent``: no flash_attn and no
    owner, which vLLM runs fine with; ``conflict``: anything else), ``owners``,
    ``leftovers`` (paths under flash_attn/ no distribution owns; a directory
    with nothing owned below it ends in ``/`` and stands for its whole tree),
    ``rotary_owner``, ``damaged`` (files of the expected owner that are missing or
    whose content differs from its RECORD, e.g. overwritten by flash-attn-4, which
    ships 20 of the same flash_attn/cute/ paths), ``problems`` (sentences),
    ``other_locations`` (flash_attn found through the venv's .pth files; not
    managed here).
    """
    if not isinstance(expected_major, int) or isinstance(expected_major, bool) or expected_major < 1:
        raise FlashAttnGuardError("expected_major must be a positive integer, got %r" % (expected_major,))
    site = _site_for(venv)
    result = Inspection(venv, site, expected_major)
    try:
        entries = sorted(os.listdir(site))
    except (IOError, OSError) as exc:
        raise FlashAttnGuardError("cannot list %s of venv %s: %s" % (site, venv, exc))
    for entry in entries:
        if not (entry.endswith(".dist-info") or entry.endswith(".egg-info")):
            continue
        path = os.path.join(site, entry)
        if not os.path.isdir(path):
            continue
        file_list, kind = _read_file_list(path, site)
        in_package = any(_in_package(rel) for rel, _hash in file_list)
        if not in_package and PACKAGE not in _top_level(path):
            continue
        headers = read_metadata_headers(os.path.join(path, "METADATA" if entry.endswith(".dist-info") else "PKG-INFO"))
        raw = headers.get("name") or entry.rsplit("-", 1)[0]
        version = headers.get("version") or "unknown"
        name = canonicalize_name(raw)
        expected = name == EXPECTED_NAME and _major(version) == expected_major and kind is not None
        result.owners.append(Owner(name, raw, version, path, file_list, kind, expected))
    result.good = [o for o in result.owners if o.expected]
    result.offenders = [o for o in result.owners if not o.expected]

    owned = {}
    for owner in result.owners:
        for rel in owner.package_paths:
            owned.setdefault(rel, []).append(owner)
    files, dirs = _walk_package(site)
    result.exists = bool(files or dirs)
    unowned, keep_dirs = [], set()
    for rel in files:
        owners = owned.get(rel)
        if owners is None:
            source = _pyc_source(rel)
            owners = owned.get(source) if source else None
            if owners is not None:
                # a .pyc Python wrote later belongs to whoever owns its source
                result.derived[rel] = owners
        if owners is None:
            unowned.append(rel)
            continue
        parent = posixpath.dirname(rel)
        while parent and parent not in keep_dirs:
            keep_dirs.add(parent)
            parent = posixpath.dirname(parent)
    # report the topmost directory with nothing owned below it, and unowned files outside such trees
    leftover_dirs = []
    for rel in dirs:
        if rel in keep_dirs or any(rel.startswith(d + "/") for d in leftover_dirs):
            continue
        leftover_dirs.append(rel)
    result.leftovers = sorted([d + "/" for d in leftover_dirs]
                              + [f for f in unowned if not any(f.startswith(d + "/") for d in leftover_dirs)])

    for owner in result.good:
        for rel, digest in owner.entries:
            if not _in_package(rel) or rel.endswith(".pyc"):
                continue
            path = os.path.join(site, rel)
            if not os.path.isfile(path):
                result.damaged.append({"path": rel, "problem": "missing", "owner": owner.label()})
            elif _hash_matches(path, digest) is False:
                result.damaged.append({"path": rel, "problem": "content differs from RECORD", "owner": owner.label()})
    result.other_locations = _pth_locations(site)
    result.state, result.problems = _classify(result.good, result.offenders, result.leftovers, result.exists, site,
                                              expected_major)
    return result


def describe(inspection):
    """One paragraph a person can act on, naming the venv, the owners and the leftovers."""
    if inspection.state == "absent":
        return "venv %s has no flash_attn package (vLLM runs without it)" % inspection.venv
    if inspection.state == "ok":
        owner = inspection.good[0]
        return "flash_attn in venv %s is owned by %s alone, with %s" % (inspection.venv, owner.label(), ROTARY)
    return "flash_attn in venv %s (%s) is in conflict: %s" % (inspection.venv, inspection.site, "; ".join(inspection.problems))


def plan_removal(inspection):
    """The actions that remove every offending owner and every leftover, files of the expected owner kept.

    Each action is a dict: ``{"action": "uninstall", "name", "version",
    "dist_info", "files": [paths to delete], "kept": [paths also owned by the
    expected owner], "outside": [RECORD paths outside the venv, not touched]}``
    or ``{"action": "remove_leftover", "path"}`` (paths relative to site-packages).
    """
    site = inspection.site
    root = os.path.normpath(os.path.join(site, os.pardir, os.pardir, os.pardir))
    protected = set()
    for owner in inspection.good:
        protected.update(owner.paths)
    actions = []
    for owner in inspection.offenders:
        if owner.list_kind is None:
            raise FlashAttnGuardError(
                "cannot remove %s from venv %s: %s has no RECORD, so its files cannot be told apart from others'; "
                "uninstall it with the venv's own pip and run again" % (owner.label(), inspection.venv, owner.path))
        delete, kept, outside = [], [], []
        for rel in sorted(owner.paths):
            full = os.path.normpath(os.path.join(site, rel))
            if rel in protected:
                kept.append(rel)
            elif not (full == root or full.startswith(root + os.sep)):
                outside.append(rel)
            elif not full.startswith(owner.path + os.sep):
                delete.append(rel)
        for rel, owners in sorted(inspection.derived.items()):
            if owner in owners and not any(o in inspection.good for o in owners) and rel not in delete:
                delete.append(rel)
        actions.append({"action": "uninstall", "name": owner.name, "version": owner.version,
                        "dist_info": owner.path, "files": sorted(delete), "kept": kept, "outside": outside})
    for rel in inspection.leftovers:
        actions.append({"action": "remove_leftover", "path": rel})
    return actions


def _remove_path(full, venv):
    try:
        if os.path.islink(full) or os.path.isfile(full):
            os.unlink(full)
        elif os.path.isdir(full):
            shutil.rmtree(full)
    except OSError as exc:
        raise FlashAttnGuardError("cannot remove %s from venv %s: %s" % (full, venv, exc))


def _prune_empty(directory, stop):
    """Remove ``directory`` and its parents while they are empty, never ``stop`` or above it."""
    stop = os.path.normpath(stop)
    directory = os.path.normpath(directory)
    while directory.startswith(stop + os.sep) and os.path.isdir(directory) and not os.path.islink(directory):
        try:
            os.rmdir(directory)
        except OSError:
            return  # not empty: what is left there belongs to someone
        directory = os.path.dirname(directory)


def apply_removal(inspection, actions):
    """Carry out ``plan_removal``'s actions (deletes files; never touches the expected owner's)."""
    site = inspection.site
    parents = set()
    for action in actions:
        if action["action"] == "uninstall":
            for rel in action["files"]:
                full = os.path.normpath(os.path.join(site, rel))
                if os.path.lexists(full):
                    _remove_path(full, inspection.venv)
                parents.add(os.path.dirname(full))
                # drop the .pyc Python compiled from a deleted source, wherever it sits
                if rel.endswith(".py"):
                    cache = os.path.join(os.path.dirname(full), "__pycache__")
                    stem = os.path.basename(full)[:-3]
                    if os.path.isdir(cache):
                        for name in os.listdir(cache):
                            match = _PYC_RE.match(name)
                            if match and match.group("stem") == stem:
                                _remove_path(os.path.join(cache, name), inspection.venv)
                        parents.add(cache)
            _remove_path(action["dist_info"], inspection.venv)
        else:
            full = os.path.normpath(os.path.join(site, action["path"].rstrip("/")))
            _remove_path(full, inspection.venv)
            parents.add(os.path.dirname(full))
    # deepest first, so a directory emptied by its children goes too
    for directory in sorted(parents, key=lambda d: d.count(os.sep), reverse=True):
        _prune_empty(directory, site)
    # empty directories left under flash_attn/ (an uninstaller's leftovers) are namespace packages to Python
    top = os.path.join(site, PACKAGE)
    if os.path.isdir(top) and not os.path.islink(top):
        for root, _dirs, _files in os.walk(top, topdown=False):
            _prune_empty(root, site)


def _predicted(inspection):
    """The Inspection as it will be after ``apply_removal`` (for check mode)."""
    after = Inspection(inspection.venv, inspection.site, inspection.expected_major)
    after.owners = list(inspection.good)
    after.good = list(inspection.good)
    after.damaged = list(inspection.damaged)
    after.other_locations = list(inspection.other_locations)
    after.exists = any(os.path.lexists(os.path.join(inspection.site, p)) for o in after.good for p in o.package_paths)
    after.state, after.problems = _classify(after.good, [], [], after.exists, inspection.site, inspection.expected_major)
    return after


def guard(venv, policy="fail", expected_major=2, check_mode=False):
    """Inspect a venv's flash_attn and apply a policy; the one call a module needs.

    ``policy``: ``report`` never changes or fails; ``fail`` raises
    FlashAttnGuardError on a conflict; ``remove`` deletes every offending
    distribution (exactly the files in its RECORD, minus those the expected
    flash-attn also owns, plus its dist-info) and every leftover, then raises if
    a conflict remains (e.g. the expected flash-attn lacks rotary.py). With
    ``check_mode`` nothing is changed and ``after`` is the prediction.

    Returns ``{"before": <as_dict>, "after": <as_dict>, "actions": [...],
    "changed": bool}``; errors carry that dict as ``exc.result``.
    """
    if policy not in POLICIES:
        raise FlashAttnGuardError("policy must be one of %s, got %r" % (", ".join(POLICIES), policy))
    before = inspect_venv(venv, expected_major)
    result = {"before": before.as_dict(), "after": before.as_dict(), "actions": [], "changed": False}
    if before.state != "conflict" or policy == "report":
        return result
    if policy == "fail":
        raise FlashAttnGuardError(describe(before) + ". Policy 'fail': nothing was changed; use policy 'remove' "
                                  "to delete the offending distributions and leftovers", result)
    actions = plan_removal(before)
    result["actions"] = actions
    result["changed"] = bool(actions)
    if check_mode:
        after = _predicted(before)
    else:
        apply_removal(before, actions)
        after = inspect_venv(venv, expected_major)
    result["after"] = after.as_dict()
    if after.state == "conflict":
        raise FlashAttnGuardError(
            "%s flash_attn in venv %s is still in conflict: %s" % (
                "After removing what could be removed," if actions else "Nothing could be removed, and",
                venv, "; ".join(after.problems)), result)
    return result
