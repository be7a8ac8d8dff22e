# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The base role's probe (on a real filesystem) and its plan: a task is skipped only when it would change nothing."""

import grp
import json
import os
import pwd

import pytest
from hypothesis import given, strategies as st

from ansible.errors import AnsibleFilterError
from ansible_collections.inference.gpu_host.plugins.filter.host import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._common import files as hf
from ansible_collections.inference.gpu_host.plugins.module_utils._host import base_state as bs

base_plan = FilterModule().filters()["base_plan"]

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def _wanted(tmp_path, **over):
    wanted = {
        "packages": ["curl", "git"],
        "ca_certificates": [],
        "user": ME, "group": MY_GROUP, "home": pwd.getpwuid(os.getuid()).pw_dir,
        "shell": pwd.getpwuid(os.getuid()).pw_shell,
        "directories": [{"path": str(tmp_path / "models"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
        "limits": {"path": str(tmp_path / "limits.conf"), "content": "vllm soft nofile 1\n",
                   "owner": ME, "group": MY_GROUP, "mode": "0644"},
        "ca_dir": {"path": str(tmp_path / "ca"), "owner": ME, "group": MY_GROUP, "mode": "0755"},
        "facts_dir": {"path": str(tmp_path / "facts.d"), "owner": ME, "group": MY_GROUP, "mode": "0755"},
    }
    wanted.update(over)
    return wanted


def _state(tmp_path, wanted, installed=True, record=None):
    paths = [d["path"] for d in wanted["directories"]] + [wanted["limits"]["path"], wanted["ca_dir"]["path"],
                                                          wanted["facts_dir"]["path"]]
    state = {"packages": {p: installed for p in wanted["packages"] + ["python3-apt"]},
             "ca_files": bs.ca_files(wanted["ca_dir"]["path"]),
             "record": record, "paths": {p: bs.path_state(p) for p in paths}}
    state.update(bs.account_state(wanted["user"], wanted["group"]))
    return state


def _converge(tmp_path, wanted, plan):
    """Do what the role's tasks do for a plan (owner root is replaced by the test's own user)."""
    for d in plan["directories"]:
        os.makedirs(d["path"], exist_ok=True)
        os.chmod(d["path"], int(d["mode"], 8))
    for key in ("ca_dir", "facts_dir"):
        if plan[key + "_changed"]:
            os.makedirs(wanted[key]["path"], exist_ok=True)
            os.chmod(wanted[key]["path"], 0o755)
    for cert in plan["ca_write"]:
        path = os.path.join(wanted["ca_dir"]["path"], cert["dest_name"])
        with open(path, "w") as fh:
            fh.write(cert["content"])
        os.chmod(path, 0o644)
    if plan["limits_changed"]:
        with open(wanted["limits"]["path"], "w") as fh:
            fh.write(wanted["limits"]["content"])
        os.chmod(wanted["limits"]["path"], 0o644)
    return plan["record"]


def test_blank_host_needs_everything_then_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(bs, "CA_FILE", {"owner": ME, "group": MY_GROUP, "mode": "0644"})
    wanted = _wanted(tmp_path, ca_certificates=bs.ca_certificates([{"name": "site.pem", "content": PEM}], []))
    plan = bs.plan(_state(tmp_path, wanted, installed=False), wanted)
    assert plan["install_packages"] == ["curl", "git"]
    assert [c["dest_name"] for c in plan["ca_write"]] == ["site.crt"]
    assert plan["ca_refresh"] and plan["ca_dir_changed"] and plan["facts_dir_changed"]
    assert plan["limits_changed"] and plan["record_changed"]
    assert [d["path"] for d in plan["directories"]] == [str(tmp_path / "models")]
    assert not plan["noop"]
    record = _converge(tmp_path, wanted, plan)
    again = bs.plan(_state(tmp_path, wanted, record=json.loads(json.dumps(record))), wanted)
    assert again["noop"], again


def test_each_drift_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(bs, "CA_FILE", {"owner": ME, "group": MY_GROUP, "mode": "0644"})
    wanted = _wanted(tmp_path, ca_certificates=bs.ca_certificates([{"name": "site.crt", "content": PEM}], []))
    record = _converge(tmp_path, wanted, bs.plan(_state(tmp_path, wanted), wanted))
    assert bs.plan(_state(tmp_path, wanted, record=record), wanted)["noop"]

    os.chmod(str(tmp_path / "models"), 0o755)
    assert [d["path"] for d in bs.plan(_state(tmp_path, wanted, record=record), wanted)["directories"]]
    os.chmod(str(tmp_path / "models"), 0o750)

    (tmp_path / "limits.conf").write_text("edited\n")
    assert bs.plan(_state(tmp_path, wanted, record=record), wanted)["limits_changed"]
    (tmp_path / "limits.conf").write_text(wanted["limits"]["content"])

    (tmp_path / "ca" / "site.crt").write_text(PEM + "\n")
    plan = bs.plan(_state(tmp_path, wanted, record=record), wanted)
    assert plan["ca_write"] and plan["ca_refresh"] and not plan["record_changed"]
    (tmp_path / "ca" / "site.crt").write_text(PEM)

    # A run that stopped between the copy and update-ca-certificates left no record of it.
    plan = bs.plan(_state(tmp_path, wanted, record={"version": 1, "packages": ["curl", "git"],
                                                    "ca_certificates": {}}), wanted)
    assert plan["ca_refresh"] and not plan["ca_write"] and plan["record_changed"]

    plan = bs.plan(dict(_state(tmp_path, wanted, record=record), packages={"curl": True, "git": False}), wanted)
    assert plan["install_packages"] == ["git"] and not plan["record_changed"]


def test_symbolic_mode_leaves_the_task_to_run(tmp_path):
    wanted = _wanted(tmp_path)
    os.makedirs(str(tmp_path / "models"), mode=0o750)
    wanted["directories"][0]["mode"] = "u=rwx,g=rx,o="
    assert bs.plan(_state(tmp_path, wanted), wanted)["directories"]


def test_account(tmp_path):
    wanted = _wanted(tmp_path, user="no-such-user-igh", group="no-such-group-igh")
    plan = bs.plan(_state(tmp_path, wanted), wanted)
    assert plan["user_changed"] and plan["group_changed"]
    wanted = _wanted(tmp_path, user="root", group="root")
    plan = bs.plan(_state(tmp_path, wanted), wanted)
    assert not plan["user_changed"] and not plan["group_changed"]
    daemon = pwd.getpwnam("daemon")
    wanted = _wanted(tmp_path, user="daemon", group=grp.getgrgid(daemon.pw_gid).gr_name, home=daemon.pw_dir,
                     shell=daemon.pw_shell)
    assert not bs.plan(_state(tmp_path, wanted), wanted)["user_changed"]
    for key, value in (("shell", "/bin/other-shell"), ("home", "/nonexistent-igh"), ("group", "root")):
        changed = dict(wanted, **{key: value})
        assert bs.plan(_state(tmp_path, changed), changed)["user_changed"], key


def test_ca_items():
    certs = bs.ca_certificates(["/etc/site/a.pem", {"name": "b", "content": PEM}], [PEM])
    assert [c["dest_name"] for c in certs] == ["a.crt", "b.crt"]
    assert certs[0]["sha256"] == bs.sha256_text(PEM)
    for items, contents, needle in (
            ([42], [], r"base_extra_ca_certificates\[0\]: expected a controller path"),
            ([{"name": "x"}], [], r"\[0\]: expected"),
            ([{"name": "x", "content": "not pem"}], [], r"\[0\] \(x\): expected a PEM"),
            (["/a/x.crt", {"name": "x.pem", "content": PEM}], [PEM], r"\[0\] and \[1\] are both installed as x.crt"),
            ("a.crt", [], "expected a list")):
        with pytest.raises(bs.BaseStateError, match=needle):
            bs.ca_certificates(items, contents)


def test_filter_errors_name_the_input(tmp_path):
    with pytest.raises(AnsibleFilterError, match="base_host_state"):
        base_plan({"x": 1}, _wanted(tmp_path))
    with pytest.raises(AnsibleFilterError, match=r"base_extra_ca_certificates\[0\]"):
        base_plan(_state(tmp_path, _wanted(tmp_path)), _wanted(tmp_path, ca_certificates=[7], ca_contents=[]))
    with pytest.raises(AnsibleFilterError, match="missing limits"):
        wanted = _wanted(tmp_path)
        del wanted["limits"]
        base_plan({"packages": {}}, wanted)


def test_record_read(tmp_path):
    path = tmp_path / "base.fact"
    assert hf.read_record(str(path)) == (None, None)
    path.write_text("{not json")
    record, warning = hf.read_record(str(path))
    assert record is None and "not JSON" in warning
    path.write_text("[1]")
    assert "JSON object" in hf.read_record(str(path))[1]
    path.write_text('{"version": 1}')
    assert hf.read_record(str(path)) == ({"version": 1}, None)


@given(st.lists(st.tuples(st.from_regex(r"[a-z0-9][a-z0-9.+-]{0,20}", fullmatch=True),
                          st.sampled_from(["installed", "not-installed", "config-files", "half-installed"]))),
       st.lists(st.from_regex(r"[a-z0-9][a-z0-9.+-]{0,20}", fullmatch=True)))
def test_parse_dpkg(rows, names):
    out = "".join("%s %s\n" % row for row in rows) + "garbage line with words\n\n"
    parsed = bs.parse_dpkg(out, names)
    assert set(parsed) == set(names)
    for name in names:
        statuses = [s for n, s in rows if n == name]
        assert parsed[name] == (bool(statuses) and statuses[-1] == "installed")
