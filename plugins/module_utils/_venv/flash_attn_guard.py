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
# it as a namespace package, and vLLM fails the same way (docs/flash-attn.md).
# Importing flash_attn raises on a host without CUDA, so this code never
# imports it: it reads every dist-info's RECORD (egg-info's
# installed-files.txt; top_level.txt as a claim) and walks the directory.
#
# Removal runs as root on files a broken or hostile RECORD names, so it is
# bounded (see plan_removal): only regular files and symlinks whose resolved
# location is under site-packages/flash_attn/ or in the offender's own
# dist-info are deleted, directories only by rmdir once empty, and a RECORD
# line outside those bounds makes the whole removal fail before anything is
# deleted.
#
# Runs on the managed node with the SYSTEM Python and the stdlib only.

import base64
import csv
import errno
import hashlib
import io
import os
import posixpath
import re
import stat

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import (
    VenvLockError,
    canonicalize_name,
    distribution_name_version,
    find_site_packages,
)

PACKAGE = "flash_attn"
ROTARY = "flash_attn/ops/triton/rotary.py"
EXPECTED_NAME = "flash-attn"
POLICIES = ("remove", "fail", "report")
STATES = ("ok", "absent", "conflict")

# Real RECORDs are a few hundred KB (torch's: ~2 MB); the bounds only keep a
# garbage file from eating the node's memory.
MAX_LIST_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 1024 * 1024  # top_level.txt and .pth files (METADATA: venv_lock's own bound)
MAX_FIELD = 4096  # PATH_MAX: no real path or hash is longer
RECORD_HASHES = ("sha256", "sha384", "sha512")  # what the wheel spec allows
MAX_SHOWN = 20

UNLINK_FILE = "unlink_file"
UNLINK_SYMLINK = "unlink_symlink"
RMDIR = "rmdir_if_empty"

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


def _within(path, top):
    """Whether ``path`` lies strictly below directory ``top`` (both absolute and normalised)."""
    return path.startswith(top.rstrip(os.sep) + os.sep)


def _strerror(exc):
    return exc.strerror or str(exc)


# ---------------------------------------------------------------------------
# reading metadata files: bounded, regular files only (a FIFO would block the
# read, /dev/zero would never end), and every failure a FlashAttnGuardError

def _too_large(path, what, limit):
    return FlashAttnGuardError("%s %s is larger than %s: not a file list an installer wrote"
                               % (what, path, "%d MiB" % (limit >> 20) if limit >= 1 << 20 else "%d bytes" % limit))


