# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The vllm_service role's decisions about the unit around the command line, in one
# tested place: the environment file (secrets included, and whether any is there),
# the systemd hardening, draining on restart, and the service account's access to
# the GPU device nodes. docs/security.md says why each directive is (or is not) set.
#
# Public API (stdlib only; every bad input a VllmUnitError naming the variable,
# never the value of a secret):
# * environment_lines(hf_home, environment, secret_environment, hf_token, api_key) -> ["NAME=value", ...]
# * environment_has_secret(environment, secret_environment, hf_token, api_key) -> bool
# * env_value(text) -> the value as systemd's EnvironmentFile= reads it back unchanged
# * hardening_directives(level, overrides, writable_paths, read_paths) -> [[directive, value], ...]
# * drain_settings(shutdown_timeout, supported) -> {"shutdown_timeout", "kill_mode", "timeout_stop_sec", "reason"}
# * device_groups(user, wanted, group_db, devices) -> [group, ...] for SupplementaryGroups=
# * inaccessible_devices(user, passwd_entry, groups, group_db, devices) -> [path, ...]

import posixpath
import re
from collections.abc import Mapping

PREFIX = "vllm_service_"

# The names the role sets from their own variables: a copy in a mapping would be
# a second, silently ignored (or overriding) value, or a secret outside the secrets.
RESERVED_ENV = {
    "HF_HOME": PREFIX + "hf_home",
    "HF_TOKEN": PREFIX + "hf_token",
    "VLLM_API_KEY": PREFIX + "api_key",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Written as they are; anything else is quoted (systemd's EnvironmentFile= strips
# unquoted whitespace, treats a backslash as an escape and a leading quote as quoting).
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.,:/@+%=-]*$")
# C0, DEL, C1, line/paragraph separators: a newline would start another assignment.
_CONTROL = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A name in vllm_service_environment that holds a credential (the drift report masks
# the same words) makes the environment file secret too: secrets by name, not by accident.
_CREDENTIAL_NAME = re.compile(r"(?i)(?:token|secret|passw(?:or)?d|passphrase|api_?key|private_?key|credentials?)$")
# What vllm_wait_ready sends as "Authorization: Bearer <key>": printable ASCII, no space.
_API_KEY = re.compile(r"^[\x21-\x7e]+$")

HARDENING_LEVELS = ("full", "no_namespaces", "none")
# Directives that need no mount namespace (prctl and seccomp): they work in an
# unprivileged container where systemd cannot set one up (status=226/NAMESPACE).
_NO_NAMESPACE = (
    ("NoNewPrivileges", "yes"),
    ("RestrictSUIDSGID", "yes"),
    ("LockPersonality", "yes"),
    ("RestrictRealtime", "yes"),
)
_FULL = (
    ("ProtectSystem", "full"),
    ("ProtectHome", "read-only"),
    ("PrivateTmp", "yes"),
    ("ProtectKernelTunables", "yes"),
    ("ProtectKernelModules", "yes"),
    ("ProtectControlGroups", "yes"),
) + _NO_NAMESPACE
_LEVELS = {"full": _FULL, "no_namespaces": _NO_NAMESPACE, "none": ()}
# Set by the unit template from their own variables; an override would fight them.
UNIT_OWN = frozenset((
    "Type", "User", "Group", "SupplementaryGroups", "EnvironmentFile", "Environment", "ExecStart", "Restart",
    "RestartSec", "TimeoutStartSec", "TimeoutStopSec", "KillMode", "LimitNOFILE", "LimitMEMLOCK",
    "SyslogIdentifier", "ReadWritePaths",
))
_DIRECTIVE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_HOME_TREES = ("/home", "/root", "/run/user")
_SYSTEM_TREES = {"yes": ("/usr", "/boot", "/efi"), "true": ("/usr", "/boot", "/efi"),
                 "full": ("/usr", "/boot", "/efi", "/etc"), "strict": ("/",)}

# Seconds past --shutdown-timeout before systemd kills what is left: after the drain vLLM
# stops its EngineCore and workers and frees the GPU memory, which takes seconds, not a minute.
STOP_MARGIN_SEC = 60
# What the unit had before draining existed (and keeps where vLLM cannot drain).
LEGACY_TIMEOUT_STOP_SEC = 120

_GROUP_NAME = re.compile(r"^[a-z_][a-z0-9_-]*\$?$")


class VllmUnitError(ValueError):
    """A setting of the vllm_service role that cannot become the unit or its environment (the message names it)."""


def _type(value):
    return type(value).__name__


# ----------------------------------------------------------------- environment
def env_value(text):
    """``text`` written so that systemd's EnvironmentFile= parser reads back exactly ``text``.

    Plain values (letters, digits, ``_.,:/@+%=-``) stay as they are, so an existing file does
    not change; others go in single quotes (everything literal), or, holding a single quote,
    in double quotes with ``\\ " $ ``` escaped (the escapes systemd undoes there).
    """
    if _PLAIN_VALUE.match(text):
        return text
    if "'" not in text:
        return "'%s'" % text
    return '"%s"' % re.sub(r'([\\"$`])', r"\\\1", text)


def _env_entries(variable, mapping, secret):
    """(name, value) pairs of one mapping variable, sorted by name; a secret's value is never shown."""
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        raise VllmUnitError("%s: expected a mapping of NAME: value, got a %s" % (variable, _type(mapping)))
    entries = []
    for name in sorted(mapping, key=str):
        value = mapping[name]
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise VllmUnitError("%s: %r is not an environment variable name (letters, digits and _, not starting "
                                "with a digit)" % (variable, name))
        if name in RESERVED_ENV:
            raise VllmUnitError("%s: %s is set from %s; set that variable instead (vault it if it is a secret)"
                                % (variable, name, RESERVED_ENV[name]))
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
            shown = "a %s" % _type(value) if secret else repr(value)
            raise VllmUnitError("%s.%s: expected a string or a number (quote true/false/yes/no in YAML; remove the "
                                "entry rather than setting it to null), got %s" % (variable, name, shown))
        text = str(value)
        _no_control(variable + "." + name, text, secret)
        entries.append((name, text))
    return entries


def _no_control(what, text, secret):
    bad = _CONTROL.search(text)
    if bad:
        where = "" if secret else " in %r" % (text if len(text) <= 60 else text[:60] + "...")
        raise VllmUnitError("%s: has a control character (U+%04X) at index %d%s; an environment value must be one "
                            "line of printable text" % (what, ord(bad.group()), bad.start(), where))


def _secret_text(variable, value):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise VllmUnitError("%s: expected a string (from the vault), got a %s" % (variable, _type(value)))
    _no_control(variable, value, True)
    return value


def check_api_key(api_key):
    """The API key, checked (it is sent as an HTTP bearer token); '' when there is none."""
    key = _secret_text(PREFIX + "api_key", api_key)
    if key and not _API_KEY.match(key):
        outside = sum(1 for c in key if not _API_KEY.match(c))
        raise VllmUnitError("%s: expected printable ASCII without spaces (it is sent as 'Authorization: Bearer <key>'), "
                            "got %d character(s) outside that" % (PREFIX + "api_key", outside))
    return key


def _settled(environment, secret_environment, hf_token, api_key):
    plain = _env_entries(PREFIX + "environment", environment, False)
    secret = _env_entries(PREFIX + "secret_environment", secret_environment, True)
    both = sorted(set(n for n, _v in plain) & set(n for n, _v in secret))
    if both:
        raise VllmUnitError("%s and %s both set %s: keep each name in one of them (a secret in the second)"
                            % (PREFIX + "environment", PREFIX + "secret_environment", ", ".join(both)))
    return plain, secret, _secret_text(PREFIX + "hf_token", hf_token), check_api_key(api_key)


def environment_lines(hf_home, environment=None, secret_environment=None, hf_token="", api_key=""):
    """The assignments of the unit's environment file, in a fixed order.

    HF_HOME, PYTHONUNBUFFERED, vllm_service_environment (sorted), vllm_service_secret_environment
    (sorted), HF_TOKEN, VLLM_API_KEY; the last two only when set. vLLM reads VLLM_API_KEY when
    no --api-key is given (docs/security.md), so the key never appears on the command line.
    """
    if not isinstance(hf_home, str) or not hf_home.startswith("/"):
        raise VllmUnitError("%s: expected an absolute path, got %r" % (PREFIX + "hf_home", hf_home))
    _no_control(PREFIX + "hf_home", hf_home, False)
    plain, secret, token, key = _settled(environment, secret_environment, hf_token, api_key)
    lines = ["HF_HOME=" + env_value(hf_home), "PYTHONUNBUFFERED=1"]
    lines += ["%s=%s" % (name, env_value(value)) for name, value in plain + secret]
    if token:
        lines.append("HF_TOKEN=" + env_value(token))
    if key:
        lines.append("VLLM_API_KEY=" + env_value(key))
    return lines


def environment_has_secret(environment=None, secret_environment=None, hf_token="", api_key=""):
    """Whether the environment file holds a secret: then its diff and its tasks' output are hidden.

    True with any vllm_service_secret_environment entry, an HF token, an API key, or a
    vllm_service_environment name that ends like a credential (..._TOKEN, ..._API_KEY, ...).
    Checks every input as environment_lines does.
    """
    plain, secret, token, key = _settled(environment, secret_environment, hf_token, api_key)
    return bool(secret or token or key or any(_CREDENTIAL_NAME.search(name) for name, _v in plain))


# ------------------------------------------------------------------- hardening
def _directive_value(name, value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, str) for v in value):
            raise VllmUnitError("%s.%s: expected a list of strings" % (PREFIX + "hardening_overrides", name))
        value = " ".join(value)
    if not isinstance(value, str):
        raise VllmUnitError("%s.%s: expected a string, a number, a boolean, a list of strings or null (to drop the "
                            "directive), got a %s" % (PREFIX + "hardening_overrides", name, _type(value)))
    _no_control(PREFIX + "hardening_overrides." + name, value, False)
    return value


def _under(path, trees):
    return any(tree == "/" or path == tree or path.startswith(tree + "/") for tree in trees)


_WRITABLE = "%swritable_paths (with the account's home and %shf_home)" % (PREFIX, PREFIX)


def _abs_paths(paths):
    if isinstance(paths, (str, bytes, Mapping)) or not isinstance(paths, (list, tuple)):
        raise VllmUnitError("%s: expected a list of absolute paths, got a %s" % (_WRITABLE, _type(paths)))
    out = []
    for path in paths:
        if not isinstance(path, str) or not path.startswith("/"):
            raise VllmUnitError("%s: expected absolute paths, got %r" % (_WRITABLE, path))
        _no_control(_WRITABLE, path, False)
        if " " in path:
            raise VllmUnitError("%s: %r has a space, which ReadWritePaths= would split" % (_WRITABLE, path))
        out.append(posixpath.normpath(path))
    return out


def hardening_directives(level="full", overrides=None, writable_paths=(), read_paths=None):
    """The [Service] hardening directives of the unit, as [[directive, value], ...] in a fixed order.

    ``level``: full (every directive below), no_namespaces (only those that need no mount
    namespace: for unprivileged containers where systemd fails with status=226/NAMESPACE), none.
    ``overrides`` (vllm_service_hardening_overrides): directive -> value, applied last; null drops
    the directive; a new name is appended. ``writable_paths`` (the account's home, HF_HOME,
    vllm_service_writable_paths): those that ProtectSystem/ProtectHome make read-only are listed
    in ReadWritePaths= (each with "-": a missing one is skipped rather than failing the start).
    A writable path that is itself /root, /home or /run/user (root's home) cannot be reopened that
    way: ProtectHome=read-only then becomes ReadOnlyPaths= of the other two.
    ``read_paths`` ({variable: path}: venv, model, drafter): ProtectHome=yes or tmpfs would hide
    them, which is refused. PrivateDevices= (hides /dev/nvidia*) and MemoryDenyWriteExecute= (breaks
    Triton's and Inductor's JIT) are left out; an override can still add them on a CPU-only host.
    """
    if level not in HARDENING_LEVELS:
        raise VllmUnitError("%s: expected one of %s, got %r" % (PREFIX + "hardening", ", ".join(HARDENING_LEVELS),
                                                                level))
    directives = [[name, value] for name, value in _LEVELS[level]]
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, Mapping):
        raise VllmUnitError("%s: expected a mapping of directive: value, got a %s"
                            % (PREFIX + "hardening_overrides", _type(overrides)))
    for name in sorted(overrides, key=str):
        if not isinstance(name, str) or not _DIRECTIVE.match(name):
            raise VllmUnitError("%s: %r is not a systemd directive name (like ProtectHome)"
                                % (PREFIX + "hardening_overrides", name))
        if name in UNIT_OWN:
            raise VllmUnitError("%s: %s is set by the role from its own variable, not here%s"
                                % (PREFIX + "hardening_overrides", name,
                                   " (use %swritable_paths)" % PREFIX if name == "ReadWritePaths" else ""))
        value = overrides[name]
        current = [d for d in directives if d[0] == name]
        if value is None:
            directives = [d for d in directives if d[0] != name]
        elif current:
            current[0][1] = _directive_value(name, value)
        else:
            directives.append([name, _directive_value(name, value)])
    settings = dict((name, value.lower()) for name, value in directives)
    protect_home = settings.get("ProtectHome", "no")
    read_paths = read_paths or {}
    if protect_home in ("yes", "true", "tmpfs"):
        hidden = sorted(var for var, path in read_paths.items() if isinstance(path, str) and _under(path, _HOME_TREES))
        if hidden:
            raise VllmUnitError("%s: ProtectHome=%s hides %s from the server (under %s); use read-only, which the "
                                "role pairs with ReadWritePaths= for the caches"
                                % (PREFIX + "hardening_overrides", protect_home, ", ".join(hidden),
                                   ", ".join(_HOME_TREES)))
    paths = _abs_paths(writable_paths)
    home_trees = _HOME_TREES if protect_home == "read-only" else ()
    # systemd makes a path below a ProtectHome=read-only tree writable again with ReadWritePaths=, but
    # not the tree itself (systemd/systemd#11276): root's home /root stays writable by protecting the
    # other trees with ReadOnlyPaths= instead.
    whole = [tree for tree in home_trees if tree in paths]
    if whole:
        home_trees = tuple(tree for tree in home_trees if tree not in whole)
        at = [d[0] for d in directives].index("ProtectHome")
        directives[at] = ["ReadOnlyPaths", " ".join("-" + tree for tree in home_trees)]
    trees = _SYSTEM_TREES.get(settings.get("ProtectSystem", "no"), ()) + home_trees
    writable = []
    for path in paths:
        if _under(path, trees) and path not in writable:
            writable.append(path)
    # A path inside another listed one adds nothing.
    writable = [p for p in writable if not any(o != p and _under(p, (o,)) for o in writable)]
    if writable:
        directives.append(["ReadWritePaths", " ".join("-" + p for p in writable)])
    return directives


