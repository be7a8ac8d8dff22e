# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_unit: the environment file and its secrets, the hardening, draining, and GPU device access.

Nothing from an inventory reaches the unit unquoted (issue 27).

The role's real templates (vllm.service.j2, vllm.env.j2) are rendered here by Ansible's own Templar
with the role's defaults/main.yml and vars/main.yml (so its vllm_* filters run as in a play) over a
read of the host like the one vllm_service_host_state returns. A value either is refused with an
error naming its variable, or the unit has exactly the directives it has with the defaults.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import (
    LEGACY_TIMEOUT_STOP_SEC,
    STOP_MARGIN_SEC,
    UNIT_SETTINGS,
    VllmUnitError,
    check_unit_value,
    check_unit_values,
    device_groups,
    drain_settings,
    env_value,
    environment_has_secret,
    environment_lines,
    hardening_directives,
    inaccessible_devices,
    unit_values,
)


# -------- vllm_unit: the environment file and its secrets, the hardening, draining, and GPU device access.
SECRET = "s3cr3t-Value-91f"


def parse_env_value(text):
    """systemd's EnvironmentFile= value grammar (src/basic/env-file.c, parse_env_file_internal), for one line.

    Unquoted: leading whitespace skipped, a backslash takes the next character literally, trailing
    whitespace dropped. Single quotes: literal. Double quotes: a backslash before one of "\\`$ (or a
    newline) is dropped, before anything else kept.
    """
    out, i, n, last_unquoted_end = [], 0, len(text), None
    while i < n and text[i] in " \t":
        i += 1
    while i < n:
        c = text[i]
        if c == "'":
            j = text.index("'", i + 1)
            out.append(text[i + 1:j])
            i = j + 1
            last_unquoted_end = None
        elif c == '"':
            i += 1
            while text[i] != '"':
                if text[i] == "\\" and text[i + 1] in '"\\`$':
                    out.append(text[i + 1])
                    i += 2
                else:
                    out.append(text[i])
                    i += 1
            i += 1
            last_unquoted_end = None
        elif c == "\\":
            out.append(text[i + 1])
            i += 2
            last_unquoted_end = len("".join(out))
        else:
            out.append(c)
            i += 1
            if c not in " \t":
                last_unquoted_end = len("".join(out))
    value = "".join(out)
    if last_unquoted_end is not None:
        value = value[:last_unquoted_end]
    return value


# Printable text, spaces, quotes, $, backslashes and non-ASCII included; no control characters.
values = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                                        blacklist_characters="\x85"), max_size=40)


@given(values)
def test_env_value_reads_back_unchanged(value):
    assert parse_env_value(env_value(value)) == value


@pytest.mark.parametrize("value, written", [
    ("0,1", "0,1"), ("/root/.cache/huggingface", "/root/.cache/huggingface"), ("a b", "'a b'"),
    ("$HOME", "'$HOME'"), ("it's", '"it\'s"'), ("it's $x \\ \"q\"", '"it\'s \\$x \\\\ \\"q\\""'), ("", ""),
])
def test_env_value_quotes_only_what_needs_it(value, written):
    assert env_value(value) == written


def test_ct129_file_is_what_the_template_wrote_before():
    """No secret environment, no key: the same lines as the template that wrote them by hand."""
    lines = environment_lines("/root/.cache/huggingface", {"NCCL_P2P_DISABLE": "0", "CUDA_VISIBLE_DEVICES": "0,1"},
                              {}, "hf_abcdefghijklmnopqrstu", "")
    assert lines == ["HF_HOME=/root/.cache/huggingface", "PYTHONUNBUFFERED=1", "CUDA_VISIBLE_DEVICES=0,1",
                     "NCCL_P2P_DISABLE=0", "HF_TOKEN=hf_abcdefghijklmnopqrstu"]


def test_secrets_and_the_key_come_last_in_a_fixed_order():
    lines = environment_lines("/h", {"B": "1", "A": 2}, {"Z_TOKEN": SECRET, "M_PASS": "x y"}, "", "sk-key")
    assert lines == ["HF_HOME=/h", "PYTHONUNBUFFERED=1", "A=2", "B=1", "M_PASS='x y'", "Z_TOKEN=" + SECRET,
                     "VLLM_API_KEY=sk-key"]


@pytest.mark.parametrize("kwargs, secret", [
    ({}, False),
    ({"environment": {"CUDA_VISIBLE_DEVICES": "0"}}, False),
    ({"environment": {"MAX_TOKENS": "8"}}, False),
    ({"environment": {"WANDB_API_KEY": "x"}}, True),
    ({"environment": {"S3_SECRET": "x"}}, True),
    ({"environment": {"DB_PASSWORD": "x"}}, True),
    ({"secret_environment": {"ANY": "x"}}, True),
    ({"hf_token": "hf_x"}, True),
    ({"api_key": "sk-x"}, True),
])
def test_which_files_hold_a_secret(kwargs, secret):
    assert environment_has_secret(**kwargs) is secret


