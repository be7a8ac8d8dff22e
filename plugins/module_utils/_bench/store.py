# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Where an instance's benchmark results live on the host, and the key they are kept under.

The key is what the figures are figures of: the venv generation the unit runs (the basename of its
real venv directory, docs/generations.md), the drafter's fingerprint (its config.json and the content of its
weights, whose sha256 is cached beside the records with the file's size, times and inode) and the unit's
hash. Layout, one directory per instance:

  <dir>/<generation>__d-<12 hex>__u-<12 hex>.json   the last run under that key
  <dir>/last.json                                   the last recorded figures (the report's and the drift check's)
  <dir>/reference.json                              the reference: the first recorded run, or the last accepted on
                                                    purpose (accept_new): what the gate compares with
  <dir>/baseline/<generation>__d-none__u-<12 hex>.json   a baseline (the target without speculation; the unit
                                                    hash is of the unit text without --speculative-config)
  <dir>/baseline/last.json                          the last recorded baseline

A run whose gate failed is written under its key (so the report shows it) but never to last.json. An instance
recorded before references were kept has no reference.json: its last.json is its reference, and is written as
reference.json by the next run that records (so the reference stays put from then on).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import json
import os
import re
import tempfile

from ansible_collections.inference.gpu_host.plugins.module_utils._bench.gate import recorded_problems
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    NotRegularFile, open_regular, parse_json_bounded)

LAST = "last.json"
REFERENCE = "reference.json"
RECORD_SUFFIX = ".json"
SCHEMA = 1
# A record is a few KiB; anything far larger in the directory is not one of ours.
MAX_RECORD_BYTES = 1 << 20
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")
# The drafter weights' sha256 and the size and mtime it was computed at, beside the records.
WEIGHTS_CACHE = ".drafter-weights.json"


class StoreError(ValueError):
    """The results directory or a record in it cannot be used (a sentence naming the file)."""


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path, limit=MAX_RECORD_BYTES):
    """The bytes of a regular file of at most ``limit`` bytes. A FIFO or a device is never opened (it would block
    or never end): StoreError naming it, as for a file too large; OSError when it is missing or unreadable."""
    try:
        with open_regular(path) as fh:
            data = fh.read(limit + 1)
    except NotRegularFile as exc:
        raise StoreError("%s: move it away or remove it" % exc)
    if len(data) > limit:
        raise StoreError("%s is larger than %d bytes" % (path, limit))
    return data


def check_dir(path, option="results_dir"):
    """StoreError unless ``path`` is a directory or can be made one (every part of it that exists is a directory):
    asked before any load is sent, so that the figures of a run always have somewhere to go."""
    existing = path
    while existing and not os.path.lexists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if existing and os.path.lexists(existing) and not os.path.isdir(existing):
        what = "a regular file" if os.path.isfile(existing) else "not a directory"
        raise StoreError("%s=%s: %s is %s, not a directory: nothing measured (move it away or choose another "
                         "directory)" % (option, path, existing, what))


