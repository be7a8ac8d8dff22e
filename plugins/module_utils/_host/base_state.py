# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `base` role's state of a host, read in one module call, and what a run must change.

``host_state`` runs on the host (module base_host_state): packages, /dev/shm, the extra CA
certificates' hashes, the role's record (a local fact), the account and the paths it owns.
``plan`` runs on the controller (filter base_plan): it compares that with what the role's
variables ask for and names only the work left to do, so that a run with nothing to change
makes no other round trip. It skips a task only where the task itself would change nothing;
when it cannot tell (a symbolic mode, an unknown field), it leaves the task to run.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import os
import pwd
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    owner_name, path_state, read_record, sha256_text)

RECORD_VERSION = 1
# How the role installs each certificate (its copy task says the same).
CA_FILE = {"owner": "root", "group": "root", "mode": "0644"}
_CA_SUFFIX = re.compile(r"\.(crt|pem)$")
_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_PEM = re.compile(r"-----BEGIN [A-Z ]*CERTIFICATE-----")
DPKG_FORMAT = "-f=${Package} ${db:Status-Status}\\n"


class BaseStateError(Exception):
    """Bad input, with a message naming the variable and what was expected."""


# ---------------------------------------------------------------- host side

def parse_dpkg(output, names):
    """{name: installed} from ``dpkg-query -W -f='${Package} ${db:Status-Status}\\n'`` output."""
    installed = {name: False for name in names}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in installed:
            installed[parts[0]] = parts[1] == "installed"
    return installed


def shm_mib(path="/dev/shm"):
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize // (1 << 20)


def account_state(user, group):
    out = {"user": {"exists": False}, "group": {"exists": False}}
    try:
        grp.getgrnam(group)
        out["group"] = {"exists": True}
    except KeyError:
        pass
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return out
    out["user"] = {
        "exists": True,
        "group": owner_name(grp.getgrgid, entry.pw_gid),
        "home": entry.pw_dir,
        "shell": entry.pw_shell,
        "home_exists": os.path.isdir(entry.pw_dir),
    }
    return out


def ca_files(ca_dir):
    """{file name: path_state} of the *.crt files in ca_dir ({} when it does not exist)."""
    try:
        names = sorted(os.listdir(ca_dir))
    except OSError:
        return {}
    return {n: path_state(os.path.join(ca_dir, n)) for n in names if n.endswith(".crt")}


def _check_options(params):
    for option in ("ca_dir", "record"):
        if not os.path.isabs(params[option]):
            raise BaseStateError("%s must be an absolute path, got %r" % (option, params[option]))
    bad = [p for p in params["paths"] if not os.path.isabs(p)]
    if bad:
        raise BaseStateError("paths must be absolute, got %r" % (bad,))
    bad = [p for p in params["packages"] if not p or p.startswith("-") or any(c.isspace() for c in p)]
    if bad:
        raise BaseStateError("packages must be Debian package names, got %r" % (bad,))


# base_host_state's options (the module and host_state's base read validate against this one spec).
ARGUMENT_SPEC = dict(
    packages=dict(type="list", elements="str", default=[]),
    ca_dir=dict(type="path", required=True),
    record=dict(type="path", required=True),
    user=dict(type="str", required=True),
    group=dict(type="str", required=True),
    paths=dict(type="list", elements="path", default=[]),
    gpus=dict(type="bool", default=False),
)


def host_state(module):
    """The base_host_state module's result, through the module (its params, run_command, get_bin_path, warn).

    Bad options are a BaseStateError naming the option, raised before anything is read."""
    params = module.params
    _check_options(params)
    names = sorted(set(params["packages"]) | {"python3-apt"})
    dpkg = module.get_bin_path("dpkg-query")
    out = ""
    if dpkg:
        # rc 1 only says that some package is unknown: its line is missing, so it reads as not installed.
        _rc, out, _err = module.run_command([dpkg, "-W", DPKG_FORMAT] + names)
    record, warning = read_record(params["record"])
    if warning:
        module.warn(warning)
    result = dict(
        changed=False,
        packages=parse_dpkg(out, names),
        shm_mib=shm_mib(),
        ca_files=ca_files(params["ca_dir"]),
        record=record,
        paths={p: path_state(p) for p in params["paths"]},
    )
    result.update(account_state(params["user"], params["group"]))
    if params["gpus"]:
        # Imported here: the base_plan filter imports this file on the controller, in each task's worker.
        from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import read_gpu_facts
        result["gpu_info"] = read_gpu_facts(module)
    return result


def module_result(module):
    """What base_host_state returns (and host_state's base read): host_state's result, or module.fail_json."""
    try:
        return host_state(module)
    except BaseStateError as exc:
        module.fail_json(msg=str(exc))


# ---------------------------------------------------------------- controller side