# ----------------------------------------------------------------------- drain
def drain_settings(shutdown_timeout, supported):
    """How the unit stops: drain in-flight requests when this vLLM can, else end everything at once.

    ``supported`` is the versions table's shutdown_timeout for the installed vLLM (True, or
    None/False where it has no --shutdown-timeout or is not installed yet). With a timeout > 0
    and support: --shutdown-timeout N, KillMode=mixed (SIGTERM to the API server alone, which
    drains the engine, then ends its processes) and TimeoutStopSec=N + STOP_MARGIN_SEC.
    """
    if isinstance(shutdown_timeout, bool) or not isinstance(shutdown_timeout, (int, str)) \
            or not re.match(r"^[0-9]+$", str(shutdown_timeout)):
        raise VllmUnitError("%s: expected an integer >= 0 (seconds; 0 ends in-flight requests at once), got %r"
                            % (PREFIX + "shutdown_timeout", shutdown_timeout))
    seconds = int(shutdown_timeout)
    if seconds > 0 and supported is True:
        return {"shutdown_timeout": seconds, "kill_mode": "mixed", "timeout_stop_sec": seconds + STOP_MARGIN_SEC,
                "reason": ""}
    if seconds == 0:
        reason = "%sshutdown_timeout is 0" % PREFIX
    elif supported is None:
        reason = "the installed vLLM is not known (not installed yet?)"
    else:
        reason = "this vLLM has no --shutdown-timeout (the versions table)"
    return {"shutdown_timeout": None, "kill_mode": "control-group", "timeout_stop_sec": LEGACY_TIMEOUT_STOP_SEC,
            "reason": reason}