def _read_bytes(path, what, limit, whole=False):
    """Up to ``limit`` + 1 bytes of a regular file; with ``whole``, a larger file is an error."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FlashAttnGuardError("cannot read %s %s: %s" % (what, path, _strerror(exc)))
    if not stat.S_ISREG(info.st_mode):
        raise FlashAttnGuardError("%s %s is not a regular file" % (what, path))
    if whole and info.st_size > limit:
        raise _too_large(path, what, limit)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except (IOError, OSError) as exc:
        raise FlashAttnGuardError("cannot read %s %s: %s" % (what, path, _strerror(exc)))
    return data


def _read_text(path, what):
    """A whole file list (RECORD, installed-files.txt) as text: at most MAX_LIST_BYTES of UTF-8, no NUL."""
    data = _read_bytes(path, what, MAX_LIST_BYTES, whole=True)
    if len(data) > MAX_LIST_BYTES:  # grew while being read
        raise _too_large(path, what, MAX_LIST_BYTES)
    if b"\0" in data:
        raise FlashAttnGuardError("%s %s is binary (it holds NUL bytes), not a file list" % (what, path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FlashAttnGuardError("%s %s is not UTF-8 text (bad byte at offset %d)" % (what, path, exc.start))


def _check_fields(fields, path, what, line):
    for field in fields:
        if len(field) > MAX_FIELD:
            raise FlashAttnGuardError("%s %s line %d has a field of %d characters (at most %d expected): "
                                      "not a file list an installer wrote" % (what, path, line, len(field), MAX_FIELD))


def _read_record(path):
    """[(path, hash)] of a RECORD (csv: path,hash,size)."""
    text = _read_text(path, "RECORD")
    rows = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            if len(row) > 3:
                raise FlashAttnGuardError("RECORD %s line %d has %d fields (path,hash,size expected)"
                                          % (path, reader.line_num, len(row)))
            _check_fields(row, path, "RECORD", reader.line_num)
            if row and row[0]:
                rows.append((row[0], row[1] if len(row) > 1 else ""))
    except csv.Error as exc:
        raise FlashAttnGuardError("RECORD %s line %d is not valid CSV: %s" % (path, reader.line_num, exc))
    return rows


def _read_installed_files(path):
    rows = []
    for number, line in enumerate(_read_text(path, "installed-files.txt").splitlines(), 1):
        _check_fields([line], path, "installed-files.txt", number)
        if line.strip():
            rows.append((line.strip(), ""))
    return rows


def _read_head(path, what):
    """The first MAX_HEADER_BYTES of a small metadata file as text ('' when it cannot be read)."""
    try:
        return _read_bytes(path, what, MAX_HEADER_BYTES)[:MAX_HEADER_BYTES].decode("utf-8", "replace")
    except FlashAttnGuardError:
        return ""


def _top_level(dist_path):
    text = _read_head(os.path.join(dist_path, "top_level.txt"), "top_level.txt")
    return set(line.strip().replace("/", ".").split(".")[0] for line in text.splitlines() if line.strip())


def _identity(entry, dist_path):
    """(raw name, version) from METADATA, else from the directory name (flash_attn-2.8.3.dist-info).

    A dist-info whose METADATA is lost, unreadable or damaged (a Name that is not UTF-8)
    must still be recognised as flash-attn 2.x: taken for an unknown distribution it
    would be uninstalled as an offender. venv_lock holds the one METADATA reader.
    """
    name, version = distribution_name_version(dist_path, damaged_ok=True)
    return name or entry.rsplit("-", 1)[0], version or "unknown"


def _read_file_list(dist_path, site):
    """(entries, kind) of a distribution: [(raw path, rel path, hash)], 'RECORD'/'installed-files.txt'/None.

    ``raw`` is the path as listed, made relative to site-packages (installed-files.txt
    paths are relative to the egg-info directory) but not normalised: ``..`` after a
    symlink is resolved on disk, not on the string. ``rel`` is its normalised posix form.
    Raises FlashAttnGuardError for a file list that exists but cannot be read.
    """
    record = os.path.join(dist_path, "RECORD")
    if os.path.lexists(record):
        rows, kind = _read_record(record), "RECORD"
    else:
        installed = os.path.join(dist_path, "installed-files.txt")
        if not os.path.lexists(installed):
            return [], None
        base = os.path.basename(dist_path)
        rows = [(line if os.path.isabs(line) else posixpath.join(base, line), digest)
                for line, digest in _read_installed_files(installed)]
        kind = "installed-files.txt"
    return [(raw, _norm_rel(raw, site), digest) for raw, digest in rows], kind


def _norm_rel(path, site):
    if os.path.isabs(path):
        path = os.path.relpath(path, site)
    return posixpath.normpath(path.replace(os.sep, "/"))


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


class Distribution(object):
    """One dist-info/egg-info directory of site-packages and the paths its file list names."""

    def __init__(self, path, entries, list_kind):
        self.path = path
        self.entries = entries
        self.list_kind = list_kind
        self.paths = set(rel for _raw, rel, _hash in entries)


class Owner(Distribution):
    """One installed distribution that owns (or claims) files of flash_attn."""

    def __init__(self, name, raw_name, version, path, entries, list_kind, expected):
        super(Owner, self).__init__(path, entries, list_kind)
        self.name = name
        self.raw_name = raw_name
        self.version = version
        self.expected = expected
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
        self.distributions = []  # every dist-info/egg-info of site-packages, owners included
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
        for line in _read_head(os.path.join(site, name), ".pth file").splitlines():
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("import ") or line.startswith("import\t"):
                continue
            directory = os.path.normpath(os.path.join(site, line))
            candidate = os.path.join(directory, PACKAGE)
            if "\0" in candidate or len(candidate) > MAX_FIELD:
                continue  # not a path Python could add either
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

    Raises FlashAttnGuardError naming the file when any distribution's RECORD or
    installed-files.txt cannot be read (without every file list, who owns what is
    unknown).
    """
    if not isinstance(expected_major, int) or isinstance(expected_major, bool) or expected_major < 1:
        raise FlashAttnGuardError("expected_major must be a positive integer, got %r" % (expected_major,))
    site = _site_for(venv)
    result = Inspection(venv, site, expected_major)
    _read_owners(result)
    _find_leftovers(result)
    _find_damaged(result)
    result.other_locations = _pth_locations(site)
    result.state, result.problems = _classify(result.good, result.offenders, result.leftovers, result.exists, site,
                                              expected_major)
    return result


