# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of host_run_lock: the controller's half of the run lock (docs/locking.md).

Only the controller can tell whether a run it started is still alive, so the waiting and the stale-lock decision
happen here; every read and write of the record is the module's, on the host, under flock.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import getpass
import os
import re
import socket
import time

from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import (
    controller_identity, describe, holder_state, make_record, orphaned_workers, run_id)

display = Display()

# The host side runs as the host_state module: one module payload per run for the lock and the roles' reads
# (module_utils/_host/host_state.py says why); its lock part is host_run_lock's module's.
HOST_MODULE = "inference.gpu_host.host_state"
MAX_TIMEOUT = 86400
POLL = 2.0
_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")

ARGUMENT_SPEC = dict(
    state=dict(type="str", default="acquired", choices=["acquired", "released"]),
    path=dict(type="path", default="/run/inference-gpu-host/run.lock"),
    timeout=dict(type="int", default=0),
    break_id=dict(type="str", default=""),
)


def this_run():
    """The controller and the run: workers are forked from the ansible-playbook process for each task
    (ansible.utils.multiprocessing: the 'fork' context), so the parent is the process that lives as long as the
    run, the one whose death makes a lock stale."""
    return controller_identity(os.getppid(), hostname=socket.gethostname())


def _user():
    try:
        return getpass.getuser()
    except Exception:  # pylint: disable=broad-except  # no passwd entry and no $USER: a container's uid
        return "uid %d" % os.getuid()


def _playbook():
    """The playbook paths of this ansible-playbook command (never its other arguments: extra vars carry secrets)."""
    args = context.CLIARGS.get("args") if context.CLIARGS else None
    if not args:
        return "?"
    return " ".join(to_text(a) for a in args)


def check_lock_options(args):
    """The message for a bad timeout or break_id (the variables' names with them), or None."""
    timeout, break_id = args["timeout"], args["break_id"] or ""
    if not 0 <= timeout <= MAX_TIMEOUT:
        return "timeout (run_lock_timeout): expected seconds from 0 to %d, got %d" % (MAX_TIMEOUT, timeout)
    if break_id and not _ID.match(break_id):
        return ("break_id (run_lock_break): expected the id of a lock holder as a failure message names it "
                "(letters, digits, '.', '_', '-'), got %r" % (break_id,))
    return None


def new_record(me, task_vars):
    """This run's lock record."""
    return make_record(me, _user(), _playbook(), to_text(task_vars.get("ansible_play_name", "")))


def take(call, host, path, me, timeout, break_id):
    """The controller's half of taking the lock: wait for a live holder, take a stale one over, fail naming it.

    ``call(takeover)`` runs the module once with the lock request (``takeover``: the id of the holder to replace,
    or "") and returns the lock's part of its result (host_run_lock's: acquired, holder, taken_over, id; or failed
    and msg). Returns the part of the call that took the lock, with ``waited``, or one with failed and msg.
    """
    started = time.time()
    deadline = started + timeout
    takeover, takeovers, announced = "", 0, False
    while True:
        out = call(takeover)
        if out.get("failed"):
            return out
        out["changed"] = False
        out["waited"] = round(time.time() - started, 1)
        if out.get("acquired"):
            gone = out.get("taken_over")
            if gone:
                display.warning("%s: took over the run lock %s from %s" % (host, path, describe(gone)))
            return out
        holder = out.get("holder") or {}
        takeover = ""
        if holder.get("corrupt"):
            if break_id and holder["id"] == break_id and takeovers < 3:
                takeover, takeovers = break_id, takeovers + 1
                continue
            out.update(failed=True, msg=(
                "%s is not a lock that a run of this collection wrote, so no run can tell whether it is in use "
                "(id %s). Look at it, then move it away, or set run_lock_break=%s (host_run_lock break_id) to "
                "replace it. Nothing was changed." % (holder["corrupt"], holder["id"], holder["id"])))
            return out
        state = holder_state(holder, me)
        if takeovers < 3 and (state == "dead" or (break_id and holder.get("id") == break_id)):
            # A run of this controller whose process is gone (pid dead, pid reused, controller rebooted), or
            # the holder named on purpose: replace exactly that record (the module checks the id under flock).
            takeover, takeovers = holder["id"], takeovers + 1
            continue
        # Said before the deadline is looked at: on a loaded machine the first round trip can outlast a
        # short run_lock_timeout, and the wait must still be announced before it fails.
        if not announced and timeout > 0:
            display.display("%s: waiting up to %d s for the run lock held by %s" % (host, timeout, describe(holder)))
            announced = True
        remaining = deadline - time.time()
        if remaining <= 0:
            where = {
                "alive": "a process that still runs on this controller",
                "orphaned": "a run whose ansible-playbook is gone but whose task process still runs on this "
                            "controller (pids %s): the task it started may still be changing the host"
                            % ", ".join(str(p) for p in orphaned_workers(holder, me)),
            }.get(state, "another controller (this run cannot tell whether it is still alive)")
            out.update(failed=True, msg=(
                "%s: the run lock %s is held by %s - %s. Waited %.0f s (run_lock_timeout=%d). Let that run "
                "finish (or set run_lock_timeout to wait for it); if it is gone for sure, set "
                "run_lock_break=%s (host_run_lock break_id) to take the lock from it. Nothing was changed."
                % (host, path, describe(holder), where, time.time() - started, timeout, holder.get("id"))))
            return out
        time.sleep(min(POLL, remaining))


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        del validation
        problem = check_lock_options(args)
        if problem:
            return dict(result, failed=True, msg=problem)
        timeout, break_id = args["timeout"], args["break_id"] or ""
        me = this_run()
        my_id = run_id(me)
        result.update(changed=False, id=my_id)
        if self._play_context.check_mode:
            # A drift check or an upgrade plan changes nothing: it neither needs nor takes the lock.
            return dict(result, skipped=True, msg="check mode: the run lock is neither read nor taken")
        common = dict(path=args["path"], timeout=timeout, break_id=break_id)
        if args["state"] == "released":
            out = self._lock(dict(common, state="released", id=my_id), task_vars)
            out["changed"] = False
            return dict(result, **out)
        record = new_record(me, task_vars)
        return dict(result, **self._acquire(args["path"], record, me, timeout, break_id, common, task_vars))

    def _lock(self, lock, task_vars):
        """The lock's host side once: host_state's run_lock part, with the module's failure, warnings and
        deprecations as they came."""
        out = self._execute_module(module_name=HOST_MODULE, module_args=dict(lock=lock), task_vars=task_vars)
        part = dict(out.pop("run_lock", None) or {})
        for key in ("failed", "msg", "warnings", "deprecations", "exception"):
            if key in out:
                part[key] = out[key]
        return part

    def _acquire(self, path, record, me, timeout, break_id, common, task_vars):
        def call(takeover):
            return self._lock(dict(common, state="acquired", record=record, takeover=takeover), task_vars)

        return take(call, task_vars.get("inventory_hostname", "?"), path, me, timeout, break_id)