@pytest.mark.parametrize("kwargs, message", [
    ({"environment": {"HF_TOKEN": "x"}}, "vllm_service_environment: HF_TOKEN is set from vllm_service_hf_token"),
    ({"secret_environment": {"VLLM_API_KEY": "x"}}, "VLLM_API_KEY is set from vllm_service_api_key"),
    ({"environment": {"HF_HOME": "/x"}}, "HF_HOME is set from vllm_service_hf_home"),
    ({"environment": {"A": "1"}, "secret_environment": {"A": "2"}}, "both set A"),
    ({"environment": {"1A": "1"}}, "is not an environment variable name"),
    ({"environment": {"A-B": "1"}}, "is not an environment variable name"),
    ({"environment": {"A": True}}, "vllm_service_environment.A: expected a string or a number"),
    ({"environment": {"A": None}}, "remove the entry"),
    ({"environment": ["A=1"]}, "vllm_service_environment: expected a mapping"),
    ({"environment": {"A": "x\ny"}}, "vllm_service_environment.A: has a control character (U+000A)"),
    ({"api_key": "has space"}, "vllm_service_api_key: expected printable ASCII without spaces"),
    ({"api_key": 12345}, "vllm_service_api_key: expected a string"),
    ({"hf_token": "a\rb"}, "vllm_service_hf_token: has a control character"),
])
def test_bad_environments_name_the_variable(kwargs, message):
    with pytest.raises(VllmUnitError, match=re.escape(message)):
        environment_lines("/h", **kwargs)
    with pytest.raises(VllmUnitError):
        environment_has_secret(**kwargs)


@given(st.text(min_size=8, max_size=30).map(lambda s: "S" + s))
def test_no_error_shows_a_secret_value(value):
    """Whatever is wrong with a secret, the message names its variable and key, never the value."""
    cases = [
        {"secret_environment": {"A_TOKEN": value + "\n"}},
        {"secret_environment": {"A_TOKEN": value}, "environment": {"A_TOKEN": "1"}},
        {"hf_token": value + "\x00"},
        {"api_key": value + " x\t"},
        {"api_key": value + "\n"},
    ]
    for kwargs in cases:
        with pytest.raises(VllmUnitError) as info:
            environment_lines("/h", **kwargs)
        assert value not in str(info.value) and repr(value)[1:-1] not in str(info.value)


def test_bad_hf_home():
    with pytest.raises(VllmUnitError, match="vllm_service_hf_home: expected an absolute path"):
        environment_lines("relative")


# ----------------------------------------------------------------- hardening
FULL = ["ProtectSystem", "ProtectHome", "PrivateTmp", "ProtectKernelTunables", "ProtectKernelModules",
        "ProtectControlGroups", "NoNewPrivileges", "RestrictSUIDSGID", "LockPersonality", "RestrictRealtime"]


def _names(directives):
    return [d[0] for d in directives]


def test_ct129_root_keeps_its_home_writable_and_the_others_read_only():
    """ct129 runs as root from /root/ml-env and /root/models, its caches under /root.

    systemd cannot reopen /root itself under ProtectHome=read-only (ReadWritePaths= works only below
    it; measured in the scenario: "Read-only file system: '/root/.cache/vllm'"), so the other home
    trees are made read-only by ReadOnlyPaths= instead.
    """
    got = hardening_directives("full", {}, ["/root", "/root/.cache/huggingface"],
                               {"vllm_service_venv_dir": "/root/ml-env", "vllm_service_model": "/root/models/Q"})
    assert _names(got) == [n if n != "ProtectHome" else "ReadOnlyPaths" for n in FULL]
    assert dict(got)["ProtectSystem"] == "full" and dict(got)["ReadOnlyPaths"] == "-/home -/run/user"


def test_a_home_below_home_is_reopened_with_read_write_paths():
    got = dict(hardening_directives("full", {}, ["/home/vllm", "/home/vllm/.cache/huggingface"]))
    assert got["ProtectHome"] == "read-only" and got["ReadWritePaths"] == "-/home/vllm"


def test_a_service_account_outside_home_needs_no_exception():
    got = hardening_directives("full", {}, ["/var/lib/vllm", "/var/lib/vllm/.cache/huggingface"])
    assert _names(got) == FULL


def test_strict_lists_every_writable_path_once():
    got = dict(hardening_directives("full", {"ProtectSystem": "strict"}, ["/var/lib/vllm", "/srv/cache",
                                                                          "/var/lib/vllm/.cache", "/srv/cache/"]))
    assert got["ReadWritePaths"] == "-/var/lib/vllm -/srv/cache"


@pytest.mark.parametrize("level, names", [
    ("full", FULL), ("no_namespaces", ["NoNewPrivileges", "RestrictSUIDSGID", "LockPersonality", "RestrictRealtime"]),
    ("none", [])])
def test_levels(level, names):
    assert _names(hardening_directives(level, {}, ["/var/lib/vllm"])) == names


@pytest.mark.parametrize("level", ["full", "no_namespaces", "none"])
def test_never_private_devices_nor_memory_deny_write_execute(level):
    names = _names(hardening_directives(level, {}, ["/root"]))
    assert "PrivateDevices" not in names and "MemoryDenyWriteExecute" not in names