def _read_owners(result):
    """Every distribution of the site's file lists into ``result``: the owners of flash_attn, good and offending."""
    site = result.site
    try:
        entries = sorted(os.listdir(site))
    except (IOError, OSError) as exc:
        raise FlashAttnGuardError("cannot list %s of venv %s: %s" % (site, result.venv, exc))
    for entry in entries:
        if not (entry.endswith(".dist-info") or entry.endswith(".egg-info")):
            continue
        path = os.path.join(site, entry)
        if not os.path.isdir(path):
            continue
        file_list, kind = _read_file_list(path, site)
        in_package = any(_in_package(rel) for _raw, rel, _hash in file_list)
        if not in_package and PACKAGE not in _top_level(path):
            result.distributions.append(Distribution(path, file_list, kind))
            continue
        raw, version = _identity(entry, path)
        name = canonicalize_name(raw)
        expected = name == EXPECTED_NAME and _major(version) == result.expected_major and kind is not None
        result.owners.append(Owner(name, raw, version, path, file_list, kind, expected))
        result.distributions.append(result.owners[-1])
    result.good = [o for o in result.owners if o.expected]
    result.offenders = [o for o in result.owners if not o.expected]


def _find_leftovers(result):
    """The paths under flash_attn/ no owner lists into ``result.leftovers`` (and ``exists``, ``derived``)."""
    owned = {}
    for owner in result.owners:
        for rel in owner.package_paths:
            owned.setdefault(rel, []).append(owner)
    files, dirs = _walk_package(result.site)
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


def _find_damaged(result):
    """The good owners' files under flash_attn/ that are missing or differ from their RECORD."""
    for owner in result.good:
        for _raw, rel, digest in owner.entries:
            if not _in_package(rel) or rel.endswith(".pyc"):
                continue
            path = os.path.join(result.site, rel)
            if not os.path.isfile(path):
                result.damaged.append({"path": rel, "problem": "missing", "owner": owner.label()})
            elif _hash_matches(path, digest) is False:
                result.damaged.append({"path": rel, "problem": "content differs from RECORD", "owner": owner.label()})


def describe(inspection):
    """One paragraph a person can act on, naming the venv, the owners and the leftovers."""
    if inspection.state == "absent":
        return "venv %s has no flash_attn package (vLLM runs without it)" % inspection.venv
    if inspection.state == "ok":
        owner = inspection.good[0]
        return "flash_attn in venv %s is owned by %s alone, with %s" % (inspection.venv, owner.label(), ROTARY)
    problems = "; ".join(inspection.problems)
    return "flash_attn in venv %s (%s) is in conflict: %s" % (inspection.venv, inspection.site, problems)


