# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""run_lock: the host's run lock record, its atomic create/replace/remove, and the controller's liveness test.

Issue 27: two converges at once had no lock (one failed with a misleading "No module named vllm.entrypoints"
while the other installed). Corrupt entries (garbage, a FIFO, a symlink, a directory) give a clear answer, never
a hang; a stale lock of a dead run of this controller is taken over; another controller's is never."""
from __future__ import absolute_import, division, print_function

import fcntl
import json
import multiprocessing
import os
import signal
import stat
import time

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._host import run_lock
from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import (
    RunLockError, acquire, controller_identity, describe, holder_state, make_record, process_start, read_lock,
    release, run_id, validate_record)


@pytest.fixture(autouse=True)
def no_hang():
    """Every test here must end within 20 s: a read that blocked on a FIFO would hang instead."""
    def _alarm(*_args):
        raise AssertionError("hung")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def me(pid=None):
    return controller_identity(os.getpid() if pid is None else pid, hostname="ctl-a")


def record(controller=None, playbook="site.yml"):
    return make_record(controller or me(), "alice", playbook, "Inference containers", started="2026-12-05T04:00:00Z")


def other_controller(**changes):
    ctl = dict(me(), hostname="ctl-b", machine_id="0123456789abcdef0123456789abcdef", pid=4242, pid_start="99")
    ctl.update(changes)
    return ctl


def lock_path(tmp_path):
    return str(tmp_path / "igh" / "run.lock")


def dead_pid():
    proc = multiprocessing.Process(target=int)
    proc.start()
    proc.join()
    return proc.pid


# --- the controller side -----------------------------------------------------------------------------------------


def test_process_start_reads_field_22_after_a_command_with_spaces_and_parens(tmp_path):
    (tmp_path / "77").mkdir()
    fields = ["S"] + [str(n) for n in range(4, 22)] + ["123456", "0"]
    (tmp_path / "77" / "stat").write_text("77 (a) b (c)) " + " ".join(fields))
    assert process_start(77, str(tmp_path)) == "123456"
    assert process_start(78, str(tmp_path)) == ""
    assert process_start(os.getpid()) and process_start(os.getpid()) == process_start(os.getpid())


def test_run_id_is_stable_for_a_run_and_differs_for_any_other():
    mine = me()
    assert run_id(mine) == run_id(dict(mine)) and run_id(mine).startswith("ctl-a-%d-" % os.getpid())
    for key, value in (("pid_start", "1"), ("boot_id", "x"), ("machine_id", "y"), ("pid_ns", "pid:[1]"),
                       ("cmdline_sha", "0" * 64)):
        assert run_id(dict(mine, **{key: value})) != run_id(mine), key


def test_holder_of_this_run_is_self():
    assert holder_state(record(), me()) == "self"


def test_holder_of_another_controller_is_never_dead():
    assert holder_state(record(other_controller()), me()) == "foreign"
    # Same hostname and pid namespace but another machine-id: another machine.
    assert holder_state(record(other_controller(hostname="ctl-a")), me()) == "foreign"
    # No machine-id on either side: cannot tell two machines apart, so never dead.
    blind = dict(me(), machine_id="")
    assert holder_state(record(dict(blind, pid=dead_pid())), blind) == "foreign"
    # Another pid namespace (a container with the same machine-id): its pids mean nothing here.
    assert holder_state(record(dict(me(), pid=dead_pid(), pid_ns="pid:[4026532999]")), me()) == "foreign"


@pytest.mark.skipif(not os.path.isfile("/etc/machine-id"), reason="needs a machine-id")
def test_holder_of_this_controller_dead_reused_rebooted_or_alive():
    mine = me()
    # A command line no process here has: whatever else runs with pytest's is no worker of these runs.
    assert holder_state(record(dict(mine, pid=dead_pid(), cmdline_sha="f" * 64)), mine) == "dead"
    parent = os.getppid()
    alive = dict(mine, pid=parent, pid_start=process_start(parent), cmdline_sha="f" * 64)
    assert holder_state(record(alive), mine) == "alive"
    assert holder_state(record(dict(alive, pid_start="1")), mine) == "dead"       # pid reused by another process
    assert holder_state(record(dict(alive, boot_id="another-boot")), mine) == "dead"  # the controller rebooted


