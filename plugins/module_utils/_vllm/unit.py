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
# Every value the unit and its environment file are rendered from comes through here: the role's
# templates call unit_values (the vllm_unit_values filter) for the plain settings, environment_lines,
# hardening_directives, drain_settings and device_groups for the rest, vllm_serve.build_serve_argv and
# exec_word for ExecStart=. Each value is checked against its whole expected form (a full match, so a
# trailing newline cannot slip past a "$"), and nothing with a control character is ever rendered: an
# inventory value cannot end a unit line and start a directive of its own.
#
# Public API (stdlib only; every bad input a VllmUnitError naming the variable,
# never the value of a secret):
# * unit_values({variable: value}) -> {name without vllm_service_: text as rendered, "description": ...}
# * render(values, drain, hardening, serve) -> unit_values, and what else the unit is rendered from (drain_settings,
#   hardening_directives, serve.serve_argv with the drain's --shutdown-timeout): the vllm_unit_values filter
# * check_unit_value(variable, value) -> None or the message (what scripts/validate_inventories.py asks)
# * check_unit_values({variable: value}, vllm_version=None) -> [message, ...] for every vllm_service_* variable
#   given; with the installed vLLM's version, also the environment entries that vLLM refuses at start
# * unit_inputs(values, secrets, vllm_version) -> {problems, env_file, drafter_dir}: the vllm_unit_inputs filter
# * exec_word(text) -> one double-quoted word of ExecStart=; systemd_quote(arg) / systemd_exec(argv): the same with
#   the systemd_exec filter's checks (a string or number, no control character: _common/text.py's CONTROL)
# * environment_lines(hf_home, environment, secret_environment, hf_token, api_key) -> ["NAME=value", ...]
# * environment_has_secret(environment, secret_environment, hf_token, api_key) -> bool
# * env_value(text) -> the value as systemd's EnvironmentFile= reads it back unchanged
# * hardening_directives(level, overrides, writable_paths, read_paths) -> [[directive, value], ...]
# * drain_settings(shutdown_timeout, supported) -> {"shutdown_timeout", "kill_mode", "timeout_stop_sec", "reason"}
# * device_groups(user, wanted, group_db, devices) -> [group, ...] for SupplementaryGroups=
# * inaccessible_devices(user, passwd_entry, groups, group_db, devices) -> [path, ...]
# * env_file(...) -> {"lines", "secret"}; device_access(user, wanted, passwd_entry, group_db, devices) ->
#   {"groups", "inaccessible"} (vllm_unit_inputs' env_file and vllm_service_host_check's device_access)

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.inference.gpu_host.plugins.module_utils._common.network import PORT_RANGE, port_number
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import API_KEY, CREDENTIAL_NAME
from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import CONTROL

PREFIX = "vllm_service_"

# The names the role sets from their own variables: a copy in a mapping would be
# a second, silently ignored (or overriding) value, or a secret outside the secrets.
RESERVED_ENV = {
    "HF_HOME": PREFIX + "hf_home",
    "HF_TOKEN": PREFIX + "hf_token",
    "VLLM_API_KEY": PREFIX + "api_key",
}
# Patterns are full matches (\Z): "$" would let a trailing newline through.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# Written as they are; anything else is quoted (systemd's EnvironmentFile= strips
# unquoted whitespace, treats a backslash as an escape and a leading quote as quoting).
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.,:/@+%=-]*\Z")
# No rendered value may hold a control character (_common/text.py's CONTROL): a newline or carriage return
# ends the unit's (or the environment file's) line and starts another directive or assignment; NUL ends it.
# A name in vllm_service_environment that holds a credential (module_utils/_common/redaction.py, which the
# drift report masks by) makes the environment file secret too: secrets by name, not by accident.
_CREDENTIAL_NAME = CREDENTIAL_NAME

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
_DIRECTIVE = re.compile(r"^[A-Z][A-Za-z0-9]*\Z")
# An override sandboxes the server; one that runs a command or changes its environment would be a
# second, unreviewed ExecStart= or LD_PRELOAD: refused (set them in a drop-in of your own, if ever).
_NOT_OVERRIDES = re.compile(r"^(?:Exec[A-Za-z]*|Environment|EnvironmentFile|PassEnvironment|UnsetEnvironment)\Z")
_HOME_TREES = ("/home", "/root", "/run/user")
_SYSTEM_TREES = {"yes": ("/usr", "/boot", "/efi"), "true": ("/usr", "/boot", "/efi"),
                 "full": ("/usr", "/boot", "/efi", "/etc"), "strict": ("/",)}