# ---------------------------------------------------------------------------
# removal: a plan of resolved paths, checked against fixed bounds, then carried
# out step by step with each path checked again right before it is deleted

def _mode_kind(mode):
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"  # fifo, socket, device: nothing an installer writes


def _kind(path):
    """'file', 'symlink', 'dir', 'other' or 'missing' for a path, never following its last component."""
    try:
        return _mode_kind(os.lstat(path).st_mode)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "missing"
        raise


def _venv_root(inspection):
    """The venv directory (site-packages itself when the venv was given as that and has no pyvenv.cfg above)."""
    site = os.path.normpath(inspection.site)
    if os.path.normpath(inspection.venv) != site:
        return inspection.venv
    root = os.path.dirname(os.path.dirname(os.path.dirname(site)))
    return root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else site


def _ancestors(path, top):
    """Directories from ``path``'s parent up to ``top`` included (``path`` below ``top``)."""
    directory = os.path.dirname(path)
    while _within(directory, top):
        yield directory
        directory = os.path.dirname(directory)
    if directory == top:
        yield top


class _Bounds(object):
    """Where removal may act, as resolved absolute paths.

    A path named in a RECORD is located as the resolved directory that holds it plus its own
    last name: deleting it unlinks that directory entry and never follows it, so a symlink
    in the path (`site-packages/linkdir/...`) counts where it leads, and a symlink at the end
    counts where it sits.
    """

    def __init__(self, inspection):
        self.site = os.path.realpath(inspection.site)
        self.package = os.path.join(self.site, PACKAGE)
        # flash_attn as a symlink resolves elsewhere: then nothing is in bounds below it
        self.package_is_dir = _kind(self.package) == "dir"
        self.root = os.path.realpath(_venv_root(inspection))
        self.forbidden = set([self.root, self.site, os.path.join(self.root, "bin")])
        self._heads = {}

    def locate(self, raw):
        """Resolved location of a listed path, or None when it names a directory by its form ('.', 'x/..', 'x/')."""
        path = raw if os.path.isabs(raw) else os.path.join(self.site, raw)
        head, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):
            return None
        if head not in self._heads:
            self._heads[head] = os.path.realpath(head)
        return os.path.join(self._heads[head], name)

    def own_dist_info(self, owner):
        """The offender's dist-info as a resolved path, or None if it is not a real directory of site-packages."""
        path = os.path.join(self.site, os.path.basename(owner.path))
        return path if _kind(path) == "dir" else None

    def zone(self, loc, own):
        if self.package_is_dir and _within(loc, self.package):
            return "package"
        if own and _within(loc, own):
            return "dist_info"
        if _within(loc, self.root):
            return "venv"
        return "outside"

    def in_other_dist_info(self, loc, own):
        if not _within(loc, self.site):
            return False
        top = os.path.join(self.site, os.path.relpath(loc, self.site).split(os.sep)[0])
        return top != own and (top.endswith(".dist-info") or top.endswith(".egg-info"))

    def makes_the_venv(self, loc):
        """pyvenv.cfg and the rest of the venv's own top level, bin/python*, bin/activate*: never deleted."""
        parent, name = os.path.split(loc)
        return parent == self.root or (parent == os.path.join(self.root, "bin")
                                       and name.lower().startswith(("python", "activate")))


class _Listing(object):
    """Which distributions list a path, by its normalised name and by its resolved location."""

    def __init__(self, inspection, bounds):
        self.by_rel = {}
        self.by_loc = {}
        for dist in inspection.distributions:
            for raw, rel, _digest in dist.entries:
                self.by_rel.setdefault(rel, set()).add(dist.path)
                try:
                    loc = bounds.locate(raw)
                except (OSError, ValueError):
                    loc = None
                if loc:
                    self.by_loc.setdefault(loc, set()).add(dist.path)

    def elsewhere(self, dist_path, rel, loc):
        """Whether a distribution other than ``dist_path`` lists the path (under any name)."""
        others = (self.by_rel.get(rel, set()) if rel else set()) | self.by_loc.get(loc, set())
        return bool(others - set([dist_path]))


