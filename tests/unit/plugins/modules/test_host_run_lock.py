# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""host_run_lock: the module run for real on a temporary directory, and the action plugin's loop (wait, stale
takeover, a foreign holder, a corrupt entry, the break id) against the real host side."""
from __future__ import absolute_import, division, print_function

import hashlib
import json
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from _module_runner import run_module, run_playbook

from ansible_collections.inference.gpu_host.plugins.action import host_run_lock as action
from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import (
    acquire, cmdline_sha, controller_identity, make_record, process_start, read_lock, release, run_id)

SLEEP = hashlib.sha256(b"sleep\x0029.5\x00").hexdigest()


def me(pid=None):
    return controller_identity(os.getpid() if pid is None else pid, hostname="ctl-a")


def record(controller=None, playbook="site.yml"):
    return make_record(controller or me(), "alice", playbook, "Inference containers", started="2026-12-05T04:00:00Z")


def foreign():
    return dict(me(), hostname="ctl-b", machine_id="0123456789abcdef0123456789abcdef", pid=4242, pid_start="99")


def dead_pid():
    proc = multiprocessing.Process(target=int)
    proc.start()
    proc.join()
    return proc.pid


# --- the module ---------------------------------------------------------------------------------------------------


def test_module_acquires_and_releases(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    rec = record()
    out = run_module("host_run_lock", tmp_path, {"path": path, "record": rec}, check_rc=True)
    assert out["acquired"] and not out["changed"] and out["id"] == rec["id"]
    assert read_lock(path) == rec
    held = run_module("host_run_lock", tmp_path, {"path": path, "record": record(foreign())}, check_rc=True)
    assert not held["acquired"] and held["holder"]["id"] == rec["id"] and not held.get("failed")
    out = run_module("host_run_lock", tmp_path, {"path": path, "state": "released", "id": rec["id"]}, check_rc=True)
    assert out["released"] and not out["changed"] and not os.path.exists(path)


def test_module_check_mode_reads_and_takes_nothing(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    out = run_module("host_run_lock", tmp_path, {"path": path, "record": record()}, check=True)
    assert out["skipped"] and not out["changed"] and not os.path.exists(os.path.dirname(path))


@pytest.mark.parametrize("args, message", [
    ({"path": "run.lock", "record": {}}, "path: expected an absolute file path"),
    ({"path": "/x/", "record": {}}, "path: expected an absolute file path"),
    ({"path": "/tmp/x/run.lock"}, "record: not a run-lock record (missing)"),
    ({"path": "/tmp/x/run.lock", "record": {"id": "x"}}, "record: not a run-lock record"),
    ({"path": "/tmp/x/run.lock", "state": "released"}, "id: required with state=released"),
    ({"path": "/tmp/x/run.lock", "state": "taken"}, "value of state must be one of"),
])
def test_module_bad_input_is_a_clear_error(tmp_path, args, message):
    out = run_module("host_run_lock", tmp_path, args, check_rc=True)
    assert out["failed"] and message in out["msg"], out


def test_module_fifo_lock_is_reported_not_waited_on(tmp_path):
    path = tmp_path / "igh" / "run.lock"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(str(path))
    started = time.time()
    out = run_module("host_run_lock", tmp_path, {"path": str(path), "record": record()}, check_rc=True)
    assert not out["acquired"] and "is a FIFO" in out["holder"]["corrupt"] and time.time() - started < 10


def test_module_unsafe_directory_is_a_clear_error(tmp_path):
    directory = tmp_path / "igh"
    directory.mkdir()
    os.chmod(str(directory), 0o777)
    out = run_module("host_run_lock", tmp_path, {"path": str(directory / "run.lock"), "record": record()}, check_rc=True)
    assert out["failed"] and "not be writable by group or others" in out["msg"] and os.listdir(str(directory)) == []


# --- the action plugin's loop, against the real host side ---------------------------------------------------------


class Loop(action.ActionModule):
    """The action plugin without Ansible's machinery: its module call runs the host side in this process."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self.calls = []

    def _execute_module(self, module_name=None, module_args=None, task_vars=None, **_kwargs):
        # The host side runs as host_state (one payload with the roles' reads): its lock part.
        assert module_name == "inference.gpu_host.host_state" and list(module_args) == ["lock"], module_args
        lock = module_args["lock"]
        self.calls.append(lock)
        path = lock["path"]
        if lock["state"] == "released":
            return {"changed": False, "run_lock": release(path, lock["id"])}
        return {"changed": False,
                "run_lock": dict(acquire(path, lock["record"], takeover=lock["takeover"]), id=lock["record"]["id"])}


