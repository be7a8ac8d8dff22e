# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The per-host run lock: one converge (upgrade, rollback) of a host at a time (docs/locking.md).

The lock is a JSON record at ``/run/inference-gpu-host/run.lock`` on the managed host (tmpfs: a reboot
frees it). Two halves, both here, stdlib only:

* the host side (the ``host_run_lock`` module): read the record without following links or blocking on a
  FIFO, create it atomically (``link(2)`` of a complete temporary file: it appears whole or not at all, and
  only when no record is there), replace or remove it only when it holds the id the caller names - every
  change under ``flock(2)`` of the lock's directory, bounded, so two changes never interleave;
* the controller side (the ``host_run_lock`` action plugin): who this run is (the controller's identity and
  the ``ansible-playbook`` process with its start time) and whether a record's run is dead. Only a record
  written by THIS controller can be found dead (its process gone, or its pid reused: another start time, or
  the controller rebooted); a holder on another controller is never assumed dead.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import fcntl
import hashlib
import json
import os
import stat
import time

from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import first_control

RECORD_KIND = "inference.gpu_host run lock"
RECORD_VERSION = 1
MAX_RECORD_SIZE = 64 << 10  # a record is a few hundred bytes
DIR_LOCK_WAIT = 10.0  # seconds: the directory's flock is held for a read and a rename, never longer
CONTROLLER_KEYS = ("hostname", "machine_id", "pid_ns", "boot_id", "pid", "pid_start", "cmdline_sha")
TEXT_KEYS = ("user", "playbook", "play", "started")


class RunLockError(Exception):
    """A lock that cannot be read or written safely; the message names the path and what to do."""


# --- the controller side ---------------------------------------------------------------------------------------


def _read_small(path, limit=4096):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return ""


def _stat_fields(pid, proc):
    """Fields 3 and on of /proc/<pid>/stat (state, ppid, ..., field 22 = start time at index 19), or [] when there
    is no such process. The command name (field 2) may hold spaces and parentheses: split after the last ")"."""
    text = _read_small(os.path.join(proc, str(int(pid)), "stat"), 4096)
    if ")" not in text:
        return []
    fields = text.rsplit(")", 1)[1].split()
    return fields if len(fields) > 19 else []


def process_start(pid, proc="/proc"):
    """A process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot) as a string, or "" when
    there is no such process."""
    fields = _stat_fields(pid, proc)
    return fields[19] if fields else ""


def cmdline_sha(pid, proc="/proc"):
    """sha256 of a process's command line: task workers are forked from ansible-playbook without exec, so they
    share it. Only the hash is kept: extra vars on a command line can carry secrets."""
    try:
        with open(os.path.join(proc, str(int(pid)), "cmdline"), "rb") as handle:
            return hashlib.sha256(handle.read(1 << 20)).hexdigest()
    except (IOError, OSError):
        return ""


def orphaned_workers(record, me, proc="/proc"):
    """Pids of processes of a dead holder's run that still run: ansible-playbook killed on its own (SIGKILL)
    leaves the worker of the running task alive (workers call setsid), and that worker still drives the task
    on the host (a venv install) until it ends. Known by the run's command-line hash and a start no earlier than
    the run's; this run's own processes and zombies are left out, and so is the main process of another live
    run with the same command line (its workers are its children)."""
    theirs = record.get("controller") or {}
    want = theirs.get("cmdline_sha")
    try:
        since = int(theirs.get("pid_start"))
    except (TypeError, ValueError):
        since = 0
    if not want:
        return []
    found = []
    try:
        names = os.listdir(proc)
    except OSError:
        return []
    procs = {}
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(name, proc)
        if fields and fields[0] != "Z" and fields[19].isdigit() and int(fields[19]) >= since:
            procs[int(name)] = int(fields[1]) if fields[1].isdigit() else 0
    same = dict((pid, ppid) for pid, ppid in procs.items() if cmdline_sha(pid, proc) == want)
    for pid, ppid in sorted(same.items()):
        if pid == me.get("pid") or ppid == me.get("pid"):
            continue  # this run and its own workers
        if ppid in same:
            continue  # a worker of another live run with the same command line: that run is its own holder
        if pid == theirs.get("pid"):
            continue
        # A worker whose parent is gone (reparented), or the main of another identical command (waited for too:
        # it may be about to take the lock itself).
        found.append(pid)
    return found