class _Plan(object):
    """Resolved paths to unlink (with the kind they had) and directories to rmdir once empty."""

    def __init__(self):
        self.unlink = {}
        self.rmdir = set()

    def steps(self):
        steps = [[UNLINK_FILE if kind == "file" else UNLINK_SYMLINK, path]
                 for path, kind in sorted(self.unlink.items())]
        # deepest first, so a directory emptied by its children goes too
        steps += [[RMDIR, path] for path in sorted(self.rmdir, key=lambda p: (-p.count(os.sep), p))]
        return steps


def _judge(raw, rel, digest, owner, own, bounds, listing):
    """(verdict, location, kind, reason) for one listed path of an offender.

    verdict: 'delete', 'extra' (outside flash_attn/ and the dist-info, to be judged by
    ``_extra_problem``), 'kept' (another distribution lists it), 'missing', 'bad'.
    """
    try:
        loc = bounds.locate(raw)
        if loc is None:
            return "bad", None, None, "names a directory (%s)" % os.path.realpath(os.path.join(bounds.site, raw))
        zone = bounds.zone(loc, own)
        if zone == "outside":
            return "bad", loc, None, "lies outside the venv (at %s)" % loc
        kind = _kind(loc)
    except (OSError, ValueError) as exc:
        return "bad", None, None, "cannot be examined: %s" % exc
    if kind == "dir" or loc in bounds.forbidden:
        return "bad", loc, kind, "names a directory (%s)" % loc
    if kind == "other":
        return "bad", loc, kind, "is not a regular file or symlink (%s)" % loc
    if kind == "missing":
        return "missing", loc, kind, None
    if listing.elsewhere(owner.path, rel, loc):
        return "kept", loc, kind, None
    return ("delete" if zone in ("package", "dist_info") else "extra"), loc, kind, None


def _extra_problem(loc, kind, rel, digest, own, bounds, accepted):
    """Why a listed path outside flash_attn/ and the dist-info may not be deleted, or None if it may.

    Wheels may legitimately install files elsewhere in the venv (a console script in bin/, a
    top-level module). Such a file is deleted only when it is a regular file inside the venv,
    not part of the venv itself or of another dist-info, whose content matches the hash this
    RECORD gives (a RECORD that is merely broken cannot match a file by accident), or a .pyc
    without hash of such a file. Anything else makes the removal fail: a person decides.
    """
    where = "lies outside %s/ and the dist-info (at %s)" % (PACKAGE, loc)
    if kind != "file":
        return where + " and is a symlink"
    if bounds.makes_the_venv(loc) or bounds.in_other_dist_info(loc, own):
        return where + ", part of the venv itself or of another distribution"
    if not digest and _pyc_source(rel) in accepted:
        return None
    if digest.partition("=")[0] not in RECORD_HASHES or _hash_matches(loc, digest) is not True:
        return where + " and its content does not match the hash its RECORD gives"
    return None


def _plan_dist_info(own, owner, plan, listing, bad):
    """Every file and symlink of the dist-info itself (INSTALLER, RECORD...), then its directories."""
    for top, dirs, names in os.walk(own):
        plan.rmdir.add(top)
        for name in dirs + names:
            full = os.path.join(top, name)
            kind = _kind(full)
            if kind == "other":
                bad.append((owner.path, os.path.relpath(full, own), "is not a regular file or symlink (%s)" % full))
            elif kind in ("file", "symlink") and full not in plan.unlink \
                    and not listing.elsewhere(owner.path, None, full):
                plan.unlink[full] = kind