def test_overrides_change_drop_and_add():
    got = hardening_directives("full", {"ProtectKernelTunables": None, "PrivateTmp": False, "ProtectClock": True,
                                        "SystemCallArchitectures": ["native"], "UMask": "0027"}, ["/var/lib/vllm"])
    got = dict(got)
    assert "ProtectKernelTunables" not in got
    assert got["PrivateTmp"] == "no" and got["ProtectClock"] == "yes"
    assert got["SystemCallArchitectures"] == "native" and got["UMask"] == "0027"


def test_dropping_protect_home_drops_the_exception():
    got = dict(hardening_directives("full", {"ProtectHome": None}, ["/root", "/home/a"]))
    assert "ReadWritePaths" not in got and "ReadOnlyPaths" not in got


def test_strict_reopens_root_below_the_read_only_root():
    got = dict(hardening_directives("full", {"ProtectSystem": "strict"}, ["/root", "/srv/cache"]))
    assert got["ReadOnlyPaths"] == "-/home -/run/user" and got["ReadWritePaths"] == "-/root -/srv/cache"


@pytest.mark.parametrize("level, overrides, message", [
    ("strict", {}, "vllm_service_hardening: expected one of full, no_namespaces, none"),
    ("full", [], "vllm_service_hardening_overrides: expected a mapping"),
    ("full", {"protectHome": "yes"}, "is not a systemd directive name"),
    ("full", {"User": "nobody"}, "User is set by the role"),
    ("full", {"ReadWritePaths": "/x"}, "use vllm_service_writable_paths"),
    ("full", {"KillMode": "process"}, "KillMode is set by the role"),
    ("full", {"UMask": {"a": 1}}, "vllm_service_hardening_overrides.UMask: expected a string"),
    ("full", {"UMask": "0027\nUser=root"}, "has a control character"),
    ("full", {"ProtectHome": "yes"}, "ProtectHome=yes hides vllm_service_venv_dir from the server"),
    ("full", {"ProtectHome": "tmpfs"}, "ProtectHome=tmpfs hides"),
])
def test_bad_hardening_names_the_variable(level, overrides, message):
    with pytest.raises(VllmUnitError, match=message):
        hardening_directives(level, overrides, ["/root"], {"vllm_service_venv_dir": "/root/ml-env"})


@pytest.mark.parametrize("paths, message", [
    (["relative"], "vllm_service_writable_paths .*: expected absolute paths, got 'relative'"),
    ("/root", "expected a list of absolute paths"),
    (["/a b"], "has a space"),
])
def test_bad_writable_paths(paths, message):
    with pytest.raises(VllmUnitError, match=message):
        hardening_directives("full", {}, paths)


@given(st.lists(st.sampled_from(["/root", "/root/.cache", "/home/a", "/home/a/b", "/var/lib/vllm", "/srv/m",
                                 "/etc/x", "/usr/lib/y", "/run/user/0"]), max_size=6),
       st.sampled_from(["full", "strict", "yes", None]), st.sampled_from(["read-only", None]))
def test_every_writable_path_under_a_protected_tree_is_writable(paths, system, home):
    overrides = {"ProtectSystem": system, "ProtectHome": home}
    got = dict(hardening_directives("full", overrides, paths))
    listed = [p[1:] for p in got.get("ReadWritePaths", "").split()]
    read_only = [p[1:] for p in got.get("ReadOnlyPaths", "").split()]
    home_trees = [t for t in ["/home", "/root", "/run/user"] if home and t not in paths]
    assert ("ProtectHome" in got) == bool(home and len(home_trees) == 3)
    assert read_only == (home_trees if home and len(home_trees) < 3 else [])
    trees = {"full": ["/usr", "/boot", "/efi", "/etc"], "strict": ["/"], "yes": ["/usr", "/boot", "/efi"],
             None: []}[system] + home_trees
    for path in paths:
        protected = any(t == "/" or path == t or path.startswith(t + "/") for t in trees)
        covered = any(path == p or path.startswith(p + "/") for p in listed)
        assert covered == protected, (path, listed)
        # Never a ReadWritePaths= entry that is itself a tree ProtectHome= made read-only (systemd ignores it).
        assert not ("ProtectHome" in got and path in ("/home", "/root", "/run/user") and path in listed)


# ----------------------------------------------------------------------- drain
def test_drain_where_vllm_can():
    assert drain_settings(60, True) == {"shutdown_timeout": 60, "kill_mode": "mixed",
                                        "timeout_stop_sec": 60 + STOP_MARGIN_SEC, "reason": ""}
    assert drain_settings("300", True)["timeout_stop_sec"] == 300 + STOP_MARGIN_SEC


@pytest.mark.parametrize("timeout, supported, reason", [
    (0, True, "vllm_service_shutdown_timeout is 0"),
    (60, None, "not known"),
    (60, False, "no --shutdown-timeout"),
])
def test_no_drain_keeps_the_old_stop(timeout, supported, reason):
    got = drain_settings(timeout, supported)
    assert got["shutdown_timeout"] is None and got["kill_mode"] == "control-group"
    assert got["timeout_stop_sec"] == LEGACY_TIMEOUT_STOP_SEC and reason in got["reason"]


@pytest.mark.parametrize("timeout", [-1, "1.5", True, None, "x", [60]])
def test_bad_shutdown_timeout(timeout):
    with pytest.raises(VllmUnitError, match="vllm_service_shutdown_timeout: expected an integer >= 0"):
        drain_settings(timeout, True)