def controller_identity(pid, proc="/proc", etc="/etc", hostname=""):
    """Who the controller and its run are: hostname, machine-id (empty when unreadable), the pid namespace
    (two containers can share a machine-id, never a pid namespace), the boot id, the run's pid and start."""
    machine_id = _read_small(os.path.join(etc, "machine-id")) or _read_small("/var/lib/dbus/machine-id")
    try:
        pid_ns = os.readlink(os.path.join(proc, "self", "ns", "pid"))
    except OSError:
        pid_ns = ""
    return {
        "hostname": hostname,
        "machine_id": machine_id,
        "pid_ns": pid_ns,
        "boot_id": _read_small(os.path.join(proc, "sys", "kernel", "random", "boot_id")),
        "pid": int(pid),
        "pid_start": process_start(pid, proc),
        "cmdline_sha": cmdline_sha(pid, proc),
    }


def run_id(controller):
    """The run's id: short, stable for one run (acquire and release agree), different for any other run."""
    key = "\0".join(str(controller.get(k, "")) for k in CONTROLLER_KEYS)
    return "%s-%d-%s" % (controller.get("hostname") or "controller", int(controller.get("pid", 0)),
                         hashlib.sha256(key.encode("utf-8")).hexdigest()[:10])


def make_record(controller, user, playbook, play, started=None):
    """The record this run writes."""
    if started is None:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "kind": RECORD_KIND,
        "version": RECORD_VERSION,
        "id": run_id(controller),
        "controller": dict((k, controller.get(k)) for k in CONTROLLER_KEYS),
        "user": user,
        "playbook": playbook,
        "play": play,
        "started": started,
    }


def same_controller(record, me):
    """Whether a record was written on this controller (same machine-id, hostname and pid namespace). An empty
    machine-id never matches: without it two hosts cannot be told apart."""
    theirs = record.get("controller") or {}
    if not me.get("machine_id") or not theirs.get("machine_id"):
        return False
    return all(theirs.get(k) == me.get(k) for k in ("machine_id", "hostname", "pid_ns"))


def holder_state(record, me, proc="/proc"):
    """'self' (this run holds it), 'dead' (a run of this controller that is gone), 'alive' (a run of this
    controller that still runs), 'orphaned' (its ansible-playbook is gone, a worker of it still runs a task) or
    'foreign' (another controller's: never assumed dead)."""
    if record.get("id") == run_id(me):
        return "self"
    if not same_controller(record, me):
        return "foreign"
    theirs = record["controller"]
    if theirs.get("boot_id") != me.get("boot_id"):
        return "dead"  # the controller rebooted since: every process of that boot is gone
    try:
        pid = int(theirs.get("pid"))
    except (TypeError, ValueError):
        return "dead"
    if pid <= 0:
        return "dead"
    start = process_start(pid, proc)
    if start and start == str(theirs.get("pid_start")):
        return "alive"
    # No such process, or the pid was reused by a process started at another time: dead, unless a worker of
    # that run still drives a task.
    return "orphaned" if orphaned_workers(record, me, proc) else "dead"


def describe(holder):
    """One line naming the holder of a lock (a record, or a corrupt entry)."""
    if holder.get("corrupt"):
        return "%s (id %s)" % (holder["corrupt"], holder["id"])
    ctl = holder.get("controller") or {}
    return "run %s: pid %s on controller %s, user %s, playbook %s%s, started %s" % (
        holder.get("id"), ctl.get("pid"), ctl.get("hostname") or "?", holder.get("user") or "?",
        holder.get("playbook") or "?", (" (play %r)" % holder["play"]) if holder.get("play") else "",
        holder.get("started") or "?")