# ------------------------------------------------------------- account, devices
def _group_db(group_db):
    """getent group as Ansible returns it ({name: [password, gid, "member,member"]}) -> {name: (gid, members)}."""
    if not isinstance(group_db, Mapping):
        raise VllmUnitError("the group database (getent group): expected a mapping, got a %s" % _type(group_db))
    out = {}
    for name, fields in group_db.items():
        if not isinstance(fields, (list, tuple)) or len(fields) < 2 or not re.match(r"^[0-9]+$", str(fields[1])):
            continue
        members = fields[2] if len(fields) > 2 and isinstance(fields[2], str) else ""
        out[str(name)] = (int(fields[1]), [m for m in members.split(",") if m])
    return out


def _char_devices(devices):
    if not isinstance(devices, (list, tuple)):
        raise VllmUnitError("the GPU device nodes (find /dev/nvidia*): expected a list, got a %s" % _type(devices))
    out = []
    for dev in devices:
        if isinstance(dev, Mapping) and dev.get("ischr") and isinstance(dev.get("path"), str):
            out.append(dev)
    return out


def device_groups(user, wanted, group_db, devices):
    """SupplementaryGroups= of the service: the wanted groups that exist, and the groups owning the GPU nodes.

    Root needs none. ``wanted`` (vllm_service_supplementary_groups, e.g. video, render) are
    kept when the host has them; a /dev/nvidia* node whose group is not root (the driver's
    NVreg_DeviceFileGID) adds its group.
    """
    if isinstance(wanted, (str, bytes, Mapping)) or not isinstance(wanted, (list, tuple)):
        raise VllmUnitError("%ssupplementary_groups: expected a list of group names, got a %s"
                            % (PREFIX, _type(wanted)))
    for index, name in enumerate(wanted):
        if not isinstance(name, str) or not _GROUP_NAME.match(name):
            raise VllmUnitError("%ssupplementary_groups[%d]: %r is not a group name" % (PREFIX, index, name))
    if user == "root":
        return []
    groups = _group_db(group_db)
    by_gid = dict((gid, name) for name, (gid, _m) in sorted(groups.items()))
    picked = [name for name in wanted if name in groups]
    for dev in _char_devices(devices):
        gid = int(dev.get("gid", 0))
        if gid != 0 and gid in by_gid:
            picked.append(by_gid[gid])
    seen = []
    for name in picked:
        if name not in seen:
            seen.append(name)
    return seen


def inaccessible_devices(user, passwd_entry, groups, group_db, devices):
    """The GPU device nodes the account cannot open read-write, by the usual owner/group/other rule.

    ``passwd_entry``: getent passwd's fields for the user ([password, uid, gid, gecos, home, shell]).
    ``groups``: its SupplementaryGroups=. Root opens everything.
    """
    if user == "root":
        return []
    if not isinstance(passwd_entry, (list, tuple)) or len(passwd_entry) < 3:
        raise VllmUnitError("%suser=%s: not in the account database (getent passwd)" % (PREFIX, user))
    uid, gid = int(passwd_entry[1]), int(passwd_entry[2])
    if uid == 0:
        return []
    db = _group_db(group_db)
    gids = set([gid])
    for name, (group_gid, members) in db.items():
        if name in groups or user in members:
            gids.add(group_gid)
    bad = []
    for dev in _char_devices(devices):
        mode = int(str(dev.get("mode", "0")), 8)
        if int(dev.get("uid", 0)) == uid:
            needed = 0o600
        elif int(dev.get("gid", 0)) in gids:
            needed = 0o060
        else:
            needed = 0o006
        if mode & needed != needed:
            bad.append(dev["path"])
    return sorted(bad)