def _plan_uninstall(owner, inspection, bounds, listing, bad):
    if owner.list_kind is None:
        raise FlashAttnGuardError(
            "cannot remove %s from venv %s: %s has no RECORD, so its files cannot be told apart from others'; "
            "uninstall it with the venv's own pip and run again" % (owner.label(), inspection.venv, owner.path))
    if owner.name == EXPECTED_NAME and _major(owner.version) is None:
        raise FlashAttnGuardError(
            "cannot remove %s from venv %s: its version cannot be read from %s (METADATA or the directory name), "
            "so it may be the flash-attn %d.x vLLM needs; fix or uninstall it by hand"
            % (owner.name, inspection.venv, owner.path, inspection.expected_major))
    source = os.path.join(owner.path, owner.list_kind)
    own = bounds.own_dist_info(owner)
    if own is None:
        bad.append((source, os.path.basename(owner.path), "the dist-info is not a directory of site-packages "
                    "(a symlink to %s?)" % os.path.realpath(owner.path)))
    plan = _Plan()
    files, kept, missing, outside, extras = [], [], [], [], []
    for raw, rel, digest in owner.entries:
        verdict, loc, kind, reason = _judge(raw, rel, digest, owner, own, bounds, listing)
        if verdict == "bad":
            bad.append((source, raw, reason))
        elif verdict == "kept":
            kept.append(rel)
        elif verdict == "missing":
            missing.append(rel)
        elif verdict == "extra":
            extras.append((loc, kind, rel, digest))
        else:
            files.append(rel)
            plan.unlink[loc] = kind
            if bounds.package_is_dir and _within(loc, bounds.package):
                plan.rmdir.update(_ancestors(loc, bounds.package))
    accepted = set(missing)
    for loc, kind, rel, digest in sorted(extras, key=lambda e: e[2].endswith(".pyc")):  # sources before their .pyc
        problem = _extra_problem(loc, kind, rel, digest, own, bounds, accepted)
        if problem:
            bad.append((source, rel, problem))
        else:
            accepted.add(rel)
            files.append(rel)
            outside.append(rel)
            plan.unlink[loc] = kind  # its directory (bin/, site-packages) stays
    for rel, owners in sorted(inspection.derived.items()):
        # a .pyc Python wrote later, from a source only this offender owns
        loc = bounds.locate(rel)
        if owners == [owner] and loc and bounds.zone(loc, own) == "package" and _kind(loc) in ("file", "symlink") \
                and not listing.elsewhere(owner.path, rel, loc):
            files.append(rel)
            plan.unlink[loc] = _kind(loc)
            plan.rmdir.update(_ancestors(loc, bounds.package))
    if own:
        _plan_dist_info(own, owner, plan, listing, bad)
    return {"action": "uninstall", "name": owner.name, "version": owner.version, "dist_info": owner.path,
            "files": sorted(set(files)), "kept": sorted(kept), "missing": sorted(missing), "outside": sorted(outside),
            "steps": plan.steps()}


def _plan_leftover(rel, bounds, listing, bad):
    """Unlink every file and symlink of a leftover tree (never following one) and rmdir its directories."""
    raw = rel.rstrip("/")
    plan = _Plan()
    loc = bounds.locate(raw)
    if not bounds.package_is_dir:
        # a person linked flash_attn somewhere (a checkout, a shared image): removing the link would change
        # what vLLM imports with no trace of where it pointed, so that is left to them
        if _kind(bounds.package) == "symlink":
            problem = "is a symlink to %s: left as it is (remove the link yourself)" % os.path.realpath(bounds.package)
        else:
            problem = "is not a directory: left as it is"
        bad.append((bounds.site, raw, problem))
        return None
    if loc is None or not (loc == bounds.package or _within(loc, bounds.package)):
        bad.append((bounds.site, raw, "does not resolve to a path under %s/" % bounds.package))
        return None
    kind = _kind(loc)
    if kind == "dir":
        for top, dirs, names in os.walk(loc):
            plan.rmdir.add(top)
            for name in dirs + names:
                full = os.path.join(top, name)
                sub = _kind(full)
                if sub == "other":
                    bad.append((bounds.site, os.path.relpath(full, bounds.site),
                                "is not a regular file, symlink or directory"))
                elif sub in ("file", "symlink") and not listing.elsewhere(None, None, full):
                    plan.unlink[full] = sub
    elif kind in ("file", "symlink") and not listing.elsewhere(None, None, loc):
        plan.unlink[loc] = kind
    elif kind == "other":
        bad.append((bounds.site, raw, "is not a regular file, symlink or directory"))
    if loc != bounds.package:
        plan.rmdir.update(_ancestors(loc, bounds.package))
    return {"action": "remove_leftover", "path": rel, "steps": plan.steps()}


