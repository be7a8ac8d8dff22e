# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_unit: the environment file and its secrets, the hardening, draining, and GPU device access."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import (
    LEGACY_TIMEOUT_STOP_SEC,
    STOP_MARGIN_SEC,
    VllmUnitError,
    device_groups,
    drain_settings,
    env_value,
    environment_has_secret,
    environment_lines,
    hardening_directives,
    inaccessible_devices,
)

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