# Seconds past --shutdown-timeout before systemd kills what is left: after the drain vLLM
# stops its EngineCore and workers and frees the GPU memory, which takes seconds, not a minute.
STOP_MARGIN_SEC = 60
# What the unit had before draining existed (and keeps where vLLM cannot drain).
LEGACY_TIMEOUT_STOP_SEC = 120

_GROUP_NAME = re.compile(r"^[a-z_][a-z0-9_-]*\$?\Z")


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
    bad = CONTROL.search(text)
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
    if key and not API_KEY.match(key):
        outside = sum(1 for c in key if not API_KEY.match(c))
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


def env_file(hf_home, environment=None, secret_environment=None, hf_token="", api_key=""):
    """{"lines": environment_lines(...), "secret": environment_has_secret(...)}: the file and whether to hide it."""
    return {"lines": environment_lines(hf_home, environment, secret_environment, hf_token, api_key),
            "secret": environment_has_secret(environment, secret_environment, hf_token, api_key)}


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
    if value.endswith("\\"):
        raise VllmUnitError("%s.%s: ends with a backslash, which makes systemd join the next line to it"
                            % (PREFIX + "hardening_overrides", name))
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
        if "\\" in path or "%" in path:
            raise VllmUnitError("%s: %r has a %s, which ReadWritePaths= would read as an escape or a specifier"
                                % (_WRITABLE, path, "backslash" if "\\" in path else "%"))
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
        if _NOT_OVERRIDES.match(name):
            raise VllmUnitError("%s: %s runs a command or changes the server's environment, which is not hardening "
                                "(the environment is %senvironment)" % (PREFIX + "hardening_overrides", name, PREFIX))
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
def drain_settings(shutdown_timeout, supported=None):
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
            if not _ACCOUNT.match(by_gid[gid]):
                raise VllmUnitError("the group database (getent group): %r, the group owning %s, is not a group name "
                                    "SupplementaryGroups= can take" % (by_gid[gid], dev["path"]))
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


def device_access(user, wanted=(), passwd_entry=None, group_db=None, devices=()):
    """{"groups": device_groups(...), "inaccessible": inaccessible_devices(...)}.

    No account yet (``passwd_entry`` None: check mode on a blank host): nothing to check the nodes against.
    """
    groups = device_groups(user, wanted, group_db or {}, devices)
    if passwd_entry is None:
        return {"groups": groups, "inaccessible": []}
    return {"groups": groups, "inaccessible": inaccessible_devices(user, passwd_entry, groups, group_db or {}, devices)}


# ------------------------------------------------------- values of the unit
# User=/Group=: a name (systemd's relaxed rule, no "%" specifier, no space) or a numeric id.
_ACCOUNT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_.-]*\$?|[0-9]+)\Z")
# The unit's name: the file /etc/systemd/system/<name>.service and SyslogIdentifier=; no "/" (a path
# elsewhere), no leading "-" (systemctl would read an option), no "%" or "\" (specifier, escape).
_UNIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9:_.@-]*\Z")
_INSTANCE = re.compile(r"^[A-Za-z0-9_.-]+\Z")
_UNSIGNED = re.compile(r"^[0-9]+\Z")
# setrlimit values as systemd reads them (systemd.exec(5) LimitCPU=...): a number, a size with a
# 1024-based suffix for LimitMEMLOCK, or infinity; "soft:hard" gives both.
_NOFILE_VALUE = r"(?:infinity|[0-9]+)"
_MEMLOCK_VALUE = r"(?:infinity|[0-9]+[KMGTPE]?)"
_NOFILE = re.compile(r"^%s(?::%s)?\Z" % (_NOFILE_VALUE, _NOFILE_VALUE))
_MEMLOCK = re.compile(r"^%s(?::%s)?\Z" % (_MEMLOCK_VALUE, _MEMLOCK_VALUE))
_MAX_UNIT_NAME = 256 - len(".service")


def _show(value, length=60):
    text = repr(value)
    return text if len(text) <= length else text[:length] + "..."