# --------------------------------------------------------------------- devices
GROUPS = {"root": ["x", "0", ""], "video": ["x", "44", ""], "render": ["x", "105", ""], "nvgpu": ["x", "900", "alice"]}
VLLM = ["x", "999", "999", "", "/var/lib/vllm", "/usr/sbin/nologin"]


def _dev(path, mode, gid=0, uid=0):
    return {"path": path, "mode": mode, "gid": gid, "uid": uid, "ischr": True}


def test_root_needs_no_group_and_opens_everything():
    nodes = [_dev("/dev/nvidia0", "0600")]
    assert device_groups("root", ["video"], GROUPS, nodes) == []
    assert inaccessible_devices("root", ["x", "0", "0"], [], GROUPS, nodes) == []


def test_driver_default_0666_needs_no_group():
    nodes = [_dev("/dev/nvidiactl", "0666"), _dev("/dev/nvidia0", "0666"), _dev("/dev/nvidia-uvm", "0666")]
    groups = device_groups("vllm", ["video", "render", "missing"], GROUPS, nodes)
    assert groups == ["video", "render"]
    assert inaccessible_devices("vllm", VLLM, groups, GROUPS, nodes) == []


def test_the_group_owning_the_nodes_is_added():
    nodes = [_dev("/dev/nvidia0", "0660", gid=900), _dev("/dev/nvidiactl", "0660", gid=900),
             {"path": "/dev/nvidia-caps", "mode": "0755", "gid": 0, "uid": 0, "ischr": False}]
    groups = device_groups("vllm", [], GROUPS, nodes)
    assert groups == ["nvgpu"]
    assert inaccessible_devices("vllm", VLLM, groups, GROUPS, nodes) == []


def test_nodes_the_account_cannot_open_are_named():
    nodes = [_dev("/dev/nvidia0", "0660", gid=0), _dev("/dev/nvidiactl", "0666")]
    assert inaccessible_devices("vllm", VLLM, [], GROUPS, nodes) == ["/dev/nvidia0"]


def test_membership_in_the_group_database_counts():
    nodes = [_dev("/dev/nvidia0", "0660", gid=900)]
    alice = ["x", "1000", "1000", "", "/home/alice", "/bin/sh"]
    assert inaccessible_devices("alice", alice, [], GROUPS, nodes) == []


def test_the_owner_bits_decide_for_the_owner():
    """As the kernel does: the owner gets only the owner bits, even when others may."""
    nodes = [_dev("/dev/nvidia0", "0066", uid=999)]
    assert inaccessible_devices("vllm", VLLM, [], GROUPS, nodes) == ["/dev/nvidia0"]


@pytest.mark.parametrize("wanted, message", [
    ("video", "vllm_service_supplementary_groups: expected a list"),
    (["Video Group"], r"vllm_service_supplementary_groups\[0\]: 'Video Group' is not a group name"),
])
def test_bad_groups(wanted, message):
    with pytest.raises(VllmUnitError, match=message):
        device_groups("vllm", wanted, GROUPS, [])


def test_a_missing_account_is_named():
    with pytest.raises(VllmUnitError, match="vllm_service_user=vllm: not in the account database"):
        inaccessible_devices("vllm", None, [], GROUPS, [])


# -------- Nothing from an inventory reaches the unit unquoted (issue 27).
ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 5, "roles", "vllm_service"))
# The directory holding ansible_collections/ as this test imports the collection.
COLLECTIONS_PATH = os.path.abspath(os.path.join(os.path.dirname(vllm_unit.__file__), *[os.pardir] * 5))
INJECTION = "infinity\nExecStartPre=/bin/sh -c 'id > /root/pwned'"

# What vllm_service_host_state returns on a host with vLLM installed, a service account and one GPU
# node anyone may open (so no SupplementaryGroups= line whatever the user is): one the role's host check passes.
STATE = {
    "gpus": {"gpu_count": 1, "gpus": [{"name": "NVIDIA RTX A6000"}]},
    "venv": {"real": "/opt/vllm-env.generations/g1"},
    "vllm": {"installed": True, "version": "0.32.0", "behaviour": {"shutdown_timeout": True}},
    "passwd": ["x", "999", "999", "", "/var/lib/vllm", "/bin/false"],
    "group_db": {"vllm": ["x", "999", ""]},
    "devices": [{"path": "/dev/nvidia0", "mode": "0666", "uid": 0, "gid": 0, "ischr": True}],
    "target_config": {}, "drafter_config": None, "record": None,
    "files": {"unit": {"exists": False}, "env": {"exists": False}},
}


class TemplateFailed(Exception):
    """The role's template did not render; the message is Ansible's."""