# --- the host side ------------------------------------------------------------------------------------------------


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISLNK, "a symbolic link"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"  # pragma: no cover - every file type is named above


def _corrupt(path, what, fingerprint):
    digest = hashlib.sha256(("%s\0%s" % (what, fingerprint)).encode("utf-8", "replace")).hexdigest()[:12]
    return {"corrupt": "%s is %s, not a run-lock record" % (path, what), "id": "corrupt-" + digest,
            "is_dir": what == "a directory"}


def validate_record(data):
    """The reason a parsed JSON value is not a run-lock record, or ""."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("kind") != RECORD_KIND or data.get("version") != RECORD_VERSION:
        return "no kind %r version %d" % (RECORD_KIND, RECORD_VERSION)
    if not isinstance(data.get("id"), str) or not data["id"]:
        return "no id"
    ctl = data.get("controller")
    if not isinstance(ctl, dict):
        return "no controller"
    for key in CONTROLLER_KEYS:
        value = ctl.get(key)
        if key == "cmdline_sha" and value is None:
            continue  # optional: a record written before it was kept is still a record
        if key == "pid":
            if not isinstance(value, int) or isinstance(value, bool):
                return "controller.pid is not an integer"
        elif not isinstance(value, str):
            return "controller.%s is not a string" % key
    for key in TEXT_KEYS:
        if not isinstance(data.get(key), str):
            return "%s is not a string" % key
    return ""


def read_lock(path):
    """The holder of the lock at ``path``: None when free, a record, or a corrupt entry ({corrupt, id}).

    Never follows a symbolic link, never blocks on a FIFO (O_NONBLOCK), reads at most MAX_RECORD_SIZE."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise RunLockError("cannot read the run lock %s: %s" % (path, exc.strerror))
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return _corrupt(path, "a symbolic link (to %s)" % target, "%d:%s" % (st.st_ino, target))
    if not stat.S_ISREG(st.st_mode):
        return _corrupt(path, _kind(st.st_mode), "%d:%d" % (st.st_ino, st.st_mtime_ns))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None  # released between the lstat and the open
        raise RunLockError("cannot read the run lock %s: %s" % (path, exc.strerror))
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):  # swapped after the lstat
            return _corrupt(path, _kind(fst.st_mode), "%d:%d" % (fst.st_ino, fst.st_mtime_ns))
        data = os.read(fd, MAX_RECORD_SIZE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_RECORD_SIZE:
        return _corrupt(path, "larger than %d bytes" % MAX_RECORD_SIZE, hashlib.sha256(data).hexdigest())
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return _corrupt(path, "not JSON", hashlib.sha256(data).hexdigest())
    reason = validate_record(record)
    if reason:
        return _corrupt(path, "a JSON file that is not a run-lock record (%s)" % reason,
                        hashlib.sha256(data).hexdigest())
    return record


def _check_dir(directory, create):
    """The lock's directory: made 0700 when absent (its parent must exist), else a real directory of this user
    that nobody else can write: a record another user could plant would block or fake every run."""
    try:
        st = os.lstat(directory)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise RunLockError("cannot use the run lock directory %s: %s" % (directory, exc.strerror))
        if not create:
            return False
        try:
            os.mkdir(directory, 0o700)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise RunLockError("cannot create the run lock directory %s: %s" % (directory, exc.strerror))
        st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise RunLockError("the run lock directory %s is %s, not a directory: move it away (nothing was changed)"
                           % (directory, _kind(st.st_mode)))
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise RunLockError("the run lock directory %s is owned by uid %d with mode %04o: it must belong to uid %d and "
                           "not be writable by group or others (nothing was changed)"
                           % (directory, st.st_uid, stat.S_IMODE(st.st_mode), os.geteuid()))
    return True


class _DirLock(object):
    """flock(2) of the lock's directory for one read-decide-write, bounded by ``wait`` seconds."""

    def __init__(self, directory, wait=DIR_LOCK_WAIT):
        self.directory, self.wait, self.fd = directory, wait, None

    def __enter__(self):
        self.fd = os.open(self.directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW)
        deadline = time.time() + self.wait
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK) or time.time() >= deadline:
                    os.close(self.fd)
                    raise RunLockError("could not lock the directory %s within %g s (%s): another process holds "
                                       "its flock" % (self.directory, self.wait, exc.strerror))
                time.sleep(0.05)

    def __exit__(self, *exc_info):
        os.close(self.fd)  # closing releases the flock


