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
    C(playbooks/drift.yml)'s own check) become one item listing every task. The resource comes from the result
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
  - "C(playbooks/drift.yml) adds findings that are not task changes (service not active or not ready, a drafter
    config.json written for another vLLM than the one installed, packages differing from the lock) as
    C(ansible.builtin.debug) tasks whose C(msg) is a dict with C(drift_resource), C(drift_kind), C(summary) and
    C(detail); this callback reads those keys."
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
import difflib
import json
import os
import re

from ansible import context
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.callback import CallbackBase
# What counts as a credential, and how its value is masked, has one home shared with the
# vllm_service role's guard on extra arguments: what the guard refuses (--api-ke, --hf_tok=...)
# is what the report masks. redact is this plugin's name for it (tests import it from here).
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import redact, redact_data

try:
    from ansible.playbook.handler import Handler
except ImportError:  # pragma: no cover - every supported ansible-core has it
    Handler = ()

REPORT_FORMAT = 1
EXIT_CLEAN = 0
EXIT_DRIFT = 2
EXIT_HOST_FAILED = 3

# Modules whose resource is a file, a unit, packages, an account.
_PATH_ACTIONS = frozenset((
    "copy", "template", "file", "lineinfile", "blockinfile", "replace", "get_url", "unarchive", "assemble",
    "ini_file", "xml", "archive", "synchronize", "dflash_drafter_config", "proxmox_lxc_gpu_conf", "authorized_key",
))
_UNIT_ACTIONS = frozenset(("systemd", "systemd_service", "service", "sysvinit"))
_PACKAGE_ACTIONS = frozenset(("apt", "package", "dnf", "dnf5", "yum", "pip", "apt_repository", "apt_key", "deb822_repository"))
_ACCOUNT_ACTIONS = {"user": "user", "group": "group"}
_COMMAND_ACTIONS = frozenset(("command", "shell", "raw", "script", "expect"))
_DEBUG_ACTIONS = frozenset(("debug",))

# Kinds a drift item can have; a specific kind wins over a path or a bare task when items merge.
_WEAK_KINDS = ("path", "task")

_ABS_PATH = re.compile(r"(?<![\w.:/-])(/(?:[\w.@+-]+/)*[\w.@+-]+)")
_UNIT_NAME = re.compile(r"(?<![\w/.@-])([\w@.-]+\.(?:service|timer|socket|mount|path))\b")


def _short_action(action):
    return (action or "").rsplit(".", 1)[-1]


def _as_text_block(value):
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"
    return to_text(value, errors="surrogate_or_replace")


def _header(header, name, default):
    """A diff header: the resource, never the controller's rendered temp file (template's after_header)."""
    header = to_text(header or "")
    if not header or "/.ansible/tmp/" in header or header.startswith(("/tmp/", "/var/tmp/")):
        return name or default
    return header


def render_diff(diff, max_lines, name=None):
    """Ansible's diff (a dict or a list of dicts) as unified diff text; '' when it says nothing."""
    if not diff:
        return ""
    parts = diff if isinstance(diff, list) else [diff]
    out = []
    for part in parts:
        if not isinstance(part, dict):
            out.append(_as_text_block(part))
            continue
        if part.get("prepared"):
            out.append(_as_text_block(part["prepared"]))
        if "before" in part or "after" in part:
            before = _as_text_block(part.get("before")).splitlines(True)
            after = _as_text_block(part.get("after")).splitlines(True)
            out.extend(difflib.unified_diff(before, after, fromfile=_header(part.get("before_header"), name, "before"),
                                            tofile=_header(part.get("after_header"), name, "after")))
    lines = "".join(line if line.endswith("\n") else line + "\n" for line in out).splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["... (%d more lines)" % (len(lines) - max_lines)]
    return redact("\n".join(lines))


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [to_text(v) for v in value]
    return [v.strip() for v in to_text(value).split(",") if v.strip()]