def _refusal(inspection, bad):
    shown = ["%s: %r %s" % item for item in bad[:MAX_SHOWN]]
    if len(bad) > MAX_SHOWN:
        shown.append("and %d more" % (len(bad) - MAX_SHOWN))
    return ("refusing to remove anything from venv %s (nothing was deleted): removal deletes only regular files "
            "and symlinks under site-packages/%s/ or in the offending distribution's own dist-info that no other "
            "distribution lists, and these %d listed path(s) are outside that; check them and uninstall by hand: %s"
            % (inspection.venv, PACKAGE, len(bad), "; ".join(shown)))


def plan_removal(inspection):
    """The actions that remove every offending owner and every leftover, files of any other distribution kept.

    Each action is a dict: ``{"action": "uninstall", "name", "version", "dist_info",
    "files": [listed paths deleted], "kept": [listed paths another distribution lists too],
    "missing": [listed paths not on disk], "outside": [the files deleted outside flash_attn/
    and the dist-info], "steps": [...]}`` or ``{"action": "remove_leftover", "path", "steps"}``
    (paths relative to site-packages). ``steps`` is exactly what ``apply_removal`` does, with
    resolved absolute paths: ``["unlink_file"|"unlink_symlink", path]`` then
    ``["rmdir_if_empty", directory]``.

    Raises FlashAttnGuardError, listing every offending path, when anything listed lies outside
    the bounds (see ``_Bounds`` and ``_extra_problem``): nothing is deleted then.
    """
    bounds = _Bounds(inspection)
    listing = _Listing(inspection, bounds)
    actions, bad = [], []
    for owner in inspection.offenders:
        actions.append(_plan_uninstall(owner, inspection, bounds, listing, bad))
    for rel in inspection.leftovers:
        action = _plan_leftover(rel, bounds, listing, bad)
        if action:
            actions.append(action)
    if bad:
        raise FlashAttnGuardError(_refusal(inspection, bad))
    return actions


_PLANNED_KIND = {UNLINK_FILE: "file", UNLINK_SYMLINK: "symlink", RMDIR: "dir"}


def _changed(venv, path, what):
    return FlashAttnGuardError("removal from venv %s stopped at %s: %s since the plan was made; it was not followed "
                               "and is left as it is" % (venv, path, what))