def ca_certificates(items, contents):
    """[{name, dest_name, content, sha256}] from base_extra_ca_certificates.

    items: the variable's list (a controller path, or {name, content}); contents: the path
    items' file contents, in order (read on the controller by the file lookup).
    """
    if not isinstance(items, list):
        raise BaseStateError("base_extra_ca_certificates: expected a list, got %s" % type(items).__name__)
    contents = list(contents or [])
    out, seen = [], {}
    for index, item in enumerate(items):
        if isinstance(item, str) and item:
            if not contents:
                raise BaseStateError("base_extra_ca_certificates[%d]: %s could not be read on the controller"
                                     % (index, item))
            name, content = os.path.basename(item), contents.pop(0)
        elif isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"] \
                and isinstance(item.get("content"), str):
            name, content = item["name"], item["content"]
        else:
            raise BaseStateError("base_extra_ca_certificates[%d]: expected a controller path or "
                                 "{name: ..., content: PEM}, got %.80r" % (index, item))
        if not _PEM.search(content):
            raise BaseStateError("base_extra_ca_certificates[%d] (%s): expected a PEM certificate "
                                 "(-----BEGIN CERTIFICATE-----)" % (index, name))
        # update-ca-certificates only picks up files ending in .crt
        dest_name = _CA_SUFFIX.sub("", os.path.basename(name)) + ".crt"
        if dest_name in seen:
            raise BaseStateError("base_extra_ca_certificates[%d] and [%d] are both installed as %s: "
                                 "give them different names" % (seen[dest_name], index, dest_name))
        seen[dest_name] = index
        out.append({"name": name, "dest_name": dest_name, "content": content, "sha256": sha256_text(content)})
    if contents:
        raise BaseStateError("base_extra_ca_certificates: more file contents than path items")
    return out


def _mode_matches(have, want):
    want = str(want)
    if not _OCTAL_MODE.match(want):
        return False  # symbolic: let the file module decide
    return int(have, 8) == int(want, 8)


def _path_ok(state, want, isdir):
    return bool(state and state.get("exists") and state.get("isdir") == isdir
                and state.get("owner") == str(want["owner"]) and state.get("group") == str(want["group"])
                and _mode_matches(state.get("mode", "0"), want["mode"]))


def _require(mapping, keys, what):
    missing = [k for k in keys if k not in mapping]
    if missing:
        raise BaseStateError("%s: missing %s" % (what, ", ".join(missing)))


def plan(state, wanted):
    """What a run must do, from the host's state (host_state) and the role's wanted state.

    wanted: packages, ca_certificates (from ca_certificates()), user, group, home, shell,
    directories [{path, owner, group, mode}], limits {path, content, owner, group, mode}, and
    optionally ca_dir {path, owner, group, mode} (checked only when there are certificates) and
    facts_dir (the record's directory, same keys).
    """
    if not isinstance(state, dict) or "packages" not in state:
        raise BaseStateError("base_plan: expected the result of inference.gpu_host.base_host_state, got %.80r"
                             % (state,))
    _require(wanted, ("packages", "ca_certificates", "user", "group", "home", "shell", "directories", "limits"),
             "base_plan wanted state")
    packages = sorted(set(wanted["packages"]))
    installed = state["packages"]
    missing = [p for p in packages if not installed.get(p)]

    have_ca = state.get("ca_files") or {}
    certs = wanted["ca_certificates"]
    ca_write = [c for c in certs
                if not (_path_ok(have_ca.get(c["dest_name"]), CA_FILE, False)
                        and have_ca[c["dest_name"]].get("sha256") == c["sha256"])]
    want_ca = {c["dest_name"]: c["sha256"] for c in certs}
    record = state.get("record") or {}
    # The store was rebuilt for exactly these hashes only if the record says so: a run that
    # stopped between the copy and update-ca-certificates leaves files the store lacks.
    ca_refresh = bool(ca_write) or (bool(want_ca) and record.get("ca_certificates") != want_ca)

    new_record = {"version": RECORD_VERSION, "packages": packages, "ca_certificates": want_ca}
    record_changed = {k: record.get(k) for k in new_record} != new_record

    user, group = str(wanted["user"]), str(wanted["group"])
    account = state.get("user") or {}
    user_changed = user != "root" and not (
        account.get("exists") and account.get("group") == group and account.get("home") == wanted["home"]
        and account.get("shell") == wanted["shell"] and account.get("home_exists"))
    group_changed = group != "root" and not (state.get("group") or {}).get("exists")

    paths = state.get("paths") or {}
    directories = [d for d in wanted["directories"] if not _path_ok(paths.get(d["path"]), d, True)]
    ca_dir = wanted.get("ca_dir")
    ca_dir_changed = bool(certs) and bool(ca_dir) and not _path_ok(paths.get(ca_dir["path"]), ca_dir, True)
    facts_dir = wanted.get("facts_dir")
    facts_dir_changed = bool(facts_dir) and not _path_ok(paths.get(facts_dir["path"]), facts_dir, True)
    limits = wanted["limits"]
    limits_state = paths.get(limits["path"])
    limits_changed = not (_path_ok(limits_state, limits, False)
                          and limits_state.get("sha256") == sha256_text(limits["content"]))

    return {
        "install_packages": missing,
        "ca_write": ca_write,
        "ca_dir_changed": ca_dir_changed,
        "facts_dir_changed": facts_dir_changed,
        "ca_refresh": ca_refresh,
        "record": new_record,
        "record_changed": record_changed,
        "group_changed": group_changed,
        "user_changed": user_changed,
        "directories": directories,
        "limits_changed": limits_changed,
        "noop": not (missing or ca_dir_changed or facts_dir_changed or ca_refresh or record_changed or user_changed or group_changed
                     or directories or limits_changed),
    }


def role_plan(state, wanted):
    """plan() from the base_plan filter's input: ``wanted`` holds the role's ``ca_certificates`` items raw and,
    beside them, ``ca_contents`` (the contents of the path items, read on the controller)."""
    if not isinstance(wanted, dict):
        raise BaseStateError("base_plan: wanted must be a mapping, got %.80r" % (wanted,))
    wanted = dict(wanted)
    wanted["ca_certificates"] = ca_certificates(wanted.get("ca_certificates") or [], wanted.pop("ca_contents", []))
    return plan(state, wanted)