def take(path, timeout=0, break_id="", controller=None):
    loop = Loop()
    ctl = controller or me()
    common = dict(path=path, timeout=timeout, break_id=break_id)
    return loop, loop._acquire(path, record(ctl), ctl, timeout, break_id, common, {"inventory_hostname": "ct129"})


def test_a_free_lock_is_taken_at_once(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    loop, out = take(path)
    assert out["acquired"] and not out.get("failed") and len(loop.calls) == 1


def test_a_foreign_holder_fails_at_once_naming_it(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    theirs = record(foreign(), playbook="playbooks/site.yml")
    acquire(path, theirs)
    started = time.time()
    _loop, out = take(path)
    assert out["failed"] and time.time() - started < 2
    for part in ("ct129: the run lock %s is held by run %s" % (path, theirs["id"]), "pid 4242", "controller ctl-b",
                 "user alice", "playbook playbooks/site.yml", "started 2026-12-05T04:00:00Z", "another controller",
                 "run_lock_break=%s" % theirs["id"], "Nothing was changed"):
        assert part in out["msg"], part
    assert read_lock(path) == theirs


def test_a_foreign_holder_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    monkeypatch.setattr(action, "POLL", 0.2)
    path = str(tmp_path / "igh" / "run.lock")
    acquire(path, record(foreign()))
    started = time.time()
    loop, out = take(path, timeout=1)
    assert out["failed"] and 1 <= time.time() - started < 4 and len(loop.calls) >= 3
    assert re.search(r"Waited [1-3] s \(run_lock_timeout=1\)", out["msg"]), out["msg"]  # the measured wait


def test_a_holder_that_ends_while_waited_for_hands_over(tmp_path, monkeypatch):
    monkeypatch.setattr(action, "POLL", 0.2)
    path = str(tmp_path / "igh" / "run.lock")
    theirs = record(foreign())
    acquire(path, theirs)
    calls = []
    real = Loop._execute_module

    def release_on_third(self, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            release(path, theirs["id"])
        return real(self, **kwargs)

    monkeypatch.setattr(Loop, "_execute_module", release_on_third)
    _loop, out = take(path, timeout=30)
    assert out["acquired"] and not out.get("failed") and out["waited"] < 5
    assert read_lock(path)["id"] == run_id(me())


@pytest.mark.skipif(not os.path.isfile("/etc/machine-id"), reason="needs a machine-id")
def test_a_dead_run_of_this_controller_is_taken_over(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    gone = record(dict(me(), pid=dead_pid(), cmdline_sha="f" * 64))  # no process here has its command line
    acquire(path, gone)
    loop, out = take(path)
    assert out["acquired"] and out["taken_over"] == gone and len(loop.calls) == 2
    assert loop.calls[1]["takeover"] == gone["id"]


@pytest.mark.skipif(not os.path.isfile("/etc/machine-id"), reason="needs a machine-id")
def test_a_live_run_of_this_controller_is_not_taken_over(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    parent = os.getppid()
    alive = record(dict(me(), pid=parent, pid_start=process_start(parent)))
    acquire(path, alive)
    _loop, out = take(path)
    assert out["failed"] and "still runs on this controller" in out["msg"] and read_lock(path) == alive


@pytest.mark.skipif(not os.path.isfile("/etc/machine-id"), reason="needs a machine-id")
def test_a_dead_run_whose_task_worker_still_runs_is_not_taken_over(tmp_path):
    # A process with the dead run's command line, reparented away from this one: a worker of the killed run.
    subprocess.run(["sh", "-c", "sleep 29.5 >/dev/null 2>&1 &"], check=True)
    for _attempt in range(50):  # the background child execs sleep a moment later
        sleeper = [int(n) for n in os.listdir("/proc") if n.isdigit() and cmdline_sha(n) == SLEEP]
        if sleeper:
            break
        time.sleep(0.05)
    assert sleeper
    try:
        path = str(tmp_path / "igh" / "run.lock")
        gone = record(dict(me(), pid=dead_pid(), pid_start="0", cmdline_sha=SLEEP))
        acquire(path, gone)
        _loop, out = take(path)
        assert out["failed"] and "whose ansible-playbook is gone but whose task process still runs" in out["msg"]
        assert "pids %s" % sleeper[0] in out["msg"] and read_lock(path) == gone
    finally:
        for pid in sleeper:
            os.kill(pid, signal.SIGKILL)


def test_break_id_takes_over_exactly_the_named_holder(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    theirs = record(foreign())
    acquire(path, theirs)
    _loop, out = take(path, break_id="ctl-b-1-0000000000")
    assert out["failed"] and read_lock(path) == theirs
    _loop, out = take(path, break_id=theirs["id"])
    assert out["acquired"] and out["taken_over"] == theirs


def test_a_corrupt_entry_fails_at_once_with_its_id_then_breaks_by_it(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    os.makedirs(os.path.dirname(path), 0o700)
    os.mkfifo(path)
    started = time.time()
    _loop, out = take(path, timeout=60)
    assert out["failed"] and time.time() - started < 2
    corrupt_id = out["holder"]["id"]
    assert "is a FIFO" in out["msg"] and "run_lock_break=%s" % corrupt_id in out["msg"]
    _loop, out = take(path, break_id=corrupt_id)
    assert out["acquired"] and json.loads(open(path).read())["id"] == run_id(me())


def test_this_run_is_the_parent_process_with_its_start_time():
    ctl = action.this_run()
    assert ctl["pid"] == os.getppid() and ctl["pid_start"] == process_start(os.getppid())
    assert ctl["hostname"] == socket.gethostname()


# --- the action plugin in a real ansible-playbook (-c local): its own checks ----------------------------------------

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - {name: negative timeout, inference.gpu_host.host_run_lock: {path: "%(path)s", timeout: -1}, ignore_errors: true}
    - {name: huge timeout, inference.gpu_host.host_run_lock: {path: "%(path)s", timeout: 86401}, ignore_errors: true}
    - {name: odd break id, inference.gpu_host.host_run_lock: {path: "%(path)s", break_id: "a b"}, ignore_errors: true}
    - {name: check mode, inference.gpu_host.host_run_lock: {path: "%(path)s"}, check_mode: true}
    - {name: take, inference.gpu_host.host_run_lock: {path: "%(path)s"}}
    - {name: release, inference.gpu_host.host_run_lock: {path: "%(path)s", state: released}}
"""


def test_action_refuses_bad_options_and_skips_in_check_mode(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    out, _proc = run_playbook(tmp_path, PLAYBOOK % {"path": path})
    results = dict((t["task"]["name"], t["hosts"]["localhost"]) for t in out["plays"][0]["tasks"])
    assert results["negative timeout"]["msg"] == "timeout (run_lock_timeout): expected seconds from 0 to 86400, got -1"
    assert results["huge timeout"]["failed"] and "got 86401" in results["huge timeout"]["msg"]
    assert results["odd break id"]["failed"] and "break_id (run_lock_break)" in results["odd break id"]["msg"]
    assert results["check mode"]["skipped"] and not results["check mode"]["changed"]
    assert results["take"]["acquired"] and not results["take"]["changed"]
    assert results["release"]["released"] and not results["release"]["changed"]
    assert results["take"]["id"] == results["release"]["id"] and not os.path.exists(path)