def resource_of(action, args, res, redacted):
    """(kind, name) of what a changed result is about.

    From the result first (modules report dest/path/name), then from the loop
    item, then from the task's (rendered) arguments; a debug note is about the
    first absolute path or systemd unit its message names; else the resource is
    the task itself (kind "task", name None: the caller fills it).
    """
    short = _short_action(action)
    args = args or {}
    msg = res.get("msg")
    if short in _DEBUG_ACTIONS and isinstance(msg, dict) and msg.get("drift_resource"):
        return to_text(msg.get("drift_kind") or "path"), to_text(msg["drift_resource"])
    if short in _UNIT_ACTIONS:
        name = to_text(res.get("name") or args.get("name") or "")
        if name:
            return "unit", name if "." in name else name + ".service"
        if res.get("changed") and (args.get("daemon_reload") or args.get("daemon_reexec")):
            return "unit", "systemd manager (daemon-reload)"
    if short in _PACKAGE_ACTIONS:
        names = []
        diff = res.get("diff")
        prepared = diff.get("prepared") if isinstance(diff, dict) else None
        if prepared and not redacted:
            names = [line.split()[1] for line in to_text(prepared).splitlines() if line.startswith(("Inst ", "Remv ")) and len(line.split()) > 1]
        names = names or _as_list(args.get("name") or args.get("pkg") or args.get("package"))
        return "package", ", ".join(sorted(set(names))) or short
    if short in _ACCOUNT_ACTIONS:
        name = to_text(res.get("name") or args.get("name") or "")
        if name:
            return _ACCOUNT_ACTIONS[short], name
    item = res.get("item") if not redacted else None
    for key in ("dest", "path"):
        candidates = [res.get(key) if not redacted else None,
                      item.get(key) if isinstance(item, dict) else None,
                      args.get(key)]
        for value in candidates:
            # Loop arguments arrive unrendered ("{{ item.dest }}"): never a resource name.
            if isinstance(value, str) and value and "{{" not in value and "{%" not in value:
                return "path", value
    if isinstance(item, str) and item.startswith("/") and short in _PATH_ACTIONS:
        return "path", item
    if short in _PATH_ACTIONS:
        diff = res.get("diff")
        header = _header(diff.get("before_header"), None, "") if isinstance(diff, dict) else ""
        if header.startswith("/"):
            return "path", header
    if short in _COMMAND_ACTIONS:
        for key in ("creates", "removes"):
            if args.get(key):
                return "path", to_text(args[key])
        return "task", None
    if short in _DEBUG_ACTIONS and isinstance(msg, str) and not redacted:
        # A role's "would ..." note: the first path or unit it names.
        found = [(m.start(), "path", m.group(1)) for m in [_ABS_PATH.search(msg)] if m]
        found += [(m.start(), "unit", m.group(1)) for m in [_UNIT_NAME.search(msg)] if m]
        if found:
            _pos, kind, name = min(found)
            return kind, name
    return "task", None


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
        return self.hosts.setdefault(name, {"items": {}, "order": [], "errors": [], "violations": []})

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
        if task is None or isinstance(task, Handler) or _short_action(task.action) == "meta":
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
        kind, name = resource_of(action, args, sub, redacted)
        if name is None:
            name = "%s : %s" % (role or "play", task_name)
        change = {"role": role, "task": task_name, "action": action}
        msg = sub.get("msg")
        if redacted:
            change["redacted"] = "no_log: diff and details hidden"
        else:
            label = sub.get("_ansible_item_label", sub.get("item"))
            if label is not None:
                change["item"] = redact(label if isinstance(label, str) else json.dumps(label, sort_keys=True, default=str))
            if diff_off:
                change["redacted"] = "diff: false - no diff recorded"
            else:
                text = render_diff(sub.get("diff"), self.get_option("max_diff_lines"), name if kind == "path" else None)
                if text:
                    change["diff"] = text
            if isinstance(msg, dict) and msg.get("drift_resource"):
                change["check"] = True
                change["summary"] = redact(to_text(msg.get("summary") or ""))
                if msg.get("detail") not in (None, "", [], {}):
                    change["detail"] = redact_data(json.loads(json.dumps(msg["detail"], sort_keys=True, default=str)))
            elif isinstance(msg, str) and _short_action(action) in _DEBUG_ACTIONS:
                change["summary"] = redact(msg.strip())
        entry = self._host(host)
        key = name
        item = entry["items"].get(key)
        if item is None:
            item = {"resource": {"kind": kind, "name": name}, "changes": []}
            entry["items"][key] = item
            entry["order"].append(key)
        elif item["resource"]["kind"] in _WEAK_KINDS and kind not in _WEAK_KINDS:
            item["resource"]["kind"] = kind
        item["changes"].append(change)

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
            summary = stats.summarize(name)
            entry = self.hosts.get(name, {"items": {}, "order": [], "errors": [], "violations": []})
            drift = [entry["items"][key] for key in entry["order"]]
            errors = [e for e in entry["errors"] if e.get("unreachable")] if summary.get("unreachable") else []
            if summary.get("failures"):
                errors = [e for e in entry["errors"] if not e.get("unreachable")]
            if summary.get("unreachable"):
                status = "unreachable"
            elif summary.get("failures") or entry["violations"]:
                status = "failed"
            elif drift:
                status = "drift"
            else:
                status = "clean"
            totals[status].append(name)
            items_total += len(drift)
            hosts[name] = {"status": status, "stats": dict(summary), "drift": drift, "errors": errors,
                           "violations": entry["violations"]}
        if totals["failed"] or totals["unreachable"]:
            exit_code = EXIT_HOST_FAILED
        elif totals["drift"]:
            exit_code = EXIT_DRIFT
        else:
            exit_code = EXIT_CLEAN
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


