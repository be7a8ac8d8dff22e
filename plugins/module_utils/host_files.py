# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Reading files on a host the way the roles' one-call state reads do (base, python_env, drafter, vllm_service).

One home for: content hashes, lstat as Ansible's stat/file see it (owner and group by name, octal mode), a
role's JSON record, and a small text file read leniently. Read-only, stdlib only.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import stat

MAX_JSON_SIZE = 16 << 20  # records and config.json files are kilobytes; a bigger file is not one


def read_text(path, limit=1 << 20):
    """The text of a small file (the first ``limit`` bytes), or "" when it is missing, unreadable or not a
    regular file (a FIFO would block, a device never end; /proc files are regular)."""
    try:
        if not path or not stat.S_ISREG(os.stat(path).st_mode):
            return ""
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except (IOError, OSError):
        return ""


def sha256_text(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def owner_name(lookup, ident):
    """A user or group name (pwd.getpwuid / grp.getgrgid), or the number when it has none."""
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def stat_path(path, content=False):
    """lstat of a path as Ansible's stat (follow: false) sees it; sha256 of a regular file with ``content``
    (None when it cannot be read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False}
    out = {
        "exists": True,
        "isdir": stat.S_ISDIR(st.st_mode),
        "isreg": stat.S_ISREG(st.st_mode),
        "size": st.st_size,
        "mtime": st.st_mtime,
        "uid": st.st_uid,
        "gid": st.st_gid,
        "owner": owner_name(pwd.getpwuid, st.st_uid),
        "group": owner_name(grp.getgrgid, st.st_gid),
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
    }
    if content and out["isreg"]:
        try:
            out["sha256"] = sha256_file(path)
        except (IOError, OSError):
            out["sha256"] = None
    return out


def path_state(path):
    """exists/isdir/owner/group/mode (octal string) of a path, and sha256 of a regular file."""
    full = stat_path(path, content=True)
    return dict((k, v) for k, v in full.items() if k in ("exists", "isdir", "owner", "group", "mode", "sha256"))


def read_json(path, limit=MAX_JSON_SIZE):
    """(object, error): a JSON file parsed, None when absent or unreadable; error when it is too large or not JSON."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except (IOError, OSError):
        return None, None
    if len(data) > limit:
        return None, "%s is larger than %d bytes, too large for a record or a config.json" % (path, limit)
    try:
        return json.loads(data.decode("utf-8")), None
    except ValueError as exc:
        return None, "%s is not JSON (%s)" % (path, exc)


def read_record(path, consequence="it will be rewritten"):
    """(record, warning): a role's record (a JSON object) or None when absent or unreadable, and why not."""
    data, error = read_json(path)
    if error:
        return None, "%s: %s" % (error, consequence)
    if data is not None and not isinstance(data, dict):
        return None, "%s does not hold a JSON object: %s" % (path, consequence)
    return data, None