def test_describe_names_pid_start_playbook_controller_user():
    line = describe(record(other_controller(), playbook="playbooks/site.yml"))
    for part in ("pid 4242", "controller ctl-b", "user alice", "playbook playbooks/site.yml", "2026-12-05T04:00:00Z",
                 "Inference containers", run_id(other_controller())):
        assert part in line, part


# --- the host side -----------------------------------------------------------------------------------------------


def test_acquire_a_free_lock_writes_the_record_0600_in_a_0700_directory(tmp_path):
    path = lock_path(tmp_path)
    rec = record()
    out = acquire(path, rec)
    assert out == {"acquired": True, "holder": None, "taken_over": None}
    assert json.loads(open(path).read()) == rec
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert os.listdir(os.path.dirname(path)) == ["run.lock"]  # no temporary file left


def test_a_held_lock_is_not_taken_and_not_touched(tmp_path):
    path = lock_path(tmp_path)
    theirs = record(other_controller())
    acquire(path, theirs)
    before = open(path, "rb").read()
    out = acquire(path, record())
    assert not out["acquired"] and out["holder"] == theirs
    assert open(path, "rb").read() == before
    # A takeover naming another id does not take it either.
    assert not acquire(path, record(), takeover="ctl-b-1-0000000000")["acquired"]
    assert open(path, "rb").read() == before


def test_acquire_again_by_the_same_run_is_reentrant(tmp_path):
    path = lock_path(tmp_path)
    acquire(path, record())
    out = acquire(path, record())
    assert out["acquired"] and out["taken_over"] is None


def test_takeover_replaces_exactly_the_named_holder(tmp_path):
    path = lock_path(tmp_path)
    theirs = record(other_controller())
    acquire(path, theirs)
    out = acquire(path, record(), takeover=theirs["id"])
    assert out["acquired"] and out["taken_over"] == theirs
    assert json.loads(open(path).read())["id"] == run_id(me())


def test_release_removes_only_this_runs_lock(tmp_path):
    path = lock_path(tmp_path)
    assert release(path, run_id(me())) == {"released": False, "holder": None}
    assert not os.path.exists(os.path.dirname(path))  # release never creates the directory
    theirs = record(other_controller())
    acquire(path, theirs)
    assert release(path, run_id(me())) == {"released": False, "holder": theirs}
    assert os.path.exists(path)
    assert release(path, theirs["id"])["released"] and not os.path.exists(path)
    assert release(path, theirs["id"]) == {"released": False, "holder": None}


