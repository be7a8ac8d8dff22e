# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of host_state, and of the roles' reads (base_host_state, python_env_host_state, drafter_host_state,
vllm_service_host_state: each a subclass naming its READ): the host_state module run on the host, one payload for
all of them (module_utils/_host/host_state.py says why), with the run lock's controller half (host_run_lock's: this
run's record, waiting, the stale-lock decision) around it. The read's result is returned at the top level, as the
read's own module returns it."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.inference.gpu_host.plugins.action.host_run_lock import (
    ARGUMENT_SPEC as LOCK_SPEC, HOST_MODULE, check_lock_options, new_record, take, this_run)
from ansible_collections.inference.gpu_host.plugins.module_utils._host.host_state import READS
from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import run_id

CHECK_MODE = dict(changed=False, skipped=True, msg="check mode: the run lock is neither read nor taken")


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True
    # The read of a role's own module (base_host_state's action sets "base"); None for host_state itself.
    READ = None
    # Whether that module takes a lock option (base_host_state: site.yml takes the lock in base's read).
    LOCKS = True

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        if self.READ:
            options = dict(self._task.args)
            lock = options.pop("lock", None) if self.LOCKS else None
            reads = {self.READ: options}
        else:
            _validation, args = self.validate_argument_spec(
                argument_spec=dict(dict((name, dict(type="dict")) for name in READS), lock=dict(type="dict"),
                                   texts=dict(type="list", elements="path")),
                mutually_exclusive=[list(READS)])
            reads = dict((name, args[name]) for name in READS if args[name] is not None)
            if args["texts"] is not None:
                reads["texts"] = args["texts"]
            lock = args["lock"]
            if lock is None and not reads:
                return dict(result, failed=True, msg="host_state: give lock, texts or one of %s" % ", ".join(READS))
        if lock is None:
            return self._flat(result, self._call(reads, task_vars))
        lock = self._lock_options(lock)
        if isinstance(lock, str):
            return dict(result, failed=True, changed=False, msg=lock)
        # The reads run with check_mode=false in a check run (they change nothing); the run's own check mode
        # decides, so that a drift check or an upgrade plan neither reads nor takes the lock.
        if self._play_context.check_mode or boolean(task_vars.get("ansible_check_mode", False), strict=False):
            if not reads:
                return dict(result, **CHECK_MODE)
            return self._flat(result, dict(self._call(reads, task_vars), run_lock=CHECK_MODE))
        me = this_run()
        common = dict(path=lock["path"], timeout=lock["timeout"], break_id=lock["break_id"])
        if lock["state"] == "released":
            return self._flat(result, self._call(dict(reads, lock=dict(common, state="released", id=run_id(me))),
                                                 task_vars))
        record = new_record(me, task_vars)
        last = {}

        def call(takeover):
            last["out"] = out = self._call(
                dict(reads, lock=dict(common, state="acquired", record=record, takeover=takeover)), task_vars)
            if out.get("failed"):
                return dict(out.get("run_lock") or {}, failed=True, msg=out.get("msg"))
            return dict(out["run_lock"])

        held = take(call, task_vars.get("inventory_hostname", "?"), lock["path"], me, lock["timeout"],
                    lock["break_id"])
        if held.get("failed"):
            return dict(result, changed=False, failed=True, msg=held.get("msg"), run_lock=held)
        return self._flat(result, dict(last["out"], run_lock=held))

    def _lock_options(self, raw):
        """The lock's options checked as host_run_lock checks its own; a message naming the bad one otherwise."""
        spec = dict(LOCK_SPEC)
        if self.READ:
            spec["state"] = dict(type="str", default="acquired", choices=["acquired"])
        checked = ArgumentSpecValidator(spec).validate(raw)
        if checked.error_messages:
            return "lock: %s" % "; ".join(checked.error_messages)
        return check_lock_options(checked.validated_parameters) or checked.validated_parameters

    def _call(self, module_args, task_vars):
        return self._execute_module(module_name=HOST_MODULE, module_args=module_args, task_vars=task_vars)

    @staticmethod
    def _flat(result, out):
        """The module's result with the read's keys at the top level (as the read's own module returns them)."""
        out = dict(out)
        for name in READS:
            if isinstance(out.get(name), dict):
                out.update(out.pop(name))
        out["changed"] = False
        return dict(result, **out)
