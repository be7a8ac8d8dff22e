# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `vllm_service` role's state of a host, read in one module call, and what a run must change.

The host side runs in module vllm_service_host_state: the venv link, the installed vLLM, the
target's and the drafter's config.json, the account and groups, the GPU device nodes, who
listens on the port (and in which control group), the unit's systemd properties, the unit,
environment file, record and environment directory (owner, group, mode, SHA-256), the target
model's file fingerprint and which rollback copies exist.

``plan`` runs on the controller (filter vllm_service_plan): it compares that with the files the
role renders there and names only the work left, so that a run with nothing to change makes no
other round trip but the readiness probe. Where it cannot tell (a symbolic mode, an unknown
unit state), it leaves the task to run and the task decides.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import grp
import hashlib
import os
import pwd
import re
import stat

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import sha256_text

_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_PID = re.compile(r"pid=([0-9]+)")
# What `systemctl show` is asked for (one call): the port check, the restart detection, the start.
UNIT_PROPERTIES = ("ControlGroup", "InvocationID", "ActiveState", "UnitFileState")
# systemd_service state=started leaves a unit alone in these states (is_running_service).
_RUNNING = ("active", "activating")
MAX_CGROUP_SIZE = 64 << 10


class VllmServiceStateError(Exception):
    """Bad input, with a message naming what was expected."""


# ---------------------------------------------------------------- host side

def venv_link(path):
    """The venv path and, when it is a symbolic link, what it resolves to (as the stat module's lnk_source)."""
    islink = os.path.islink(path)
    return {"path": path, "exists": os.path.lexists(path), "islink": islink,
            "real": os.path.realpath(path) if islink else path}


