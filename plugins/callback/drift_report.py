# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drift_report
type: aggregate
short_description: Per-host, per-resource drift report of a check-mode run, as JSON and a short table
version_added: 0.1.0
description:
  - Records, per host, every task that reports C(changed) in check mode - the role, the task, the resource it
    manages (a path, a package set, a systemd unit, ...) and its diff - and writes them as JSON for machines
    and as a short table for people when the run ends.
  - Ansible exits 0 from a check run with pending changes (a detailed exit code was declined upstream,
    ansible/ansible#32672), so the report carries its own C(exit_code) - 0 clean, 2 drift found, 3 a host
    unreachable or failed (or a task that changed something outside check mode) - which
    C(scripts/drift_check.py) exits with.
  - Several tasks touching the same resource (a dry render and the real template, a role's note and
    the C(drift) role's own check) become one item listing every task. The resource comes from the result
    (C(dest), C(path), a unit's or an account's C(name), the packages C(apt) would install), else the loop item or
    the task's arguments; a C(debug) note that reports a change is about the first absolute path or systemd unit its
    message names, else about the task itself.
  - "Secrets: a task with C(no_log) contributes its role, task and resource path only (never its diff, item or
    message); a task with C(diff: false) contributes no diff; what looks like a credential is masked in every diff
    and message that is kept: a value after a name ending in TOKEN, SECRET, PASSWORD, API_KEY (C(VLLM_API_KEY=X),
    C(password: X), a JSON entry, quoted or not), after every spelling of a credential flag vLLM's parser takes
    (C(--api-key X), C(--api-key=X), an abbreviation such as C(--api-ke X) or C(--hf-tok=X), C(--api_key), and the
    same in a unit's ExecStart or a JSON argv), C(Authorization: Bearer X) (a header, a curl argument, a JSON entry),
    a bare C(Bearer X), Hugging Face C(hf_...) tokens and the password of a URL. The rule is the vllm_service role's
    own guard on extra arguments (C(module_utils/_common/redaction.py)); quotes around a masked value are kept."
  - Handlers are skipped (in a check run they only say what a restart would do), and so are tasks that did not
    run in check mode unless they report a change, which marks the host as failed, because the check was then
    not read-only.
  - "The C(drift) role (run by C(playbooks/drift.yml)) adds findings that are not task changes (service not active
    or not ready, a drafter config.json written for another vLLM than the one installed, packages differing from
    the lock) as C(ansible.builtin.debug) tasks whose C(msg) is a dict with C(drift_resource), C(drift_kind),
    C(summary) and C(detail); this callback reads those keys."
  - The report's decisions live in C(module_utils/_drift/report.py); the whole drift check, piece by piece, is in
    C(docs/drift.md).
requirements:
  - Enable it with C(callbacks_enabled = inference.gpu_host.drift_report) (or C(ANSIBLE_CALLBACKS_ENABLED)), and run
    the playbook with C(--check --diff).
options:
  json_path:
    description: Write the JSON report to this file (its directory is created). Empty to write none.
    type: str
    default: ""
    env:
      - name: DRIFT_REPORT_JSON
    ini:
      - section: callback_drift_report
        key: json_path
  table_path:
    description: Write the human table to this file as well. Empty to write none.
    type: str
    default: ""
    env:
      - name: DRIFT_REPORT_TABLE
    ini:
      - section: callback_drift_report
        key: table_path
  show_table:
    description: Print the table at the end of the run.
    type: bool
    default: true
    env:
      - name: DRIFT_REPORT_SHOW_TABLE
    ini:
      - section: callback_drift_report
        key: show_table
  max_diff_lines:
    description: Keep at most this many lines of each diff in the report.
    type: int
    default: 200
    env:
      - name: DRIFT_REPORT_MAX_DIFF_LINES
    ini:
      - section: callback_drift_report
        key: max_diff_lines
"""

import datetime
import json
import os

from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.callback import CallbackBase
# What counts as a credential, and how its value is masked, has one home shared with the
# vllm_service role's guard on extra arguments: what the guard refuses (--api-ke, --hf_tok=...)
# is what the report masks. redact is this plugin's name for it (tests import it from here).
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import redact, redact_data  # pylint: disable=unused-import
# The report's decisions (resources, merging, statuses, exit code, table) live in module_utils/_drift/report.py;
# this plugin feeds Ansible's events in (docs/drift.md).
from ansible_collections.inference.gpu_host.plugins.module_utils._drift.report import (
    REPORT_FORMAT, exit_code_of, format_table, host_report, new_host, record_change, short_action,
)

try:
    from ansible.playbook.handler import Handler
except ImportError:  # pragma: no cover - every supported ansible-core has it
    Handler = ()


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "inference.gpu_host.drift_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.playbook = None
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.hosts = {}      # name -> {"items": {key: item}, "order": [key], "errors": [], "violations": []}
        self.plays = []

    # ----------------------------------------------------------------- helpers
    def _host(self, name):
        return self.hosts.setdefault(name, new_host())

    @staticmethod
    def _task_of(result):
        return getattr(result, "task", None) or getattr(result, "_task", None)

    @staticmethod
    def _result_of(result):
        return getattr(result, "result", None) or getattr(result, "_result", None) or {}

    @staticmethod
    def _fields_of(result):
        fields = getattr(result, "task_fields", None)
        if fields is None:
            fields = getattr(result, "_task_fields", None)
        return fields or {}

    @staticmethod
    def _role_of(task):
        role = getattr(task, "_role", None)
        if role is None:
            return None
        try:
            return role.get_name(include_role_fqcn=False)
        except TypeError:
            return role.get_name()

    def _describe(self, result):
        task = self._task_of(result)
        fields = self._fields_of(result)
        role = self._role_of(task)
        name = to_text(fields.get("name") or (task.get_name() if task is not None else "")) or "(unnamed)"
        # A role task's name reads "role : task" in some versions: keep the task part.
        if role and name.startswith(role + " : "):
            name = name[len(role) + 3:]
        return role, name, to_text(getattr(task, "action", "") or fields.get("action") or "")

    # ------------------------------------------------------------ play events
    def v2_playbook_on_start(self, playbook):
        self.playbook = to_text(getattr(playbook, "_file_name", "") or "")

    def v2_playbook_on_play_start(self, play):
        self.plays.append(to_text(play.get_name()))

    # ---------------------------------------------------------- runner events
    def v2_runner_on_ok(self, result):
        task = self._task_of(result)
        if task is None or isinstance(task, Handler) or short_action(task.action) == "meta":
            return
        res = self._result_of(result)
        fields = self._fields_of(result)
        host = result.host.get_name() if hasattr(result, "host") else result._host.get_name()
        role, task_name, action = self._describe(result)
        no_log_task = fields.get("no_log") is True or getattr(task, "no_log", None) is True
        diff_off = fields.get("diff") is False
        check_mode = fields.get("check_mode")
        args = fields.get("args") or {}
        loop = res.get("results") if isinstance(res.get("results"), list) else None
        for sub in (loop if loop is not None else [res]):
            if not isinstance(sub, dict) or not sub.get("changed") or sub.get("skipped"):
                continue
            redacted = bool(no_log_task or sub.get("_ansible_no_log") or sub.get("censored") or res.get("censored"))
            if check_mode is False:
                # The drift check must be read-only: a task forced out of check mode that changed something broke that.
                self._host(host)["violations"].append({
                    "role": role, "task": task_name, "action": action,
                    "msg": "ran outside check mode (check_mode: false) and reported a change; the drift check is not read-only",
                })
                continue
            self._record(host, role, task_name, action, args, sub, redacted, diff_off)

    def _record(self, host, role, task_name, action, args, sub, redacted, diff_off):
        record_change(self._host(host), role, task_name, action, args, sub, redacted, diff_off,
                      self.get_option("max_diff_lines"))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if ignore_errors:
            return
        task = self._task_of(result)
        res = self._result_of(result)
        role, task_name, action = self._describe(result)
        msg = "(hidden: no_log)" if res.get("censored") else redact(to_text(res.get("msg") or res.get("stderr") or "failed"))
        self._host(result.host.get_name() if hasattr(result, "host") else result._host.get_name())["errors"].append({
            "role": role, "task": task_name, "action": action, "msg": msg,
            "handler": isinstance(task, Handler) if task is not None else False,
        })

    def v2_runner_on_unreachable(self, result):
        res = self._result_of(result)
        role, task_name, action = self._describe(result)
        self._host(result.host.get_name() if hasattr(result, "host") else result._host.get_name())["errors"].append({
            "role": role, "task": task_name, "action": action, "unreachable": True,
            "msg": redact(to_text(res.get("msg") or "unreachable")),
        })

    # ----------------------------------------------------------------- report
    def v2_playbook_on_stats(self, stats):
        report = self.build_report(stats)
        table = format_table(report)
        json_path = self.get_option("json_path")
        table_path = self.get_option("table_path")
        for path, content in ((json_path, json.dumps(report, indent=2, sort_keys=True) + "\n"), (table_path, table)):
            if not path:
                continue
            path = os.path.abspath(os.path.expanduser(path))
            directory = os.path.dirname(path)
            if directory and not os.path.isdir(directory):
                os.makedirs(directory, mode=0o750)
            tmp = path + ".tmp"
            # The report can name paths and package versions of every host: not world-readable.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
            with os.fdopen(fd, "w") as handle:
                handle.write(content)
            os.replace(tmp, path)
        if self.get_option("show_table"):
            self._display.display(table)

    def build_report(self, stats):
        cli = getattr(context, "CLIARGS", {}) or {}
        hosts = {}
        names = sorted(set(stats.processed.keys()) | set(self.hosts.keys()))
        totals = {"clean": [], "drift": [], "failed": [], "unreachable": []}
        items_total = 0
        for name in names:
            hosts[name] = host_report(stats.summarize(name), self.hosts.get(name, new_host()))
            totals[hosts[name]["status"]].append(name)
            items_total += len(hosts[name]["drift"])
        exit_code = exit_code_of(totals)
        return {
            "format": REPORT_FORMAT,
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "started": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "playbook": self.playbook,
            "check_mode": bool(cli.get("check")),
            "diff_mode": bool(cli.get("diff")),
            "limit": cli.get("subset"),
            "exit_code": exit_code,
            "summary": dict(totals, items=items_total, hosts=len(names)),
            "hosts": hosts,
        }