def _step(op, path, venv, act):
    """Check one planned step against the disk (its directory still resolves to itself, the path is still
    the kind planned) and, with ``act``, carry it out relative to that directory. Returns whether it removed."""
    head, name = os.path.split(path)
    try:
        fd = os.open(head, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False  # gone already, with its directory
        raise _changed(venv, path, "its directory cannot be opened as a directory (%s)" % _strerror(exc))
    try:
        if os.path.realpath(head) != head:
            raise _changed(venv, path, "its directory now resolves to %s" % os.path.realpath(head))
        try:
            kind = _mode_kind(os.lstat(name, dir_fd=fd).st_mode)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise _changed(venv, path, "it cannot be examined (%s)" % _strerror(exc))
        if kind != _PLANNED_KIND[op]:
            raise _changed(venv, path, "it is now a %s, not the %s planned" % (kind, _PLANNED_KIND[op]))
        if not act:
            return False
        try:
            if op == RMDIR:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT or (op == RMDIR and exc.errno in (errno.ENOTEMPTY, errno.EEXIST)):
                return False  # a directory still holding what is not ours stays
            raise FlashAttnGuardError("cannot remove %s from venv %s: %s" % (path, venv, _strerror(exc)))
        return True
    finally:
        os.close(fd)


def apply_removal(inspection, actions, removed=None):
    """Carry out exactly the ``steps`` of ``plan_removal``'s actions: every file and symlink, then every
    directory deepest first, each only if empty. Every step is checked against the disk before the
    first deletion and again right before its own; ``removed`` (a list) collects what was removed."""
    removed = [] if removed is None else removed
    steps = [step for action in actions for step in action.get("steps", [])]
    unlinks = [step for step in steps if step[0] != RMDIR]
    rmdirs = sorted(set(step[1] for step in steps if step[0] == RMDIR), key=lambda p: (-p.count(os.sep), p))
    ordered = unlinks + [[RMDIR, path] for path in rmdirs]
    for op, path in ordered:
        _step(op, path, inspection.venv, act=False)
    for op, path in ordered:
        if _step(op, path, inspection.venv, act=True):
            removed.append(path)
    return removed


def _predicted(inspection):
    """The Inspection as it will be after ``apply_removal`` (for check mode)."""
    after = Inspection(inspection.venv, inspection.site, inspection.expected_major)
    after.owners = list(inspection.good)
    after.good = list(inspection.good)
    after.damaged = list(inspection.damaged)
    after.other_locations = list(inspection.other_locations)
    after.exists = any(os.path.lexists(os.path.join(inspection.site, p)) for o in after.good for p in o.package_paths)
    after.state, after.problems = _classify(after.good, [], [], after.exists, inspection.site,
                                            inspection.expected_major)
    return after


def guard(venv, policy="fail", expected_major=2, check_mode=False):
    """Inspect a venv's flash_attn and apply a policy; the one call a module needs.

    ``policy``: ``report`` never changes or fails on a conflict; ``fail`` raises
    FlashAttnGuardError on a conflict; ``remove`` plans the removal of every
    offending distribution (the files its RECORD lists that no other
    distribution lists, under flash_attn/ or in its dist-info, see
    ``plan_removal``) and every leftover, refuses the whole plan if anything
    listed is out of bounds, carries it out, then raises if a conflict remains
    (e.g. the expected flash-attn lacks rotary.py). With ``check_mode`` nothing
    is changed, ``actions`` is the exact plan and ``after`` the prediction.
    A file list that cannot be read raises under every policy.

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
    try:
        actions = plan_removal(before)
    except FlashAttnGuardError as exc:
        raise FlashAttnGuardError(str(exc), result)
    except (OSError, ValueError) as exc:  # a path that cannot even be examined: nothing was deleted either
        raise FlashAttnGuardError("cannot plan the removal in venv %s (nothing was deleted): %s" % (venv, exc), result)
    result["actions"] = actions
    result["changed"] = bool(actions)
    if check_mode:
        after = _predicted(before)
    else:
        removed = []
        try:
            apply_removal(before, actions, removed)
        except FlashAttnGuardError as exc:
            result["changed"] = bool(removed)
            raise FlashAttnGuardError("%s (%d path(s) had been removed before)" % (exc, len(removed)), result)
        after = inspect_venv(venv, expected_major)
    result["after"] = after.as_dict()
    if after.state == "conflict":
        raise FlashAttnGuardError(
            "%s flash_attn in venv %s is still in conflict: %s" % (
                "After removing what could be removed," if actions else "Nothing could be removed, and",
                venv, "; ".join(after.problems)), result)
    return result
