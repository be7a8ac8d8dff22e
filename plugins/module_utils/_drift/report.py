# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The drift report's decisions (docs/drift.md): what resource a changed task is about, how a change is
# recorded and merged with others on the same resource, each host's status, the exit code, and the table
# for people. The inference.gpu_host.drift_report callback only feeds Ansible's events in; the report's
# format is the callback's documented one. Plain Python, stdlib only (and ansible's text converter).

import difflib
import json
import re

from ansible.module_utils.common.text.converters import to_text
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import redact, redact_data

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


def short_action(action):
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
    short = short_action(action)
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


def new_host():
    """One host's record while the run goes: items by resource (in first-seen order), errors, violations."""
    return {"items": {}, "order": [], "errors": [], "violations": []}


def change_of(role, task_name, action, sub, redacted, diff_off, max_diff_lines, diff_name):
    """What the report keeps of one changed result: never a no_log task's diff, item or message, never a
    diff of a task with diff: false; a drift check's own finding (a debug msg dict) keeps its summary and
    detail; everything kept is masked where it looks like a credential."""
    change = {"role": role, "task": task_name, "action": action}
    if redacted:
        change["redacted"] = "no_log: diff and details hidden"
        return change
    msg = sub.get("msg")
    label = sub.get("_ansible_item_label", sub.get("item"))
    if label is not None:
        change["item"] = redact(label if isinstance(label, str) else json.dumps(label, sort_keys=True, default=str))
    if diff_off:
        change["redacted"] = "diff: false - no diff recorded"
    else:
        text = render_diff(sub.get("diff"), max_diff_lines, diff_name)
        if text:
            change["diff"] = text
    if isinstance(msg, dict) and msg.get("drift_resource"):
        change["check"] = True
        change["summary"] = redact(to_text(msg.get("summary") or ""))
        if msg.get("detail") not in (None, "", [], {}):
            change["detail"] = redact_data(json.loads(json.dumps(msg["detail"], sort_keys=True, default=str)))
    elif isinstance(msg, str) and short_action(action) in _DEBUG_ACTIONS:
        change["summary"] = redact(msg.strip())
    return change


def record_change(entry, role, task_name, action, args, sub, redacted, diff_off, max_diff_lines):
    """Add one changed result to a host's record (new_host()): several tasks on the same resource become one
    item listing every task, and a specific kind wins over a path or a bare task."""
    kind, name = resource_of(action, args, sub, redacted)
    if name is None:
        name = "%s : %s" % (role or "play", task_name)
    change = change_of(role, task_name, action, sub, redacted, diff_off, max_diff_lines,
                       name if kind == "path" else None)
    item = entry["items"].get(name)
    if item is None:
        item = {"resource": {"kind": kind, "name": name}, "changes": []}
        entry["items"][name] = item
        entry["order"].append(name)
    elif item["resource"]["kind"] in _WEAK_KINDS and kind not in _WEAK_KINDS:
        item["resource"]["kind"] = kind
    item["changes"].append(change)


def host_report(summary, entry):
    """A host's part of the report from Ansible's stats summary and its record: unreachable, failed (a task
    failed, or one changed something outside check mode), drift (an item), else clean."""
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
    return {"status": status, "stats": dict(summary), "drift": drift, "errors": errors,
            "violations": entry["violations"]}


def exit_code_of(totals):
    """The report's exit code from the hosts by status: 3 a host failed or unreachable, 2 drift, 0 clean."""
    if totals["failed"] or totals["unreachable"]:
        return EXIT_HOST_FAILED
    if totals["drift"]:
        return EXIT_DRIFT
    return EXIT_CLEAN


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