def _weights_sha(path, cache_path, write_cache):
    """sha256 of the weights, read once per placement: cached beside the records with the file's size, times and
    inode when it was read (a multi-GB drafter is not read again on every run)."""
    st = os.stat(path)
    # ctime and inode too: a copy can keep size and mtime, but not the inode change time (utime sets it).
    stamp = {"path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
             "inode": st.st_ino}
    try:
        cached, why = parse_json_bounded(_read_bytes(cache_path))
    except (IOError, OSError, StoreError):
        cached, why = None, "unreadable"
    if not why and isinstance(cached, dict) and all(cached.get(k) == v for k, v in stamp.items()):
        return str(cached.get("sha256", ""))
    digest = hashlib.sha256()
    with open_regular(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    stamp["sha256"] = digest.hexdigest()
    if write_cache:
        try:
            _write(cache_path, stamp)
        except (IOError, OSError):
            pass  # only a cache: the next run reads the weights again
    return stamp["sha256"]


def drafter_fingerprint(drafter_dir, results_dir=None, write_cache=False):
    """sha256 of the drafter's config.json and the content of its weights (model.safetensors); "none" without a
    drafter directory (no speculation). The weights' sha256 is cached in ``results_dir`` when ``write_cache``."""
    if not drafter_dir:
        return "none"
    parts = []
    try:
        parts.append(b"config.json\0" + _read_bytes(os.path.join(drafter_dir, "config.json")))
    except (IOError, OSError):
        parts.append(b"config.json\0-")
    weights = os.path.join(drafter_dir, "model.safetensors")
    cache = os.path.join(results_dir or drafter_dir, WEIGHTS_CACHE)
    try:
        parts.append(b"weights\0" + _weights_sha(weights, cache, write_cache and results_dir is not None).encode())
    except (IOError, OSError):
        parts.append(b"weights\0-")
    return _sha(b"\n".join(parts))


def unit_hash(unit_path):
    """sha256 of the unit file's bytes (StoreError when it cannot be read: no unit, no served instance)."""
    try:
        return _sha(_read_bytes(unit_path))
    except (IOError, OSError, StoreError) as exc:
        raise StoreError("cannot read the unit %s: %s" % (unit_path, exc))


def read_text(path):
    """The text of a unit file (StoreError when it cannot be read or is not UTF-8)."""
    try:
        return _read_bytes(path).decode("utf-8")
    except (IOError, OSError, UnicodeDecodeError, StoreError) as exc:
        raise StoreError("cannot read the unit %s: %s" % (path, exc))


def store_key(generation, drafter_fp, unit_sha):
    """The file stem of a record: <generation>__d-<12 hex>__u-<12 hex>, safe as a file name."""
    gen = _SAFE.sub("_", str(generation or "venv"))[:120]
    if gen in (".", ".."):
        gen = "venv"
    return "%s__d-%s__u-%s" % (gen, _SAFE.sub("_", str(drafter_fp)[:12]), _SAFE.sub("_", str(unit_sha)[:12]))


def _load(path, compared=False):
    """The record at ``path``, None when there is none; StoreError naming the file when it is not a record (a FIFO,
    too large, not JSON, no figures) or, when the gate ``compared`` with it, when a figure cannot be compared."""
    try:
        data = _read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (IOError, OSError) as exc:
        raise StoreError("%s cannot be read: %s" % (path, exc))
    record, why = parse_json_bounded(data)
    if why:
        raise StoreError("%s is not a benchmark record (%s): move it away or remove it"
                         % (path, (_where_constants(data) if "not a JSON value" in why else "") or why))
    if not isinstance(record, dict) or not isinstance(record.get("figures"), dict):
        raise StoreError("%s is not a benchmark record (no figures): move it away or remove it" % path)
    problems = recorded_problems(record["figures"]) if compared else []
    if problems:
        raise StoreError("%s holds figures the gate cannot compare with (%s): move it away or remove it, and the "
                         "next run records new figures" % (path, "; ".join(problems)))
    return record


class _Constant(str):
    """NaN, Infinity or -Infinity where JSON has no such value (json accepts them; a record must not)."""


def _where_constants(data):
    """'figures.tok_s_c1 is NaN' for the values JSON does not have, or '' (also when the text is no JSON at all).
    Only called for a text parse_json_bounded refused for such a value: its depth is counted already."""
    try:
        parsed = json.loads(data.decode("utf-8"), parse_constant=_Constant)
    except (ValueError, RecursionError):
        return ""
    found, todo = [], [("", parsed)]
    while todo and len(found) < 5:
        path, value = todo.pop()
        if isinstance(value, _Constant):
            found.append("%s is %s" % (path or "the record", value))
        elif isinstance(value, dict):
            todo.extend(("%s.%s" % (path, k) if path else str(k), v) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend(("%s[%d]" % (path, i), v) for i, v in enumerate(value))
    return "; ".join(sorted(found)) + (", not a JSON number" if found else "")


def load(results_dir, key, compared=True):
    """(the record under ``key`` or None, the last recorded one or None, every record sorted by time).
    ``compared``: the last recorded figures are the gate's, checked as it reads them (not the baseline's)."""
    check_dir(results_dir)
    records = []
    try:
        names = sorted(os.listdir(results_dir))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    except OSError as exc:
        raise StoreError("%s cannot be read: %s" % (results_dir, exc))
    for name in names:
        if name.endswith(RECORD_SUFFIX) and name not in (LAST, REFERENCE) and not name.startswith("."):
            record = _load(os.path.join(results_dir, name))
            if record is not None:
                records.append(record)
    records.sort(key=lambda r: (str(r.get("time", "")), str(r.get("key", ""))))
    by_key = [r for r in records if r.get("key") == key]
    return (by_key[-1] if by_key else None), _load(os.path.join(results_dir, LAST), compared), records


def _write(path, record):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".bench-", dir=directory)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_reference(results_dir):
    """(the instance's reference record or None, where it came from: "reference", "last" or None). Without
    reference.json the last recorded figures are the reference (an instance recorded before references were kept).
    StoreError naming the file when it holds figures the gate cannot compare with."""
    check_dir(results_dir)
    for name, source in ((REFERENCE, "reference"), (LAST, "last")):
        record = _load(os.path.join(results_dir, name), compared=True)
        if record is not None:
            return record, source
    return None, None


def save(results_dir, record, as_last, as_reference=False):
    """Write ``record`` under its key, as last.json when ``as_last`` (the gate recorded it) and as reference.json
    when ``as_reference`` (the first run, or one accepted on purpose)."""
    try:
        _write(os.path.join(results_dir, record["key"] + RECORD_SUFFIX), record)
        if as_last:
            _write(os.path.join(results_dir, LAST), record)
        if as_reference:
            _write(os.path.join(results_dir, REFERENCE), record)
    except (IOError, OSError) as exc:
        raise StoreError("the figures could not be written under %s: %s" % (results_dir, exc))


def save_reference(results_dir, record):
    """Keep ``record`` (the last.json an older instance compared with) as the instance's reference.json."""
    try:
        _write(os.path.join(results_dir, REFERENCE), record)
    except (IOError, OSError) as exc:
        raise StoreError("the reference could not be written under %s: %s" % (results_dir, exc))