def _write_temp(directory, record):
    tmp = os.path.join(directory, ".run.lock.new")
    try:
        if stat.S_ISDIR(os.lstat(tmp).st_mode):
            raise RunLockError("%s is a directory: move it away" % tmp)
        os.unlink(tmp)  # a leftover of a killed run; only the flock holder writes it
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(record, sort_keys=True, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def acquire(path, record, takeover="", wait=DIR_LOCK_WAIT):
    """Take the lock for ``record`` when it is free, already this run's, or held by the id ``takeover`` names
    (a dead run of this controller, or a holder broken on purpose). Returns {acquired, holder, taken_over}:
    ``holder`` is the record or corrupt entry found (None when it was free)."""
    directory = os.path.dirname(path)
    _check_dir(directory, create=True)
    with _DirLock(directory, wait):
        holder = read_lock(path)
        if holder is not None and holder.get("id") == record["id"]:
            return {"acquired": True, "holder": holder, "taken_over": None}
        if holder is not None and (not takeover or holder.get("id") != takeover):
            return {"acquired": False, "holder": holder, "taken_over": None}
        if holder is not None and holder.get("is_dir"):
            raise RunLockError("%s: remove the directory by hand; it is never deleted for you" % holder["corrupt"])
        tmp = _write_temp(directory, record)
        try:
            if holder is None:
                os.link(tmp, path)  # fails with EEXIST if anything appeared: never overwrites
            else:
                os.rename(tmp, path)  # replaces the entry itself, never what a link points to
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        return {"acquired": True, "holder": holder, "taken_over": holder}


def release(path, lock_id, wait=DIR_LOCK_WAIT):
    """Remove the lock when it holds ``lock_id``; anything else (free, another run, corrupt) is left as it is.
    Returns {released, holder}."""
    directory = os.path.dirname(path)
    if not _check_dir(directory, create=False):
        return {"released": False, "holder": None}
    with _DirLock(directory, wait):
        holder = read_lock(path)
        if holder is None or holder.get("corrupt") or holder.get("id") != lock_id:
            return {"released": False, "holder": holder}
        os.unlink(path)
        return {"released": True, "holder": holder}


def host_step(params, check_mode=False):
    """The host side of the host_run_lock module, from its parameters: the result to return.

    ``params``: state (acquired | released), path, record (acquired), takeover, id (released). Bad
    parameters and every refusal are a RunLockError naming the option; check mode reads and takes nothing.
    """
    path = params.get("path")
    if not path or not path.startswith("/") or path.endswith("/") or first_control(path) is not None:
        raise RunLockError("path: expected an absolute file path, got %r" % (path,))
    if check_mode:
        return {"changed": False, "skipped": True, "msg": "check mode: the run lock is neither read nor taken"}
    try:
        if params.get("state") == "released":
            if not params.get("id"):
                raise RunLockError("id: required with state=released (set by the action plugin)")
            return dict(release(path, params["id"]), changed=False, id=params["id"])
        record = params.get("record")
        reason = validate_record(record) if record is not None else "missing"
        if reason:
            raise RunLockError("record: not a run-lock record (%s); the host_run_lock action plugin sets it" % reason)
        return dict(acquire(path, record, takeover=params.get("takeover") or ""), changed=False, id=record["id"])
    except OSError as exc:
        raise RunLockError("run lock %s: %s" % (path, exc))