def test_garbage_is_corrupt_with_a_stable_id_and_replaced_only_when_named(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    with open(path, "wb") as handle:
        handle.write(b"\x00\xffnot json")
    holder = read_lock(path)
    assert holder["corrupt"] == "%s is not JSON, not a run-lock record" % path
    assert holder["id"].startswith("corrupt-") and read_lock(path)["id"] == holder["id"]
    assert not acquire(path, record())["acquired"]
    assert not release(path, holder["id"])["released"] and os.path.exists(path)  # release never removes it
    assert acquire(path, record(), takeover=holder["id"])["acquired"]
    assert read_lock(path)["id"] == run_id(me())


@pytest.mark.parametrize("content, reason", [
    (b"[1, 2]", "not a JSON object"),
    (b'{"kind": "something else", "version": 1}', "no kind"),
    (json.dumps(dict(record(), id="")).encode(), "no id"),
    (json.dumps(dict(record(), controller=dict(me(), pid="12"))).encode(), "controller.pid is not an integer"),
    (json.dumps(dict(record(), controller=dict(me(), pid=True))).encode(), "controller.pid is not an integer"),
    (json.dumps(dict(record(), playbook=None)).encode(), "playbook is not a string"),
])
def test_json_that_is_not_a_record_is_corrupt(tmp_path, content, reason):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    with open(path, "wb") as handle:
        handle.write(content)
    assert reason in read_lock(path)["corrupt"]


def test_an_oversized_file_is_corrupt_and_read_bounded(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    with open(path, "wb") as handle:
        handle.write(b" " * (run_lock.MAX_RECORD_SIZE + 10))
    assert "larger than" in read_lock(path)["corrupt"]


def test_a_fifo_never_blocks_and_is_replaced_only_when_named(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    os.mkfifo(path)
    holder = read_lock(path)
    assert holder["corrupt"] == "%s is a FIFO, not a run-lock record" % path
    assert not acquire(path, record())["acquired"]
    assert acquire(path, record(), takeover=holder["id"])["acquired"]
    assert stat.S_ISREG(os.lstat(path).st_mode)


def test_a_symlink_is_never_followed(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    victim = tmp_path / "etc-shadow"
    victim.write_text("precious\n")
    os.symlink(str(victim), path)
    holder = read_lock(path)
    assert holder["corrupt"] == "%s is a symbolic link (to %s), not a run-lock record" % (path, victim)
    assert not acquire(path, record())["acquired"]
    assert acquire(path, record(), takeover=holder["id"])["acquired"]
    assert not os.path.islink(path) and victim.read_text() == "precious\n"  # the link replaced, its target kept


def test_a_symlink_to_a_valid_record_is_still_corrupt(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.dirname(path), 0o700)
    elsewhere = tmp_path / "rec.json"
    elsewhere.write_text(json.dumps(record(other_controller())))
    os.symlink(str(elsewhere), path)
    assert read_lock(path).get("corrupt")


def test_a_directory_is_never_deleted(tmp_path):
    path = lock_path(tmp_path)
    os.makedirs(os.path.join(path, "keep"))
    holder = read_lock(path)
    assert holder["corrupt"] == "%s is a directory, not a run-lock record" % path
    assert not acquire(path, record())["acquired"]
    with pytest.raises(RunLockError, match="remove the directory by hand"):
        acquire(path, record(), takeover=holder["id"])
    assert os.path.isdir(os.path.join(path, "keep"))


@pytest.mark.parametrize("setup, message", [
    ("symlink", "is a symbolic link, not a directory"),
    ("file", "is a regular file, not a directory"),
    ("writable", "not be writable by group or others"),
])
def test_an_unsafe_directory_is_refused_and_left_alone(tmp_path, setup, message):
    path = lock_path(tmp_path)
    directory = os.path.dirname(path)
    if setup == "symlink":
        os.mkdir(str(tmp_path / "real"), 0o700)
        os.symlink(str(tmp_path / "real"), directory)
    elif setup == "file":
        open(directory, "w").close()
    else:
        os.mkdir(directory)
        os.chmod(directory, 0o777)
    with pytest.raises(RunLockError, match=message):
        acquire(path, record())
    with pytest.raises(RunLockError):
        release(path, run_id(me()))
    if setup == "symlink":
        assert os.listdir(str(tmp_path / "real")) == []


def test_a_missing_parent_is_a_clear_error(tmp_path):
    with pytest.raises(RunLockError, match="cannot create the run lock directory"):
        acquire(str(tmp_path / "no" / "such" / "run.lock"), record())


def test_a_held_directory_flock_is_waited_for_a_bounded_time(tmp_path):
    path = lock_path(tmp_path)
    acquire(path, record())
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        started = time.time()
        with pytest.raises(RunLockError, match="could not lock the directory"):
            acquire(path, record(other_controller()), wait=0.3)
        assert time.time() - started < 3
    finally:
        os.close(fd)


def _race(path, pid, results):
    results.put((pid, acquire(path, record(other_controller(pid=pid)))["acquired"]))


def test_two_runs_at_once_one_wins(tmp_path):
    for attempt in range(5):
        path = str(tmp_path / ("r%d" % attempt) / "run.lock")
        results = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=_race, args=(path, 1000 + n, results)) for n in range(4)]
        for proc in procs:
            proc.start()
        outcome = dict(results.get(timeout=15) for _proc in procs)
        for proc in procs:
            proc.join()
        winners = [pid for pid, won in outcome.items() if won]
        assert len(winners) == 1, outcome
        assert read_lock(path)["controller"]["pid"] == winners[0]


def test_validate_record_accepts_a_made_record():
    assert validate_record(record()) == ""
    older = record()
    del older["controller"]["cmdline_sha"]
    assert validate_record(older) == ""
    assert "cmdline_sha is not a string" in validate_record(dict(record(), controller=dict(me(), cmdline_sha=1)))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.binary(max_size=300))
def test_any_bytes_in_the_lock_file_give_a_record_or_a_corrupt_entry(tmp_path_factory, content):
    path = str(tmp_path_factory.mktemp("h") / "run.lock")
    with open(path, "wb") as handle:
        handle.write(content)
    holder = read_lock(path)
    assert holder is not None and (holder.get("corrupt") or validate_record(holder) == "")


def _fake_proc(root, pid, ppid, start, cmdline, state="S"):
    fields = [state, str(ppid)] + ["0"] * 17 + [str(start), "0"]
    os.makedirs(os.path.join(root, str(pid)))
    with open(os.path.join(root, str(pid), "stat"), "w") as handle:
        handle.write("%d (ansible-playboo) %s" % (pid, " ".join(fields)))
    with open(os.path.join(root, str(pid), "cmdline"), "wb") as handle:
        handle.write(cmdline)


def test_a_killed_run_whose_task_worker_still_runs_is_orphaned_not_dead(tmp_path):
    """ansible-playbook SIGKILLed on its own: the worker of its running task (setsid, reparented) still drives
    the task on the host (issue 27: the remote `uv pip install` kept running). Not taken over until it ends."""
    proc = str(tmp_path / "proc")
    cmd = b"/usr/bin/python3\0/usr/bin/ansible-playbook\0site.yml\0"
    _fake_proc(proc, 200, 1, 500, cmd)                                   # the orphaned worker
    _fake_proc(proc, 300, 1, 600, cmd, state="Z")                        # a zombie: ignored
    _fake_proc(proc, 250, 1, 100, cmd)                                   # started before the run: not its worker
    _fake_proc(proc, 900, 50, 700, cmd)                                  # this run ...
    _fake_proc(proc, 901, 900, 710, cmd)                                 # ... and its own worker
    _fake_proc(proc, 950, 1, 720, b"sshd: root@notty\0")                 # another command
    mine = dict(me(), pid=900, pid_start="700", cmdline_sha=run_lock.cmdline_sha(900, proc))
    holder = record(dict(mine, pid=100, pid_start="400"))
    assert run_lock.orphaned_workers(holder, mine, proc) == [200]
    assert holder_state(holder, mine, proc) == "orphaned"
    os.rename(os.path.join(proc, "200"), os.path.join(proc, "gone"))
    assert holder_state(holder, mine, proc) == "dead"
    # A record without a command-line hash has no workers to look for.
    assert run_lock.orphaned_workers(record(dict(mine, pid=100, cmdline_sha="")), mine, proc) == []


def test_the_command_line_is_kept_only_as_a_hash():
    ctl = me()
    assert len(ctl["cmdline_sha"]) == 64 and "pytest" not in json.dumps(record(ctl))


@pytest.mark.parametrize("char", ["\n", "\r", "\t", "\x00", "\x7f", "\x85", "\u2028"])
def test_a_lock_path_with_a_control_character_is_refused(char):
    # The one control-character rule (module_utils/_common/text.py), not only a newline.
    with pytest.raises(run_lock.RunLockError, match="path: expected an absolute file path"):
        run_lock.host_step({"state": "acquired", "path": "/run/lock%sx" % char, "record": {}})