def model_files(model_dir, patterns):
    """What ``find paths=<model_dir> patterns=<patterns>`` lists: regular, not hidden, top level only.

    Each as {path, size, mtime}; the fingerprint below is the file_fingerprint filter's.
    """
    try:
        names = sorted(os.listdir(model_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith(".") or not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        path = os.path.normpath(os.path.join(model_dir, name))
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append({"path": path, "size": st.st_size, "mtime": st.st_mtime})
    return out


def fingerprint(files):
    """One string for a set of files (path, size, mtime): the file_fingerprint filter's, byte for byte."""
    rows = ["%s\t%d\t%.6f" % (f["path"], int(f["size"]), float(f["mtime"])) for f in files]
    return "sha256:" + hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def account(user):
    """getent passwd's fields for the user ([password, uid, gid, gecos, home, shell], strings) or None."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return [entry.pw_passwd, str(entry.pw_uid), str(entry.pw_gid), entry.pw_gecos, entry.pw_dir, entry.pw_shell]


def group_db():
    """getent group as Ansible returns it: {name: [password, gid, "member,member"]}."""
    return dict((g.gr_name, [g.gr_passwd, str(g.gr_gid), ",".join(g.gr_mem)]) for g in grp.getgrall())


def device_nodes(dev_dir="/dev", pattern="nvidia*"):
    """What ``find paths=/dev patterns=nvidia* file_type=any`` lists, with the fields vllm_device_access reads."""
    try:
        names = sorted(os.listdir(dev_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith(".") or not fnmatch.fnmatch(name, pattern):
            continue
        path = os.path.join(dev_dir, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append({"path": path, "ischr": stat.S_ISCHR(st.st_mode), "isdir": stat.S_ISDIR(st.st_mode),
                    "uid": st.st_uid, "gid": st.st_gid, "mode": "%04o" % stat.S_IMODE(st.st_mode)})
    return out


def parse_systemctl_show(text, properties=UNIT_PROPERTIES):
    """{property: value} from ``systemctl show --property=A,B`` (each wanted property present, '' when absent)."""
    out = dict((p, "") for p in properties)
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key in out:
            out[key] = value.strip()
    return out


def listener_pid(ss_output):
    """The first pid=N of ``ss -Hltnp`` output, or None."""
    match = _PID.search(ss_output or "")
    return int(match.group(1)) if match else None


def rollback_copies(paths):
    """The paths among ``paths`` whose rollback copy ``<path>.prev`` exists."""
    out = []
    for path in paths:
        if path not in out and os.path.lexists(path + ".prev"):
            out.append(path)
    return out


# ---------------------------------------------------------------- controller side

def _mode_matches(have, want):
    want = str(want)
    if not _OCTAL_MODE.match(want) or not isinstance(have, str) or not _OCTAL_MODE.match(have):
        return False  # symbolic, or unknown: let the task decide
    return int(have, 8) == int(want, 8)


def file_changed(state, want):
    """Whether a copy of want["content"] with want's owner, group and mode would change the file."""
    if not isinstance(want, dict) or not isinstance(want.get("content"), str):
        raise VllmServiceStateError("vllm_service_plan: a file needs its content as a string, got %.80r"
                                    % (sorted(want) if isinstance(want, dict) else want,))
    state = state or {}
    return not (state.get("exists") and not state.get("isdir")
                and state.get("sha256") == sha256_text(want["content"])
                and state.get("owner") == str(want.get("owner", "root"))
                and state.get("group") == str(want.get("group", "root"))
                and _mode_matches(state.get("mode"), want.get("mode", "")))


def dir_changed(state, want):
    state = state or {}
    return not (state.get("exists") and state.get("isdir")
                and state.get("owner") == str(want.get("owner", "root"))
                and state.get("group") == str(want.get("group", "root"))
                and _mode_matches(state.get("mode"), want.get("mode", "")))


def port_check(state):
    """(ok, listener): the port is free, or its listener runs in the unit's control group."""
    port = state.get("port") or {}
    listener = (port.get("listener") or "").strip()
    cgroup = (state.get("unit") or {}).get("ControlGroup") or ""
    if not listener:
        return True, ""
    return bool(cgroup) and cgroup in (port.get("listener_cgroup") or ""), listener


def start_needed(state, enabled, pending):
    """Whether systemd_service (state=started, enabled=...) could change anything.

    Not when nothing is pending and the unit runs (or starts) and is enabled as wanted; an
    unknown UnitFileState (static, linked, ...) leaves it to the module.
    """
    unit = state.get("unit") or {}
    want = "enabled" if enabled else "disabled"
    return bool(pending) or unit.get("ActiveState") not in _RUNNING or unit.get("UnitFileState") != want


FILES = ("unit", "env", "record")
DIRS = ("env_dir",)


def plan(state, wanted):
    """What a run must do, from the host's state (module) and the files the role renders.

    wanted: any of unit, env, record ({content, owner, group, mode}), env_dir ({owner, group,
    mode}), enabled (vllm_service_enabled). Only the keys given are decided; the result names no
    content (the environment file's secrets stay on the controller).
    """
    if not isinstance(state, dict) or "files" not in state or "unit" not in state:
        raise VllmServiceStateError("vllm_service_plan: expected the result of "
                                    "inference.gpu_host.vllm_service_host_state, got %.80r" % (state,))
    if not isinstance(wanted, dict):
        raise VllmServiceStateError("vllm_service_plan: wanted must be a mapping, got %.80r" % (wanted,))
    files = state["files"] or {}
    out = {}
    for key in FILES:
        if key in wanted:
            out[key + "_changed"] = file_changed(files.get(key), wanted[key])
    for key in DIRS:
        if key in wanted:
            out[key + "_changed"] = dir_changed(files.get(key), wanted[key])
    out["pending"] = bool(out.get("unit_changed") or out.get("env_changed"))
    if "enabled" in wanted:
        out["start_needed"] = start_needed(state, wanted["enabled"], out["pending"])
    out["port_ok"], out["listener"] = port_check(state)
    out["rollback_copies"] = list(state.get("rollback_copies") or [])
    return out