class Renderer(object):
    """The role's real templates, rendered by Ansible (_vllm_unit_render.py, a process of its own)."""

    def __init__(self):
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_vllm_unit_render.py")
        self.proc = subprocess.Popen([sys.executable, worker, COLLECTIONS_PATH, ROLE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, universal_newlines=True, env=dict(
                                         os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH))

    def render(self, name="vllm.service.j2", **variables):
        values = {"__vllm_service_state": STATE}
        values.update(variables)
        # "vllm_service_systemd.limit_memlock" is the key limit_memlock of the dict vllm_service_systemd.
        for dotted in [variable for variable in sorted(values) if "." in variable]:
            group, key = dotted.split(".", 1)
            values.setdefault(group, {})[key] = values.pop(dotted)
        self.proc.stdin.write(json.dumps({"template": name, "vars": values}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise TemplateFailed(reply["error"])
        return reply["text"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def renderer():
    rendering = Renderer()
    yield rendering
    rendering.close()


def directives(unit):
    """[(section, directive), ...] of a unit as systemd reads it (comments and blank lines skipped)."""
    out, section = [], None
    for line in unit.split("\n"):
        assert not line.endswith("\\"), "a line systemd would join to the next: %r" % line
        if not line.strip() or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        assert "=" in line, "not a directive: %r" % line
        out.append((section, line.split("=", 1)[0]))
    return out


def assignments(env_file):
    return [line.split("=", 1)[0] for line in env_file.split("\n") if line.strip() and not line.startswith("#")]


def template_error(excinfo):
    return str(excinfo.value)


# ------------------------------------------------------------ regressions ---

def test_defaults_render_as_before(renderer):
    unit = renderer.render()
    assert "LimitMEMLOCK=infinity\n" in unit and "User=vllm\nGroup=vllm\n" in unit
    assert "SyslogIdentifier=vllm-default\n" in unit and "Description=vLLM target on port 8000\n" in unit
    assert "EnvironmentFile=/etc/vllm/default.env\n" in unit
    assert "# Environment of vllm-default.service" in renderer.render("vllm.env.j2")


@pytest.mark.parametrize("variable, value", [
    ("vllm_service_systemd.limit_memlock", INJECTION),            # the row: it ran as root on restart
    ("vllm_service_systemd.limit_memlock", "infinity\r"),
    ("vllm_service_systemd.limit_memlock", "infinity\n"),          # a YAML "|" block's trailing newline
    ("vllm_service_group", "vllm\nExecStartPre=/bin/sh -c 'id > /root/pwned'"),
    ("vllm_service_user", "vllm\nExecStartPre=/bin/true"),
    ("vllm_service_unit_name", "vllm-x\nExecStartPre=/bin/true"),
    ("vllm_service_instance", "default\n"),
    ("vllm_service_served_model_name", "m\nExecStartPre=/bin/true"),
    ("vllm_service_systemd.limit_nofile", "1048576\nExecStartPre=/bin/true"),
    ("vllm_service_systemd.timeout_start_sec", "1800\nExecStartPre=/bin/true"),
    ("vllm_service_systemd.restart_sec", "10\u2028x"),
    ("vllm_service_systemd.start_limit_burst", "3\x00"),
    ("vllm_service_systemd.start_limit_interval_sec", "900\x85"),
])
def test_a_control_character_is_refused_naming_the_variable(renderer, variable, value):
    with pytest.raises(TemplateFailed) as info:
        renderer.render(**{variable: value})
    message = template_error(info)
    assert "vllm_unit_values: %s: " % variable in message
    assert "control character" in message
    # The same check as the role's preflight and the inventory checker ask.
    assert check_unit_value(variable, value).startswith(variable + ": ")


@pytest.mark.parametrize("variable, value, expected", [
    ("vllm_service_systemd.limit_memlock", "infinity; ExecStartPre=/bin/true", "LimitMEMLOCK=: infinity, or bytes"),
    ("vllm_service_systemd.limit_memlock", "lots", "LimitMEMLOCK=: infinity, or bytes"),
    ("vllm_service_group", "vllm ExecStartPre=/bin/true", "a group name"),
    ("vllm_service_group", "%n", "a group name"),
    ("vllm_service_user", "", "a user name"),
    ("vllm_service_unit_name", "../../../etc/cron.d/x", "a systemd unit name"),
    ("vllm_service_unit_name", "-x", "a systemd unit name"),
    ("vllm_service_unit_name", "vllm@", "a template"),
    ("vllm_service_instance", "..", "a directory"),
    ("vllm_service_instance", "a/b", "letters, digits"),
    ("vllm_service_served_model_name", "model\\", "ends with a backslash"),
    ("vllm_service_systemd.timeout_start_sec", -1, "an integer >= 0"),
    ("vllm_service_systemd.limit_nofile", "1e6", "LimitNOFILE=: an integer"),
    ("vllm_service_port", 0, "an integer 1-65535"),
    ("vllm_service_systemd.restart_sec", True, "an integer >= 0"),
    ("vllm_service_user", ["root"], "a user name"),
])
def test_a_value_outside_its_form_is_refused(renderer, variable, value, expected):
    with pytest.raises(TemplateFailed, match=re.escape("%s: " % variable)) as info:
        renderer.render(**{variable: value})
    assert expected in template_error(info)


@pytest.mark.parametrize("variable, value, line", [
    ("vllm_service_systemd.limit_memlock", "64K", "LimitMEMLOCK=64K"),
    ("vllm_service_systemd.limit_memlock", "8G:infinity", "LimitMEMLOCK=8G:infinity"),
    ("vllm_service_systemd.limit_memlock", 65536, "LimitMEMLOCK=65536"),
    ("vllm_service_systemd.limit_nofile", "infinity", "LimitNOFILE=infinity"),
    ("vllm_service_user", "root", "User=root"),
    ("vllm_service_group", 0, "Group=0"),
    ("vllm_service_unit_name", "vllm-qwen36-27b", "SyslogIdentifier=vllm-qwen36-27b"),
    ("vllm_service_served_model_name", "Qwen 27B 100% $HOME", "Description=vLLM Qwen 27B 100%% $HOME on port 8000"),
])
def test_values_in_their_form_render(renderer, variable, value, line):
    assert line + "\n" in renderer.render(**{variable: value})


def test_the_environment_file_refuses_a_bad_unit_name(renderer):
    with pytest.raises(TemplateFailed, match="vllm_service_unit_name: .*control character"):
        renderer.render("vllm.env.j2", vllm_service_unit_name="x\nHF_TOKEN=stolen")


@pytest.mark.parametrize("args, flag", [
    (["--api-ke", "KEY-27"], "--api-key"),     # the row: vLLM's parser takes the abbreviation
    (["--hf-tok=KEY-27"], "--hf-token"),
    (["--api_key", "KEY-27"], "--api-key"),
    (["--API-KEY=KEY-27"], "--api-key"),
    (["--api-key.x", "KEY-27"], "--api-key"),
    (["--hf_tok", "KEY-27"], "--hf-token"),
])
def test_an_abbreviated_credential_flag_never_reaches_the_unit(renderer, args, flag):
    with pytest.raises(TemplateFailed) as info:
        renderer.render(vllm_service_extra_args=args)
    message = template_error(info)
    assert "vllm_service_extra_args[0]" in message
    assert ("as %s:" % flag in message) or ("'%s'" % flag in message)
    assert "KEY-27" not in message
    assert "KEY-27" not in str(check_unit_value("vllm_service_extra_args", args))


def test_hardening_overrides_cannot_add_a_command_or_the_environment():
    for name in ("ExecStartPre", "ExecStopPost", "ExecReload", "PassEnvironment", "UnsetEnvironment"):
        with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: %s runs a command" % name):
            hardening_directives("full", {name: "/bin/true"}, [])
    for name in ("ExecStart", "Environment", "EnvironmentFile", "User"):
        with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: %s is set by the role" % name):
            hardening_directives("full", {name: "/bin/true"}, [])
    with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: 'ProtectHome\\\\n' is not a systemd"):
        hardening_directives("full", {"ProtectHome\n": "yes"}, [])
    with pytest.raises(VllmUnitError, match="ends with a backslash"):
        hardening_directives("full", {"ProtectHome": "yes\\"}, [])
    with pytest.raises(VllmUnitError, match="has a %"):
        hardening_directives("full", {}, ["/srv/%h"])


def test_full_matches_refuse_a_trailing_newline():
    # re's "$" matches before a final newline: every pattern of the one home is a full match.
    with pytest.raises(VllmUnitError, match="supplementary_groups\\[0\\]"):
        device_groups("vllm", ["video\n"], {}, [])
    assert check_unit_values({"vllm_service_environment": {"A\n": "1"}}) == [
        "vllm_service_environment: 'A\\n' is not an environment variable name (letters, digits and _, not starting "
        "with a digit)"]
    assert check_unit_value("vllm_service_api_key", "key\n").startswith("vllm_service_api_key: has a control")


def test_a_host_group_that_is_not_a_name_is_refused():
    with pytest.raises(VllmUnitError, match="the group owning /dev/nvidia0"):
        device_groups("vllm", [], {"bad\nname": ["x", "44", ""]},
                      [{"path": "/dev/nvidia0", "mode": "0660", "uid": 0, "gid": 44, "ischr": True}])


def test_unit_values_api():
    got = unit_values({"vllm_service_served_model_name": "a%b", "vllm_service_port": "08000",
                       "vllm_service_systemd.limit_memlock": "infinity", "__vllm_service_env_path": "/etc/vllm/x.env"})
    assert got == {"served_model_name": "a%b", "port": "8000", "limit_memlock": "infinity", "env_path": "/etc/vllm/x.env",
                   "description": "vLLM a%%b on port 8000"}
    with pytest.raises(VllmUnitError, match="'vllm_service_nope' is not one of"):
        unit_values({"vllm_service_nope": 1})
    with pytest.raises(VllmUnitError, match="expected a mapping"):
        unit_values(["x"])


def test_check_unit_values_for_the_inventory_checker():
    variables = {"vllm_service_systemd.limit_memlock": INJECTION, "vllm_service_group": "vllm\nX=1",
                 "vllm_service_unit_name": "{{ 'vllm-' ~ vllm_service_instance }}",
                 "vllm_service_extra_args": ["--hf-tok=T0KEN"], "vllm_service_api_key": "a b",
                 "vllm_service_port": 8000, "other_role_variable": "x\ny"}
    problems = check_unit_values(variables, skip_templates=True)
    assert [p.split(":", 1)[0] for p in problems] == [
        "vllm_service_api_key", "vllm_service_extra_args[0]", "vllm_service_group", "vllm_service_systemd.limit_memlock"]
    assert not any("T0KEN" in p or "a b" in p for p in problems)
    # Without skip_templates (a rendered value), a template's text is judged as it is.
    assert any(p.startswith("vllm_service_unit_name") for p in check_unit_values(variables))
    assert check_unit_value("vllm_service_port", 8000) is None
    assert check_unit_value("python_env_venv_dir", "x\ny") is None


def test_check_unit_values_refuses_the_v1_runner_switch_for_vllm_0_34():
    """vLLM 0.34 has no V1 model runner: validate_environ refuses VLLM_USE_V2_MODEL_RUNNER other than 1."""
    variables = {"vllm_service_environment": {"VLLM_USE_V2_MODEL_RUNNER": 0, "CUDA_VISIBLE_DEVICES": "0"}}
    plain = check_unit_values(variables, vllm_version="0.34.0")
    assert plain == [
        "vllm_service_environment: VLLM_USE_V2_MODEL_RUNNER=0: vLLM 0.34.0 refuses it at start "
        "('VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed', "
        "vllm/platforms/interface.py validate_environ), having only the V2 model runner: remove the variable "
        "(or set it to 1)"]
    # A secret's value is never shown.
    secret = check_unit_values({"vllm_service_secret_environment": {"VLLM_USE_V2_MODEL_RUNNER": "s3cret"}},
                               vllm_version="0.35.1")
    assert len(secret) == 1
    assert secret[0].startswith("vllm_service_secret_environment: VLLM_USE_V2_MODEL_RUNNER=<hidden>")
    assert "s3cret" not in secret[0]
    # 1 is what 0.34 runs anyway; before 0.34 (or with the version not known yet) both runners exist.
    one = {"vllm_service_environment": {"VLLM_USE_V2_MODEL_RUNNER": "1"}}
    assert check_unit_values(one, vllm_version="0.34.0") == []
    for version in ("0.33.0", None):
        assert check_unit_values({"vllm_service_environment": {"VLLM_USE_V2_MODEL_RUNNER": "0"}},
                                 vllm_version=version) == []
    # A malformed environment is reported once, by its form; a version that cannot be read is named.
    bad = check_unit_values({"vllm_service_environment": "VLLM_USE_V2_MODEL_RUNNER=0"}, vllm_version="0.34.0")
    assert len(bad) == 1 and "expected a mapping" in bad[0]
    assert check_unit_values({}, vllm_version="garbage")[0].startswith("the installed vLLM's version:")


# ------------------------------------------------------------- properties ---

# Variables rendered into the unit as one value each, and the directive(s) each may touch.
RENDERED = sorted(set(UNIT_SETTINGS) - {"vllm_service_hardening", "vllm_service_local_facts_dir",
                                        "__vllm_service_env_path"}) + [
    "vllm_service_host", "vllm_service_reasoning_parser", "vllm_service_tool_call_parser"]
# Text that tries to break out of its line: line breaks, separators, "=", "[", quotes, backslashes, specifiers.
hostile = st.lists(st.sampled_from(list("\n\r\x00\t\x0b\x0c\x85\u2028\u2029 =[]#;\\\"'%$/-_.:@") +
                                   ["ExecStartPre", "infinity", "vllm", "1", "K"] + list("aZ09")),
                   max_size=12).map("".join)
hostile_values = st.one_of(hostile, st.text(max_size=24), st.integers(-5, 70000))


@pytest.fixture(scope="module")
def baseline(renderer):
    return directives(renderer.render()), assignments(renderer.render("vllm.env.j2"))


# A default made from another variable is checked as what it becomes: its error names it.
DERIVED = {"vllm_service_model": ("vllm_service_served_model_name",)}


# Each example is one real render (about 30 ms): a smaller budget than the unit stage's default.
@settings(max_examples=60, deadline=None)
@given(variable=st.sampled_from(RENDERED), value=hostile_values)
def test_property_a_value_is_refused_or_the_unit_keeps_its_directives(renderer, baseline, variable, value):
    try:
        unit = renderer.render(**{variable: value})
    except TemplateFailed as exc:
        assert any(name in str(exc) for name in (variable,) + DERIVED.get(variable, ())), str(exc)
        return
    assert directives(unit) == baseline[0], (variable, value)


@settings(max_examples=60, deadline=None)
@given(environment=st.dictionaries(st.one_of(st.sampled_from(["A", "B_1", "NCCL_X", "A\n", "HF_HOME", "x y", "1A"]),
                                             st.text(max_size=6)),
                                   values, max_size=3))
def test_property_the_environment_file_gets_exactly_its_assignments(renderer, baseline, environment):
    try:
        env_file = renderer.render("vllm.env.j2", vllm_service_environment=environment)
    except TemplateFailed as exc:
        assert "vllm_service_environment" in str(exc), str(exc)
        return
    expected = baseline[1][:2] + sorted(environment)
    assert assignments(env_file) == expected


# ------------------------------------------------------------ the real role ---

ROLE_PLAY = """
- name: The vllm_service role on hostile inventory values
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: inference.gpu_host.vllm_service
"""
HOSTILE_HOSTS = {
    "memlock": {"vllm_service_systemd": {"limit_memlock": INJECTION}},
    "group": {"vllm_service_group": "vllm\nExecStartPre=/bin/sh -c 'id > /root/pwned'"},
    "unitname": {"vllm_service_unit_name": "vllm-x\nExecStartPre=/bin/true"},
    "apike": {"vllm_service_extra_args": ["--api-ke", "KEY-27-abbreviated"]},
    "hftok": {"vllm_service_extra_args": ["--hf-tok=KEY-27-equals"]},
}


def test_the_role_refuses_them_before_it_reads_the_host(tmp_path):
    """A real run of the role (check mode, local connection): each host fails at the first check, naming the
    variable, with no task after it run and no secret in the output."""
    playbook = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)) or shutil.which(
        "ansible-playbook")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "vllm_service_local_facts_dir": str(tmp_path / "facts")}
    inventory = {"all": {"hosts": dict((name, dict(values, **local)) for name, values in HOSTILE_HOSTS.items())}}
    (tmp_path / "hosts.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(ROLE_PLAY)
    # No ansible.cfg of the clone (its profile_tasks would print into the JSON, its fact cache write to ~).
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run([playbook, "--check", "--diff", "-i", str(tmp_path / "hosts.json"), str(tmp_path / "play.yml")],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    tasks = report["plays"][0]["tasks"]
    ran = [t["task"]["name"] for t in tasks]
    # Argument validation, then the check: nothing read from the host, nothing written.
    assert len(ran) == 3 and ran[-1].endswith(" : Check the values the unit is rendered from"), ran
    assert "KEY-27" not in proc.stdout + proc.stderr
    results = tasks[-1]["hosts"]
    expected = {"memlock": "vllm_service_systemd.limit_memlock: ", "group": "vllm_service_group: ",
                "unitname": "vllm_service_unit_name: ", "apike": "vllm_service_extra_args[0]: '--api-ke' is read by",
                "hftok": "vllm_service_extra_args[0]: '--hf-tok' is read by"}
    for host, start in expected.items():
        assert results[host]["failed"] is True and start in results[host]["msg"], results[host]
        assert "KEY-27" not in results[host]["msg"]
    assert report["stats"] == dict((host, report["stats"][host]) for host in expected)
    assert all(stats["failures"] == 1 and stats["changed"] == 0 for stats in report["stats"].values())
    assert not (tmp_path / "facts").exists()


# The command line's numbers and speculative config, checked before the host is read by serve.py's own rules
# (issue 28: the role's separate assert of them is gone), and batched tokens against the context length.
@pytest.mark.parametrize("values, message", [
    ({"vllm_service_tensor_parallel_size": 0}, "vllm_service_tensor_parallel_size: expected an integer >= 1"),
    ({"vllm_service_gpu_memory_utilization": 1.5}, "vllm_service_gpu_memory_utilization: expected a number in (0, 1]"),
    ({"vllm_service_max_model_len": "many"}, "vllm_service_max_model_len: expected an integer >= 1"),
    ({"vllm_service_speculative_config": {"num_speculative_tokens": 2}},
     "vllm_service_speculative_config: expected a dict with a method (e.g. method: dflash)"),
    ({"vllm_service_speculative_config": ["dflash"]}, "vllm_service_speculative_config: expected a dict (empty for none)"),
    ({"vllm_service_enable_chunked_prefill": "sometimes"}, "vllm_service_enable_chunked_prefill: expected true or false"),
    ({"vllm_service_max_num_batched_tokens": 128, "vllm_service_max_model_len": 256},
     "vllm_service_max_num_batched_tokens=128 is below vllm_service_max_model_len=256: vLLM refuses this unless "
     "chunked prefill is on (vllm_service_enable_chunked_prefill=true)."),
])
def test_the_command_lines_settings_are_checked_before_the_read(values, message):
    problems = check_unit_values(values)
    assert len(problems) == 1 and problems[0].startswith(message), problems


@pytest.mark.parametrize("values", [
    {"vllm_service_tensor_parallel_size": 2, "vllm_service_gpu_memory_utilization": None,
     "vllm_service_max_model_len": None, "vllm_service_max_num_batched_tokens": None,
     "vllm_service_enable_chunked_prefill": None, "vllm_service_speculative_config": {}},
    {"vllm_service_max_num_batched_tokens": 128, "vllm_service_max_model_len": 256,
     "vllm_service_enable_chunked_prefill": "true"},
    {"vllm_service_max_num_batched_tokens": 32768, "vllm_service_max_model_len": 32768,
     "vllm_service_speculative_config": {"method": "dflash", "model": "/srv/dflash", "num_speculative_tokens": 15}},
])
def test_settings_vllm_accepts_pass(values):
    assert check_unit_values(values) == []


def test_chunked_prefill_is_read_as_serve_reads_it_and_a_raw_template_is_left_alone():
    below = {"vllm_service_max_num_batched_tokens": 128, "vllm_service_max_model_len": 256}
    assert check_unit_values(dict(below, vllm_service_enable_chunked_prefill="yes")) == []
    assert len(check_unit_values(dict(below, vllm_service_enable_chunked_prefill="off"))) == 1
    assert check_unit_values(dict(below, vllm_service_enable_chunked_prefill="{{ chunked }}"), skip_templates=True) == []