def _diff_line(change):
    changed = [line for line in (change.get("diff") or "").splitlines()
               if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))]
    if not changed:
        return ""
    added = sum(1 for line in changed if line.startswith("+"))
    removed = len(changed) - added
    if not removed:
        return "new content (+%d lines)" % added
    first = next((line for line in changed if line.startswith("-")), changed[0])
    return "+%d/-%d: %s" % (added, removed, first)


def _detail(changes):
    """The most telling line of an item: a drift check's summary, else the first changed diff line, else a note."""
    for pick in (lambda c: c.get("summary") if c.get("check") else "", _diff_line,
                 lambda c: c.get("summary") or "", lambda c: c.get("redacted") or ""):
        for change in changes:
            text = pick(change)
            if text:
                return text.splitlines()[0]
    return ""


def _cut(text, width):
    text = to_text(text).replace("\t", " ")
    return text if len(text) <= width else text[:width - 3] + "..."


def format_table(report):
    """A short table for people: one row per drifted resource, one per failed host."""
    rows = []
    for host in sorted(report["hosts"]):
        data = report["hosts"][host]
        for item in data["drift"]:
            res = item["resource"]
            who = []
            for change in item["changes"]:
                label = "%s: %s" % (change["role"] or "play", change["task"])
                if label not in who:
                    who.append(label)
            rows.append((host, "%s %s" % (res["kind"], res["name"]), who[0] + (" (+%d)" % (len(who) - 1) if len(who) > 1 else ""),
                         _detail(item["changes"])))
        for err in data["errors"] + data["violations"]:
            rows.append((host, "UNREACHABLE" if err.get("unreachable") else "FAILED",
                         "%s: %s" % (err.get("role") or "play", err.get("task")), err.get("msg") or ""))
    out = []
    if rows:
        widths = [max(len(header), min(cap, max(len(r[i]) for r in rows)))
                  for i, (header, cap) in enumerate((("HOST", 24), ("RESOURCE", 60), ("CHANGED BY", 44)))]
        fmt = "%-{0}s  %-{1}s  %-{2}s  %s".format(*widths)
        out.append((fmt % ("HOST", "RESOURCE", "CHANGED BY", "DETAIL")).rstrip())
        for row in rows:
            out.append((fmt % (_cut(row[0], widths[0]), _cut(row[1], widths[1]), _cut(row[2], widths[2]), _cut(row[3], 90))).rstrip())
    s = report["summary"]
    verdict = {EXIT_CLEAN: "clean", EXIT_DRIFT: "drift found", EXIT_HOST_FAILED: "host unreachable or failed"}[report["exit_code"]]
    out.append("drift: %d item(s) on %d host(s); clean %d, drifted %d, failed %d, unreachable %d -> %s (exit %d)%s" % (
        s["items"], s["hosts"], len(s["clean"]), len(s["drift"]), len(s["failed"]), len(s["unreachable"]),
        verdict, report["exit_code"], "" if report["check_mode"] else "  [NOT a check-mode run]"))
    return "\n".join(out) + "\n"
