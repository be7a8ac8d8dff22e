# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_service role's probe (on a real filesystem) and its plan: a task is skipped only when it would change nothing.
"""
import grp
import os
import pwd

import pytest
from hypothesis import given, strategies as st
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.vllm import FilterModule as GpuHostFilters
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import service_plan as sp
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import service_state as vs
from ansible_collections.inference.gpu_host.plugins.module_utils._common import files as hf
from ansible_collections.inference.gpu_host.plugins.module_utils._common.systemd import parse_show

vllm_service_plan = GpuHostFilters().filters()["vllm_service_plan"]


ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
UNIT = "[Unit]\nDescription=vLLM\n"
ENV = "HF_TOKEN=secret\n"


def _write(path, text, mode=0o644):
    path.write_text(text)
    os.chmod(str(path), mode)
    return str(path)


def _state(tmp_path, unit=UNIT, env=ENV, active="active", enabled="enabled", listener="", listener_cg="",
           cgroup="/system.slice/vllm-default.service", copies=()):
    files = {}
    if unit is not None:
        files["unit"] = hf.path_state(_write(tmp_path / "vllm.service", unit))
    else:
        files["unit"] = hf.path_state(str(tmp_path / "missing.service"))
    if env is not None:
        files["env"] = hf.path_state(_write(tmp_path / "vllm.env", env, 0o600))
    else:
        files["env"] = {"exists": False}
    env_dir = tmp_path / "etc-vllm"
    env_dir.mkdir(exist_ok=True)
    os.chmod(str(env_dir), 0o755)
    files["env_dir"] = hf.path_state(str(env_dir))
    return {"files": files,
            "unit": {"ControlGroup": cgroup, "InvocationID": "abc", "ActiveState": active, "UnitFileState": enabled},
            "port": {"listener": listener, "listener_cgroup": listener_cg},
            "rollback_copies": list(copies)}


def _wanted(unit_text=UNIT, env_text=ENV, **over):
    wanted = {"unit": {"content": unit_text, "owner": ME, "group": MY_GROUP, "mode": "0644"},
              "env": {"content": env_text, "owner": ME, "group": MY_GROUP, "mode": "0600"},
              "env_dir": {"owner": ME, "group": MY_GROUP, "mode": "0755"},
              "enabled": True}
    wanted.update(over)
    return wanted


# ------------------------------------------------------------------ plan

def test_nothing_to_do(tmp_path):
    out = sp.plan(_state(tmp_path), _wanted())
    assert out == {"unit_changed": False, "env_changed": False, "env_dir_changed": False, "pending": False,
                   "start_needed": False, "port_ok": True, "listener": "", "rollback_copies": []}


def test_changed_unit_is_pending_and_starts(tmp_path):
    out = sp.plan(_state(tmp_path), _wanted(unit_text=UNIT + "X=1\n"))
    assert out["unit_changed"] and not out["env_changed"] and out["pending"] and out["start_needed"]


def test_env_mode_owner_and_missing_files(tmp_path):
    state = _state(tmp_path)
    assert sp.plan(state, _wanted(env={"content": ENV, "owner": ME, "group": MY_GROUP, "mode": "0640"}))["env_changed"]
    assert sp.plan(state, _wanted(env={"content": ENV, "owner": "nobody-igh", "group": MY_GROUP,
                                       "mode": "0600"}))["env_changed"]
    blank = sp.plan(_state(tmp_path, unit=None, env=None), _wanted())
    assert blank["unit_changed"] and blank["env_changed"] and blank["pending"]


def test_symbolic_mode_leaves_the_task_to_decide(tmp_path):
    out = sp.plan(_state(tmp_path), _wanted(unit={"content": UNIT, "owner": ME, "group": MY_GROUP, "mode": "u=rw"}))
    assert out["unit_changed"]


def test_result_names_no_content(tmp_path):
    out = sp.plan(_state(tmp_path), _wanted(env_text="HF_TOKEN=hf_verysecret\n"))
    assert "verysecret" not in repr(out)


@pytest.mark.parametrize("active,enabled,want,needed", [
    ("active", "enabled", True, False),
    ("activating", "enabled", True, False),
    ("inactive", "enabled", True, True),
    ("failed", "enabled", True, True),
    ("active", "disabled", True, True),
    ("active", "disabled", False, False),
    ("active", "static", True, True),
    ("", "", True, True),
])
def test_start_needed(tmp_path, active, enabled, want, needed):
    out = sp.plan(_state(tmp_path, active=active, enabled=enabled), _wanted(enabled=want))
    assert out["start_needed"] is needed


def test_port_held_by_the_unit_or_another(tmp_path):
    line = 'LISTEN 0 4096 127.0.0.1:8000 0.0.0.0:* users:(("vllm",pid=42,fd=3))'
    ours = sp.plan(_state(tmp_path, listener=line, listener_cg="0::/system.slice/vllm-default.service\n"), _wanted())
    assert ours["port_ok"]
    other = sp.plan(_state(tmp_path, listener=line, listener_cg="0::/user.slice/session-1.scope\n"), _wanted())
    assert not other["port_ok"] and other["listener"] == line
    no_cgroup = sp.plan(_state(tmp_path, listener=line, listener_cg="0::/\n", cgroup=""), _wanted())
    assert not no_cgroup["port_ok"]


def test_only_the_keys_given_are_decided(tmp_path):
    state = _state(tmp_path)
    record = str(tmp_path / "record.fact")
    state["files"]["record"] = hf.path_state(record)
    text = '{\n    "unit": "vllm-default.service"\n}\n'
    want = {"record": {"content": text, "owner": ME, "group": MY_GROUP, "mode": "0644"}}
    assert sp.plan(state, want)["record_changed"] is True
    _write(tmp_path / "record.fact", text)
    state["files"]["record"] = hf.path_state(record)
    out = sp.plan(state, want)
    assert out["record_changed"] is False and "unit_changed" not in out and "start_needed" not in out


def test_the_plan_says_what_a_rollback_puts_back(tmp_path):
    rollback = {"enabled": True, "unit_path": "/etc/systemd/system/vllm-default.service",
                "env_path": "/etc/vllm/default.env", "generation": {}, "files": ["/root/models/d/config.json"],
                "serving_dir": ""}
    settled = vllm_service_plan(_state(tmp_path), _wanted(rollback=rollback))
    # The unit and environment go back only when this run changes them; the copies the drafter kept, always.
    assert settled["pending"] is False
    assert settled["rollback_items"]["link"] is None
    assert settled["rollback_items"]["files"] == ["/root/models/d/config.json"]
    changed = vllm_service_plan(_state(tmp_path), _wanted(unit_text=UNIT + "# new\n", rollback=rollback))
    assert changed["pending"] and changed["rollback_items"]["files"] == [
        "/root/models/d/config.json", rollback["unit_path"], rollback["env_path"]]
    off = vllm_service_plan(_state(tmp_path), _wanted(unit_text=UNIT + "# new\n",
                                                      rollback=dict(rollback, enabled=False)))
    assert off["rollback_items"]["files"] == ["/root/models/d/config.json"]
    assert "rollback_items" not in vllm_service_plan(_state(tmp_path), _wanted())
    with pytest.raises(AnsibleFilterError, match=r"^vllm_service_plan: the rollback files\[0\]: expected an absolute path"):
        vllm_service_plan(_state(tmp_path), _wanted(rollback=dict(rollback, files=["models/x"])))
    with pytest.raises(AnsibleFilterError, match="^vllm_service_plan: rollback must be a mapping with enabled"):
        vllm_service_plan(_state(tmp_path), _wanted(rollback={"unit_path": "/u"}))


def test_bad_input_is_named(tmp_path):
    with pytest.raises(AnsibleFilterError, match="vllm_service_host_state"):
        vllm_service_plan({"packages": {}}, _wanted())
    with pytest.raises(AnsibleFilterError, match="wanted must be a mapping"):
        vllm_service_plan(_state(tmp_path), ["unit"])
    with pytest.raises(AnsibleFilterError, match="content as a string"):
        vllm_service_plan(_state(tmp_path), {"unit": {"content": None}})


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(have=_text, want=_text, mode=st.sampled_from(["0600", "0644", "600", "0640"]),
       have_mode=st.sampled_from(["0600", "0644", "0640"]))
def test_file_changed_exactly_when_a_copy_would_change_it(have, want, mode, have_mode):
    state = {"exists": True, "isdir": False, "owner": "root", "group": "root", "mode": have_mode,
             "sha256": hf.sha256_text(have)}
    changed = sp.file_changed(state, {"content": want, "owner": "root", "group": "root", "mode": mode})
    assert changed == (have != want or int(mode, 8) != int(have_mode, 8))


@given(active=st.sampled_from(["active", "activating", "inactive", "failed", "deactivating", ""]),
       enabled=st.sampled_from(["enabled", "disabled", "static", "masked", ""]),
       want=st.booleans(), pending=st.booleans())
def test_start_skipped_only_when_running_enabled_as_wanted_and_nothing_pending(active, enabled, want, pending):
    state = {"unit": {"ActiveState": active, "UnitFileState": enabled}}
    needed = sp.start_needed(state, want, pending)
    skipped_ok = (not pending and active in ("active", "activating")
                  and enabled == ("enabled" if want else "disabled"))
    assert needed is (not skipped_ok)


@given(listener=st.sampled_from(["", "  \n", 'LISTEN users:(("x",pid=7,fd=3))']),
       cgroup=st.sampled_from(["", "/system.slice/vllm-a.service"]),
       listener_cg=st.sampled_from(["", "0::/system.slice/vllm-a.service\n", "0::/other\n"]))
def test_port_ok_is_free_or_ours(listener, cgroup, listener_cg):
    ok, _who = sp.port_check({"port": {"listener": listener, "listener_cgroup": listener_cg},
                              "unit": {"ControlGroup": cgroup}})
    assert ok == (not listener.strip() or (bool(cgroup) and cgroup in listener_cg))


# ------------------------------------------------------------------ host side

def test_fingerprint_is_the_filters(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "README.md").write_text("no")
    (tmp_path / ".hidden.json").write_text("{}")
    (tmp_path / "sub.json").mkdir()
    os.symlink(str(tmp_path / "config.json"), str(tmp_path / "link.json"))
    files = vs.model_files(str(tmp_path) + "/", ["*.safetensors", "*.json"])
    assert sorted(os.path.basename(f["path"]) for f in files) == ["config.json", "model.safetensors"]
    assert vs.fingerprint(vs.model_files(str(tmp_path / "missing"), ["*"])) == vs.fingerprint([])


@given(st.lists(st.tuples(st.from_regex(r"/[a-z]{1,8}", fullmatch=True), st.integers(0, 2 ** 40),
                          st.floats(0, 2e9, allow_nan=False)), max_size=5))
def test_fingerprint_does_not_follow_the_order_of_the_files(rows):
    files = [{"path": p, "size": s, "mtime": m} for p, s, m in rows]
    assert vs.fingerprint(files) == vs.fingerprint(list(reversed(files)))


def _stat(path):
    found = os.stat(path)
    return {"path": path, "size": found.st_size, "mtime": found.st_mtime}


def test_fingerprint_follows_size_and_mtime(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\0" * 64)
    (tmp_path / "config.json").write_text("{}")
    files = [_stat(str(weights)), _stat(str(tmp_path / "config.json"))]
    first = vs.fingerprint(files)
    assert first.startswith("sha256:") and len(first) == 7 + 64
    os.utime(str(weights), (1700000000, 1700000000))
    assert vs.fingerprint([_stat(str(weights)), files[1]]) != first
    weights.write_bytes(b"\0" * 65)
    assert vs.fingerprint([_stat(str(weights)), files[1]]) != first


def test_fingerprint_of_nothing_is_stable_and_entries_need_stat_fields():
    assert vs.fingerprint([]) == vs.fingerprint(None)
    with pytest.raises(vs.VllmServiceStateError, match="path, size and mtime"):
        vs.fingerprint([{"path": "/x"}])


def test_systemctl_show_and_listener():
    text = "ControlGroup=/system.slice/x.service\nInvocationID=ab12\nActiveState=active\nOther=1\n"
    assert parse_show(text, vs.UNIT_PROPERTIES) == {"ControlGroup": "/system.slice/x.service", "InvocationID": "ab12",
                                                    "ActiveState": "active", "UnitFileState": ""}
    assert vs.listener_pid('users:(("vllm",pid=1234,fd=3),("vllm",pid=99,fd=3))') == 1234
    assert vs.listener_pid("") is None


def test_read_json_and_record(tmp_path):
    assert hf.read_json(str(tmp_path / "none.json")) == (None, None)
    (tmp_path / "bad.json").write_text("{")
    data, error = hf.read_json(str(tmp_path / "bad.json"))
    assert data is None and "is not JSON" in error
    (tmp_path / "list.fact").write_text("[]")
    assert hf.read_record(str(tmp_path / "list.fact"))[0] is None
    (tmp_path / "ok.fact").write_text('{"a": 1}')
    assert hf.read_record(str(tmp_path / "ok.fact")) == ({"a": 1}, None)


def test_venv_link_devices_copies_account(tmp_path):
    (tmp_path / "gen1").mkdir()
    os.symlink(str(tmp_path / "gen1"), str(tmp_path / "venv"))
    link = vs.venv_link(str(tmp_path / "venv"))
    assert link["islink"] and link["real"] == os.path.realpath(str(tmp_path / "gen1"))
    plain = vs.venv_link(str(tmp_path / "gen1"))
    assert not plain["islink"] and plain["real"] == str(tmp_path / "gen1")
    (tmp_path / "nvidia0").write_text("")
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "null").write_text("")
    nodes = vs.device_nodes(str(tmp_path))
    assert [n["path"] for n in nodes] == [str(tmp_path / "nvidia-caps"), str(tmp_path / "nvidia0")]
    assert not any(n["ischr"] for n in nodes)
    (tmp_path / "a.prev").write_text("")
    assert vs.rollback_copies([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "a")]) == [str(tmp_path / "a")]
    entry = vs.account(ME)
    assert entry[1] == str(os.getuid()) and len(entry) == 6
    assert vs.account("no-such-user-igh") is None
    assert all(len(v) == 3 for v in vs.group_db().values())