def _scalar_text(variable, value, expected):
    """A string setting's text (a number counts as its str(), as YAML may write it); else a VllmUnitError."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise VllmUnitError("%s: expected %s, got %s (%s)" % (variable, expected, _show(value), _type(value)))
    return str(value)


def _one_line(variable, text, expected):
    """``text`` unless it holds a control character or ends with a backslash (systemd joins the next line)."""
    bad = CONTROL.search(text)
    if bad:
        raise VllmUnitError("%s: %s has a control character (U+%04X) at index %d: a value of the unit must be one line "
                            "of printable text (a newline would start a directive of its own); expected %s"
                            % (variable, _show(text), ord(bad.group()), bad.start(), expected))
    if text.endswith("\\"):
        raise VllmUnitError("%s: %s ends with a backslash, which makes systemd join the next line to it; expected %s"
                            % (variable, _show(text), expected))
    return text


def _matching(pattern, expected, max_length=None):
    def check(variable, value):
        text = _one_line(variable, _scalar_text(variable, value, expected), expected)
        if not pattern.match(text) or (max_length is not None and len(text) > max_length):
            raise VllmUnitError("%s: expected %s, got %s" % (variable, expected, _show(text)))
        return text
    return check


def _integer(low, high=None, what=""):
    expected = ("an integer >= %d" % low if high is None else "an integer %d-%d" % (low, high)) + what

    def check(variable, value):
        text = _one_line(variable, _scalar_text(variable, value, expected), expected)
        if not _UNSIGNED.match(text) or int(text) < low or (high is not None and int(text) > high):
            raise VllmUnitError("%s: expected %s, got %s" % (variable, expected, _show(value)))
        return str(int(text))
    return check


def _port(variable, value):
    expected = "an integer %d-%d" % PORT_RANGE
    text = _one_line(variable, _scalar_text(variable, value, expected), expected)
    if port_number(text) is None:
        raise VllmUnitError("%s: expected %s, got %s" % (variable, expected, _show(value)))
    return str(int(text))


def _instance(variable, value):
    text = _matching(_INSTANCE, "letters, digits and _ . - (it names /etc/vllm/<instance>.env)")(variable, value)
    if text in (".", ".."):
        raise VllmUnitError("%s: expected a name, got %r (a directory, not a file name)" % (variable, text))
    return text


def _unit_name(variable, value):
    expected = ("a systemd unit name without .service: letters, digits and : _ . @ -, starting with a letter, a "
                "digit or _, at most %d characters" % _MAX_UNIT_NAME)
    text = _matching(_UNIT_NAME, expected, _MAX_UNIT_NAME)(variable, value)
    if text.endswith("@"):
        raise VllmUnitError("%s: %r is a template (ends with @): give the instance too, like %sX" % (variable, text, text))
    return text


def _model_name(variable, value):
    """--served-model-name: any one line of text; in Description= its "%" is written "%%" (a specifier there)."""
    expected = "a non-empty string"
    text = _one_line(variable, _scalar_text(variable, value, expected), expected)
    if not text:
        raise VllmUnitError("%s: expected %s, got ''" % (variable, expected))
    return text


def _abs_path(variable, value):
    expected = "an absolute path"
    text = _one_line(variable, _scalar_text(variable, value, expected), expected)
    if not text.startswith("/"):
        raise VllmUnitError("%s: expected %s, got %s" % (variable, expected, _show(text)))
    return text


def _hardening_level(variable, value):
    if value not in HARDENING_LEVELS:
        raise VllmUnitError("%s: expected one of %s, got %s" % (variable, ", ".join(HARDENING_LEVELS), _show(value)))
    return value


# Every plain setting the unit, its environment file or their paths are rendered from, with its check.
# (The mappings and lists, the secrets and the command line have their own functions above and in
# vllm_serve.py; check_unit_value reaches those too.)
UNIT_SETTINGS = {
    PREFIX + "instance": _instance,
    PREFIX + "unit_name": _unit_name,
    PREFIX + "user": _matching(_ACCOUNT, "a user name (letters, digits, _ . -) or a numeric uid", 256),
    PREFIX + "group": _matching(_ACCOUNT, "a group name (letters, digits, _ . -) or a numeric gid", 256),
    PREFIX + "served_model_name": _model_name,
    PREFIX + "port": _port,
    PREFIX + "systemd.limit_nofile": _matching(_NOFILE, "LimitNOFILE=: an integer, infinity, or soft:hard of those"),
    PREFIX + "systemd.limit_memlock": _matching(
        _MEMLOCK, "LimitMEMLOCK=: infinity, or bytes with an optional K, M, G, T, P or E suffix (65536, 64K, 8G), or "
                  "soft:hard of those"),
    PREFIX + "systemd.timeout_start_sec": _integer(0, what=" (seconds)"),
    PREFIX + "systemd.restart_sec": _integer(0, what=" (seconds)"),
    PREFIX + "systemd.start_limit_burst": _integer(0),
    PREFIX + "systemd.start_limit_interval_sec": _integer(0, what=" (seconds)"),
    PREFIX + "hardening": _hardening_level,
    PREFIX + "hf_home": _abs_path,
    PREFIX + "venv_dir": _abs_path,
    PREFIX + "model": _abs_path,
    PREFIX + "local_facts_dir": _abs_path,
    # The role's own path, from vllm_service_instance (vars/main.yml): checked where it is rendered.
    "__" + PREFIX + "env_path": _abs_path,
}


# The role's documented dicts whose keys are checked here one by one, as "<dict>.<key>".
DICT_GROUPS = (PREFIX + "systemd",)


def _description_text(text):
    return text.replace("%", "%%")


def unit_values(values):
    """The plain settings of the unit, checked, as the templates render them.

    ``values``: {variable: value} for any of UNIT_SETTINGS. Returns {variable without vllm_service_
    (and without a leading __): text}, plus "description" (Description=: "vLLM <served model name> on
    port <port>", "%" written "%%") when both are given. Integers come back in their canonical
    spelling. Any value outside its form, with a control character or ending with a backslash, is a
    VllmUnitError naming the variable.
    """
    if not isinstance(values, Mapping):
        raise VllmUnitError("the unit's settings: expected a mapping of variable: value, got a %s" % _type(values))
    out = {}
    for variable in values:
        check = UNIT_SETTINGS.get(variable)
        if check is None:
            raise VllmUnitError("the unit's settings: %r is not one of %s" % (variable, ", ".join(sorted(UNIT_SETTINGS))))
        # A documented dict's key (vllm_service_systemd.limit_nofile) renders as its key (limit_nofile).
        out[variable.lstrip("_")[len(PREFIX):].rpartition(".")[2]] = check(variable, values[variable])
    if "served_model_name" in out and "port" in out:
        out["description"] = "vLLM %s on port %s" % (_description_text(out["served_model_name"]), out["port"])
    return out


def render(values, drain=None, hardening=None, serve=None):
    """unit_values(values) and, for each given, what else the unit is rendered from, in one call (the
    vllm_unit_values filter; its template reads every key of one result):

    ``drain`` {shutdown_timeout, supported}: "drain", drain_settings(...); ``hardening`` {level, overrides,
    writable_paths, read_paths}: "hardening_directives", hardening_directives(...); ``serve`` {settings,
    entry_point}: "serve", serve.serve_argv(settings, entry_point), the settings' shutdown_timeout being the drain's
    (so give ``drain`` with ``serve``). A bad value is a VllmUnitError naming the variable.
    """
    out = unit_values(values)
    if drain is not None:
        out["drain"] = drain_settings(**drain)
    if hardening is not None:
        out["hardening_directives"] = hardening_directives(**hardening)
    if serve is not None:
        from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import serve as vllm_serve
        settings = serve["settings"]
        if drain is not None and isinstance(settings, Mapping):
            settings = dict(settings, shutdown_timeout=out["drain"]["shutdown_timeout"])
        try:
            out["serve"] = vllm_serve.serve_argv(settings, serve["entry_point"])
        except vllm_serve.VllmServeError as exc:
            raise VllmUnitError(str(exc))
    return out


def exec_word(text):
    """One argument of ExecStart= as one double-quoted word systemd passes on unchanged.

    systemd splits on whitespace, honours double quotes with C escapes, expands %-specifiers and
    $VARIABLES: backslash and double quote are backslash-escaped, "%" becomes "%%" and "$" "$$".
    ``text`` must hold no control character (the caller refuses it, naming where it came from).
    """
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")


def _value_start(value, length=40):
    """The start of a value for an error message, as Python's repr (so control characters show as escapes)."""
    text = repr(value)
    return text if len(text) <= length else text[:length] + "..."


def systemd_quote(arg):
    """Quote one argument for an ExecStart= line so systemd passes it intact (exec_word).

    Refused with a VllmUnitError (naming the start of the value and what was expected): a value holding a
    newline, carriage return, tab, NUL or any other control character (which could end the line and start
    a new unit directive), and a value that is not a string or number (None, a list, a dict), whose
    Python form would reach the command line.
    """
    if arg is None or isinstance(arg, (Mapping, bytes, bytearray)) or (
            isinstance(arg, Sequence) and not isinstance(arg, str)):
        raise VllmUnitError("systemd_quote: expected a string or a number for one command-line argument, got %s %s"
                            % (_type(arg), _value_start(arg)))
    text = str(arg)
    bad = CONTROL.search(text)
    if bad:
        raise VllmUnitError(
            "systemd_quote: value %s has a control character (U+%04X) at index %d; a systemd command-line "
            "argument must be one line of printable text (no newline, carriage return, tab or NUL)"
            % (_value_start(text), ord(bad.group()), bad.start()))
    return exec_word(text)


def systemd_exec(argv):
    """A whole argv for ExecStart= (systemd_quote each): a non-empty list of strings or numbers.

    A string is refused (it would be quoted one character at a time), and so is an empty list (an
    empty ExecStart= resets the unit's command list).
    """
    if isinstance(argv, (str, bytes, Mapping)) or not isinstance(argv, Iterable):
        raise VllmUnitError("systemd_exec: expected a non-empty list of arguments (argv), got %s %s"
                            % (_type(argv), _value_start(argv)))
    args = list(argv)
    if not args:
        raise VllmUnitError("systemd_exec: expected a non-empty list of arguments (argv), got an empty list")
    return " ".join(systemd_quote(a) for a in args)


def _check_environment(variable, value):
    _env_entries(variable, value, variable == PREFIX + "secret_environment")


def _check_groups(variable, value):
    device_groups("root", value, {}, [])


def _check_extra_args(variable, value):
    # Imported here: vllm_serve imports this module.
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import VllmServeError, check_extra_args
    try:
        check_extra_args(value)
    except VllmServeError as exc:
        raise VllmUnitError(str(exc))


def _check_one_line_arg(variable, value):
    """A command-line argument: exec_word quotes everything but a control character (a trailing backslash too)."""
    if value is None or value == "":
        return
    text = _scalar_text(variable, value, "a string")
    bad = CONTROL.search(text)
    if bad:
        raise VllmUnitError("%s: %s has a control character (U+%04X) at index %d: a command-line argument must be one "
                            "line of printable text" % (variable, _show(text), ord(bad.group()), bad.start()))


_OTHER_SETTINGS = {
    PREFIX + "environment": _check_environment,
    PREFIX + "secret_environment": _check_environment,
    PREFIX + "hf_token": _secret_text,
    PREFIX + "api_key": lambda variable, value: check_api_key(value),
    PREFIX + "hardening_overrides": lambda variable, value: hardening_directives("full", value, ()),
    PREFIX + "writable_paths": lambda variable, value: _abs_paths(value),
    PREFIX + "supplementary_groups": _check_groups,
    PREFIX + "shutdown_timeout": lambda variable, value: drain_settings(value, None),
    PREFIX + "extra_args": _check_extra_args,
    # The command line's numbers and the speculative config, by serve.py's own rules (serve imports this file).
    PREFIX + "tensor_parallel_size": lambda variable, value: _serve_setting("tensor_parallel_size", value),
    PREFIX + "gpu_memory_utilization": lambda variable, value: _serve_setting("gpu_memory_utilization", value),
    PREFIX + "max_model_len": lambda variable, value: _serve_setting("max_model_len", value),
    PREFIX + "max_num_batched_tokens": lambda variable, value: _serve_setting("max_num_batched_tokens", value),
    PREFIX + "enable_chunked_prefill": lambda variable, value: _serve_setting("enable_chunked_prefill", value),
    PREFIX + "speculative_config": lambda variable, value: _serve_setting("speculative_config", value),
    PREFIX + "host": _check_one_line_arg,
    PREFIX + "reasoning_parser": _check_one_line_arg,
    PREFIX + "tool_call_parser": _check_one_line_arg,
}


def check_unit_value(variable, value):
    """None when ``value`` of ``variable`` can be rendered into the unit or its environment file, else why.

    For an inventory checker (scripts/validate_inventories.py) on a resolved value: the same checks as
    the role's, variable by variable (those that need the host, such as the groups the GPU nodes
    belong to, stay with the role). A variable that reaches neither file gives None. The message names
    the variable and never shows a secret.
    """
    if variable in DICT_GROUPS and isinstance(value, Mapping):
        # Each key of a documented dict by its own check (argument validation refuses an unknown key).
        found = [check_unit_value("%s.%s" % (variable, key), value[key]) for key in sorted(value, key=str)]
        return next((problem for problem in found if problem), None)
    check = UNIT_SETTINGS.get(variable) or _OTHER_SETTINGS.get(variable)
    if check is None:
        return None
    try:
        check(variable, value)
    except VllmUnitError as exc:
        return str(exc)
    return None


def _serve_setting(name, value):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import serve
    try:
        return serve.check_setting(name, value)
    except serve.VllmServeError as exc:
        raise VllmUnitError(str(exc))


def _batched_problem(variables):
    """vLLM refuses fewer batched tokens than the context length unless chunked prefill is on."""
    batched, context = variables.get(PREFIX + "max_num_batched_tokens"), variables.get(PREFIX + "max_model_len")
    try:
        below = batched is not None and context is not None and int(batched) < int(context)
        # Chunked prefill read as serve.py reads it (a raw inventory's template is no answer: not refused here).
        chunked = below and _serve_setting("enable_chunked_prefill", variables.get(PREFIX + "enable_chunked_prefill"))
    except (TypeError, ValueError, VllmUnitError):
        return None  # the values' own checks name them
    if not below or chunked:
        return None
    return ("%smax_num_batched_tokens=%s is below %smax_model_len=%s: vLLM refuses this unless chunked prefill is on "
            "(%senable_chunked_prefill=true)." % (PREFIX, batched, PREFIX, context, PREFIX))


def _versions():
    # Imported only when a version is asked about: the filters that render the unit import this file in each task's
    # worker process, where a collection's module_utils is compiled again, and most never read the versions table.
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions
    return versions


def _version_problems(variables, vllm_version):
    """The environment entries vLLM ``vllm_version`` refuses at start (versions.runner_env_problem), by variable."""
    vllm_versions = _versions()
    vllm_versions.parse_version(vllm_version)  # a version that cannot be read is named even without the switch
    problems = []
    for variable in (PREFIX + "environment", PREFIX + "secret_environment"):
        secret = variable == PREFIX + "secret_environment"
        try:
            entries = dict(_env_entries(variable, variables.get(variable), secret))
        except VllmUnitError:
            continue  # check_unit_value reports the entry's form
        if vllm_versions.V2_RUNNER_ENV in entries:
            problem = vllm_versions.runner_env_problem(vllm_version, entries[vllm_versions.V2_RUNNER_ENV],
                                                       shown=not secret)
            if problem:
                problems.append("%s: %s" % (variable, problem))
    return problems


def check_unit_values(variables, skip_templates=False, vllm_version=None):
    """[message, ...] for every variable of ``variables`` ({name: value}) that check_unit_value refuses.

    ``skip_templates``: leave a string holding a Jinja template ("{{", "{%") alone, for raw inventory
    values, of which only the rendered value can be judged. ``vllm_version``: the installed (or pinned)
    vLLM; then an environment entry it refuses at start is refused here too, before anything changes.
    """
    if not isinstance(variables, Mapping):
        raise VllmUnitError("the unit's settings: expected a mapping of variable: value, got a %s" % _type(variables))
    problems = []
    for variable in sorted(variables, key=str):
        value = variables[variable]
        if skip_templates and isinstance(value, str) and ("{{" in value or "{%" in value):
            continue
        problem = check_unit_value(variable, value)
        if problem:
            problems.append(problem)
    if not problems:
        problems += [p for p in [_batched_problem(variables)] if p]
    if vllm_version:
        try:
            problems += _version_problems(variables, vllm_version)
        except _versions().VllmVersionError as exc:
            problems.append("the installed vLLM's version: %s" % exc)
    return problems


def unit_inputs(values, secrets=None, vllm_version=None):
    """What the vllm_service role checks and derives before it reads the host (the vllm_unit_inputs filter):
    "problems", check_unit_values(values, vllm_version=...); where there is none (else None both), "env_file",
    env_file of the values' hf_home (None without one) and environment with ``secrets`` ({secret_environment,
    hf_token, api_key}), and "drafter_dir", serve.local_drafter_dir of the values' speculative_config."""
    out = {"problems": check_unit_values(values, vllm_version=vllm_version), "env_file": None, "drafter_dir": None}
    if out["problems"]:
        return out
    if not isinstance(secrets or {}, Mapping):
        raise VllmUnitError("the secrets: expected a mapping of secret_environment, hf_token, api_key, got a %s"
                            % _type(secrets))
    if PREFIX + "hf_home" in values:
        out["env_file"] = env_file(values[PREFIX + "hf_home"], values.get(PREFIX + "environment"),
                                   **dict(secrets or {}))
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import serve
    try:
        out["drafter_dir"] = serve.local_drafter_dir(values.get(PREFIX + "speculative_config"))
    except serve.VllmServeError as exc:
        raise VllmUnitError(str(exc))
    return out
