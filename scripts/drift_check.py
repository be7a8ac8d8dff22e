#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Run the drift check (playbooks/drift.yml, forced --check --diff) and exit with what it found.

  0  clean: every expected host was checked and matches what the roles would make of it
  2  drift found: the table lists each drifted resource (path, packages, unit) per host
  3  a host was unreachable or failed (its report is incomplete), an expected host was
     not checked (no task ran on it), or a task changed something outside check mode
  4  nothing to check: an inventory source does not exist or does not parse, no host
     of the inventory is in the playbook's hosts (a group typo), or --limit matches none
     of them; nothing runs, the report says which and why
  1  the check itself could not run (bad arguments, a playbook error, no report)

Every report states how many hosts were expected (the inventory's hosts in the
playbook's host pattern, after --limit) and how many were checked (clean or drifted):
a check that reached fewer hosts than expected is never clean.

Information that is never a finding (the drift role's last recorded benchmark figures and
live acceptance length, read without sending load) goes under hosts.<host>.info in the
JSON report and as "<host>  INFO benchmark  <summary>" lines in the table; it changes no
exit code.

Ansible exits 0 from a check run with pending changes (ansible/ansible#32672), so the
exit code comes from the inference.gpu_host.drift_report callback's report.

The playbook runs through ansible-runner (requirements-dev.in; on a control node
`pip install ansible-runner` into Ansible's Python). What is kept, and how long:
  reports    with --report-dir: latest.txt (the table, for people), latest.json (for
             machines), and each run's drift-<UTC time>.json/.txt, the last --keep-reports
  artifacts  ansible-runner's record of each run (output, events, exit status) under
             <private-data-dir>/artifacts/<ident>, the last --rotate-artifacts: rotated
             by ansible-runner itself (rotate_artifacts)

Examples:
  scripts/drift_check.py -i ct129 --json /tmp/drift.json
  scripts/drift_check.py -i ct129 --report-dir /var/lib/inference-gpu-host/drift \\
      --notify-command '/usr/local/bin/page-oncall' --webhook-url-env DRIFT_WEBHOOK_URL

Run it with the Python that has ansible-core and ansible-runner: that interpreter's
bin directory is put first on PATH so the same ansible-playbook runs.
"""

from __future__ import absolute_import, division, print_function

import argparse
import contextlib
import datetime
import fcntl
import json
import os
import shlex
import subprocess
import sys
import tempfile
import urllib.request

EXIT_CLEAN, EXIT_ERROR, EXIT_DRIFT, EXIT_HOST_FAILED, EXIT_NOTHING_CHECKED = 0, 1, 2, 3, 4
# The hosts playbooks/drift.yml's plays target (its first play's pattern; a unit test keeps them equal):
# what a run of the shipped playbook is expected to check, before --limit.
DRIFT_HOSTS = "proxmox_nodes:inference_hosts"
CALLBACK = "inference.gpu_host.drift_report"
# A task's msg dict with this key is information for the report, never a finding (roles/drift/tasks/benchmark.yml).
INFO_KEY = "drift_info"
PLAYBOOK_FQCN = "inference.gpu_host.drift"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(msg):
    sys.stderr.write("drift_check: %s\n" % msg)
    sys.stderr.flush()


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a bad argument, which here means "drift found" (and a scheduled check's
    success where drift is not a failure): a bad argument is exit 1, the check could not run."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, "%s: error: %s\n" % (self.prog, message))


def positive_seconds(text):
    """--timeout: a whole number of seconds > 0 (ansible-runner reads 0 as no limit: say that by leaving it out)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError("expected a whole number of seconds greater than 0, got %r "
                                         "(leave --timeout out for no limit)" % text)
    return value


def parse_args(argv):
    p = _Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-i", "--inventory", action="append", default=[], help="inventory source (repeatable)")
    p.add_argument("-l", "--limit", help="host pattern, as ansible-playbook --limit")
    p.add_argument("-t", "--tags", help="only these roles/checks (e.g. drafter,vllm_service)")
    p.add_argument("-e", "--extra-vars", action="append", default=[], help="as ansible-playbook -e (repeatable)")
    p.add_argument("--vault-id", action="append", default=[], help="as ansible-playbook --vault-id (repeatable)")
    p.add_argument("--vault-password-file", help="as ansible-playbook --vault-password-file")
    p.add_argument("--playbook", help="drift playbook: a path or %s (default: this checkout's playbooks/drift.yml, "
                   "else the installed collection's)" % PLAYBOOK_FQCN)
    p.add_argument("--json", dest="json_path", help="write the JSON report here")
    p.add_argument("--table", dest="table_path", help="write the human table here as well")
    p.add_argument("--report-dir", help="keep latest.txt / latest.json here, plus each run's timestamped report")
    p.add_argument("--keep-reports", type=int, default=30, help="timestamped reports kept in --report-dir (default 30)")
    # Removed with the plain ansible-playbook path: say so rather than "unrecognized arguments".
    p.add_argument("--runner", help=argparse.SUPPRESS)
    p.add_argument("--private-data-dir", help="ansible-runner's private data dir (default: <report-dir>/runner, "
                   "else ~/.cache/inference.gpu_host/drift-runner)")
    p.add_argument("--rotate-artifacts", type=int, default=10,
                   help="ansible-runner artifact dirs kept in <private-data-dir>/artifacts (default 10)")
    p.add_argument("--notify-command", help="run this (shell words) when the outcome is in --notify-on; it gets the table "
                   "on stdin and DRIFT_EXIT_CODE, DRIFT_REPORT_JSON, DRIFT_SUMMARY in its environment")
    p.add_argument("--webhook-url-env", help="name of an environment variable holding a webhook URL to POST the summary "
                   "to (an env var, so the URL and its token stay out of argv and unit files)")
    p.add_argument("--notify-on", default="drift,failed", help="outcomes that notify: drift, failed, clean (default drift,failed)")
    p.add_argument("--private-env", action="append", default=[], metavar="NAME",
                   help="an environment variable only the notify command gets, never Ansible (ansible-runner writes "
                   "Ansible's whole environment to its artifacts); the --webhook-url-env variable always is one")
    p.add_argument("--timeout", type=positive_seconds, default=None,
                   help="stop the run after this many seconds, a whole number > 0 (default: no limit)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not stream Ansible's output")
    p.add_argument("-v", "--verbose", action="count", default=0, help="passed to Ansible")
    args = p.parse_args(argv)
    if args.runner is not None:
        p.error("--runner was removed: the drift check always runs through ansible-runner "
                "(drop --runner %s)" % args.runner)
    if not args.inventory:
        p.error("give at least one inventory (-i)")
    for part in args.notify_on.split(","):
        if part.strip() and part.strip() not in ("drift", "failed", "clean"):
            p.error("--notify-on takes drift, failed, clean (got %r)" % part)
    return args


def default_playbook():
    local = os.path.join(ROOT, "playbooks", "drift.yml")
    return local if os.path.isfile(local) else PLAYBOOK_FQCN


def abs_inventory(source):
    # A host list ("a,b,") stays as it is; paths become absolute (runner and ansible may change directory).
    if "," in source and not os.path.exists(source):
        return source
    return os.path.abspath(os.path.expanduser(source))


def playbook_pattern(playbook):
    """The host patterns of the playbook's own plays, ", "-joined for people (each is resolved on its own: a
    "!group" of one play excludes nothing from another); its imports are not followed: drift.yml's first play
    names every group the roles run on. None when it cannot be known here (templated, or not a readable
    file): Ansible alone decides what runs, and the hosts the run reaches are the expected ones."""
    if not os.path.isfile(playbook):
        return DRIFT_HOSTS if playbook == PLAYBOOK_FQCN else None
    try:
        import yaml  # pylint: disable=import-outside-toplevel  # ansible-core's own dependency
        with open(playbook, encoding="utf-8") as handle:
            plays = yaml.safe_load(handle)
    except Exception:  # pylint: disable=broad-except  # not YAML, unreadable: Ansible will say why
        return None
    patterns = []
    for play in plays if isinstance(plays, list) else []:
        hosts = play.get("hosts") if isinstance(play, dict) else None
        if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts):
            hosts = ":".join(hosts)
        if hosts is None and isinstance(play, dict) and any(k.rsplit(".", 1)[-1] == "import_playbook" for k in play):
            continue
        if not isinstance(hosts, str) or not hosts.strip() or "{{" in hosts or "{%" in hosts:
            return None
        if hosts.strip() not in patterns:
            patterns.append(hosts.strip())
    return ", ".join(patterns) or None


def _patterns(pattern):
    return [p.strip() for p in pattern.split(", ") if p.strip()]


def _pattern_names(pattern):
    """The group/host names of a host pattern ("a:&b:!c" -> a, b, c), for hints."""
    names = []
    for part in (pattern or "").replace(",", ":").split(":"):
        part = part.strip().lstrip("!&")
        if part and not any(ch in part for ch in "*?[~@"):
            names.append(part)
    return names


def _hint(name, known):
    import difflib  # pylint: disable=import-outside-toplevel
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.7)
    return " (did you mean %s?)" % close[0] if close else ""


def expected_hosts(inventories, pattern, limit=None, vault_ids=(), vault_password_files=()):
    """What a run of ``pattern`` over ``inventories`` with ``limit`` is expected to check, read in-process with
    ansible-core's own InventoryManager (and this checkout's ansible.cfg), before Ansible runs.

    Returns (hosts, problem): the sorted host names, and None or a sentence saying why nothing can be checked:
    a source that does not exist or that no inventory plugin parses (Ansible only warns and goes on without it,
    so a broken inventory would be a clean check of nothing), a pattern that matches no host (a group typo in the
    inventory), a --limit that matches none of them. Vault secrets come only from password files here (a prompt
    is never opened twice); a source that needs another secret to parse is reported by the run itself.
    """
    from ansible.utils.display import Display  # pylint: disable=import-outside-toplevel

    display = Display()
    failures = []

    def _failed(msg, exception=None, *args, **kwargs):  # pylint: disable=unused-argument,keyword-arg-before-vararg
        failures.append("%s %s" % (str(msg).strip(), _reason(exception) if exception is not None else ""))

    # Ansible's warnings about the sources become this function's problem sentence (the run would repeat them).
    display.warning = lambda msg, *args, **kwargs: None
    display.error_as_warning = _failed
    try:
        inventory, problem = _read_inventory(inventories, vault_ids, vault_password_files, failures)
        if problem:
            return [], problem
        if pattern is None:
            return None, None
        every, problem = _pattern_hosts(inventory, inventories, pattern)
        if problem or not limit:
            return every, problem
        return _limited_hosts(inventory, pattern, limit, every)
    finally:
        for name in ("warning", "error_as_warning"):
            display.__dict__.pop(name, None)


def _read_inventory(inventories, vault_ids, vault_password_files, failures):
    """(inventory, problem): the inventory as Ansible reads it, and None or why a source cannot be used (it does
    not exist, no plugin parses it - with the reasons Ansible gave, collected in ``failures`` - or one of its
    group_vars/host_vars files does not parse)."""
    # pylint: disable=import-outside-toplevel
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    # pylint: enable=import-outside-toplevel

    class _Inventory(InventoryManager):
        """InventoryManager that remembers each source no plugin parsed, with the plugins' reasons."""

        def __init__(self, *args, **kwargs):
            self.unparsed = []
            super().__init__(*args, **kwargs)

        def parse_source(self, source, cache=False):
            start = len(failures)
            parsed = super().parse_source(source, cache=cache)
            if not parsed and not any(source == s or s.startswith(source.rstrip(os.sep) + os.sep) for s, _r in self.unparsed):
                self.unparsed.append((source, failures[start:]))
            return parsed

    init_plugin_loader()
    loader = DataLoader()
    _load_vault_secrets(loader, vault_ids, vault_password_files)
    try:
        inventory = _Inventory(loader=loader, sources=list(inventories))
    except AnsibleError as exc:  # INVENTORY_UNPARSED_IS_FAILED / ANY_UNPARSED_IS_FAILED set in ansible.cfg
        return None, "the inventory cannot be read: %s" % str(exc).strip().splitlines()[0]
    broken = [_unparsed_source(source, reasons) for source, reasons in inventory.unparsed]
    broken += _unreadable_vars_files(loader, inventories, inventory)
    return inventory, "; ".join(broken) or None


def _load_vault_secrets(loader, vault_ids, vault_password_files):
    """Vault secrets from password files only (never a prompt: the run opens its own)."""
    # pylint: disable=import-outside-toplevel
    from ansible.errors import AnsibleError
    # pylint: enable=import-outside-toplevel
    secrets = [v for v in vault_ids if not v.endswith(("@prompt", "@prompt_ask_vault_pass")) and v != "prompt"]
    if not secrets and not vault_password_files:
        return
    try:
        from ansible.cli import CLI  # pylint: disable=import-outside-toplevel
        CLI.setup_vault_secrets(loader, secrets, list(vault_password_files), ask_vault_pass=False,
                                auto_prompt=False, initialize_context=False)
    except (AnsibleError, OSError):
        pass  # the run reports a bad password file itself


def _unparsed_source(source, reasons):
    """Why an inventory source no plugin parsed cannot be used: missing, an empty directory, or the reason of the
    plugin its name asks for (yaml for .yml/.yaml/.json, else ini)."""
    if "," not in source and not os.path.lexists(source):
        return "inventory source %s does not exist" % source
    if os.path.isdir(source):
        return "inventory source %s holds no inventory file Ansible can parse" % source
    ext = os.path.splitext(source)[1]
    wanted = "'yaml'" if ext in (".yml", ".yaml", ".json") else "'ini'"
    reason = next((r for r in reasons if wanted in r), reasons[0] if reasons else "no inventory plugin accepts it")
    return "inventory source %s does not parse: %s" % (source, reason)


def _pattern_hosts(inventory, inventories, pattern):
    """(hosts, problem): the sorted hosts of the playbook's patterns before --limit, or why there are none."""
    every = []
    for one in _patterns(pattern):
        every += [h.name for h in inventory.get_hosts(one, ignore_limits=True) if h.name not in every]
    if every:
        return sorted(every), None
    groups = set(inventory.groups) - {"all", "ungrouped"}
    # A missing group named like one the inventory has is a typo on one side or the other.
    typos = ["%s is not a group there%s" % (n, _hint(n, groups)) for n in _pattern_names(pattern)
             if n not in groups and n not in inventory.hosts and _hint(n, groups)]
    return [], "no host of %s is in the playbook's hosts %s%s; the inventory's groups: %s" % (
        ", ".join(inventories), pattern, ": " + "; ".join(typos) if typos else "",
        ", ".join(sorted(groups)) or "none")


def _limited_hosts(inventory, pattern, limit, every):
    """(hosts, problem): the sorted hosts of the patterns within --limit, or why --limit matches none."""
    inventory.subset(limit)
    hosts = []
    for one in _patterns(pattern):
        hosts += [h.name for h in inventory.get_hosts(one) if h.name not in hosts]
    if hosts:
        return sorted(hosts), None
    known = set(inventory.groups) | set(inventory.hosts)
    hints = "".join(_hint(n, known) for n in _pattern_names(limit) if n not in known)
    return [], "--limit %s matches none of the %d host(s) in %s (%s)%s" % (
        limit, len(every), pattern, ", ".join(sorted(every)[:10]) + (", ..." if len(every) > 10 else ""), hints)


def _reason(exc):
    """An Ansible error's first line, with the file:line:column of the YAML error behind it when it says one."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    seen = 0
    while exc is not None and seen < 5:
        where = str(getattr(exc, "obj", "") or "")
        if where and not where.startswith("<") and where.rsplit(":", 2)[-1].isdigit():
            return "%s (at %s)" % (text, where)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return text


def _unreadable_vars_files(loader, inventories, inventory):
    """group_vars/host_vars files next to the sources, of the inventory's groups and hosts, that Ansible's own
    loader cannot read (a YAML error): the run would stop at its first play with no report. Vault-encrypted
    files are left to the run (no secret here)."""
    # pylint: disable=import-outside-toplevel
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import is_encrypted_file
    # pylint: enable=import-outside-toplevel
    names = {"group_vars": set(inventory.groups), "host_vars": set(inventory.hosts)}
    found = []
    for source in inventories:
        if "," in source and not os.path.exists(source):
            continue
        base = source if os.path.isdir(source) else os.path.dirname(source)
        for sub in ("group_vars", "host_vars"):
            top = os.path.join(base, sub)
            entries = sorted(os.listdir(top)) if os.path.isdir(top) else []
            for entry in entries:
                stem, ext = os.path.splitext(entry)
                full = os.path.join(top, entry)
                if entry.startswith(".") or (entry if os.path.isdir(full) else stem) not in names[sub]:
                    continue  # a file Ansible never reads
                paths = [full] if not os.path.isdir(full) else [
                    os.path.join(d, f) for d, _s, fs in os.walk(full) for f in sorted(fs) if not f.startswith(".")]
                for path in paths:
                    if os.path.splitext(path)[1] not in ("", ".yml", ".yaml", ".json") or not os.path.isfile(path):
                        continue
                    try:
                        with open(path, "rb") as handle:
                            if is_encrypted_file(handle):
                                continue
                        loader.load_from_file(path, cache="none")
                    except (AnsibleError, OSError, ValueError) as exc:
                        found.append("inventory source %s does not parse: %s: %s"
                                     % (source, os.path.relpath(path, base), _reason(exc)))
    return found


def reconcile(report, expected):
    """Set the report's expected/checked counts and fold hosts the run never reached into its verdict.

    ``expected``: the hosts the run should check (None: unknown, then the hosts the run saw). A host expected
    but not in the run's report is "not_checked", which is not clean (exit 3); a report with no host at all
    is exit 4 (nothing was checked). Returns the exit code.
    """
    hosts = report.setdefault("hosts", {})
    summary = report.setdefault("summary", {})
    wanted = sorted(hosts) if expected is None else sorted(expected)
    missing = [h for h in wanted if h not in hosts]
    for name in missing:
        hosts[name] = {"status": "not_checked", "stats": {}, "drift": [], "violations": [], "errors": [{
            "role": None, "task": None, "action": None, "not_checked": True,
            "msg": "expected (in the playbook's hosts and --limit) but no task ran on it"}]}
    checked = sorted(h for h, d in hosts.items() if d.get("status") in ("clean", "drift"))
    summary["not_checked"] = missing
    summary["expected"] = len(wanted)
    summary["checked"] = len(checked)
    summary["hosts"] = len(hosts)
    code = report.get("exit_code", EXIT_ERROR)
    if not hosts:
        code = EXIT_NOTHING_CHECKED
        report.setdefault("problem", "the run checked no host: the playbook's hosts and --limit matched none")
    elif missing and code in (EXIT_CLEAN, EXIT_DRIFT):
        code = EXIT_HOST_FAILED
    report["exit_code"] = code
    return code


VERDICTS = {EXIT_CLEAN: "clean", EXIT_DRIFT: "drift found", EXIT_HOST_FAILED: "host unreachable, failed or not checked",
            EXIT_NOTHING_CHECKED: "NOTHING CHECKED", EXIT_ERROR: "the check could not run"}


def summary_table_line(report):
    """The table's last line: always how many hosts were expected and how many were checked."""
    s = report["summary"]
    return "drift: %d item(s); %d host(s) expected, %d checked (clean %d, drifted %d); failed %d, unreachable %d, " \
        "not checked %d -> %s (exit %d)" % (
            s.get("items", 0), s["expected"], s["checked"], len(s.get("clean", [])), len(s.get("drift", [])),
            len(s.get("failed", [])), len(s.get("unreachable", [])), len(s.get("not_checked", [])),
            VERDICTS.get(report["exit_code"], "failed"), report["exit_code"])


def retable(table, report):
    """The callback's table with the information lines (info_lines) and rows for the hosts never reached, its
    summary line replaced by ours."""
    lines = [line for line in table.splitlines() if not line.startswith("drift: ")]
    lines += [line for line in info_lines(report) if line not in lines]
    lines += ["%s  NOT CHECKED  %s" % (h, report["hosts"][h]["errors"][0]["msg"]) for h in report["summary"]["not_checked"]]
    if report.get("problem"):
        lines.append("NOTHING CHECKED: %s" % report["problem"])
    return "\n".join(lines + [summary_table_line(report)]) + "\n"


def nothing_checked_report(problem, inventories, limit, pattern):
    """The report of a check that could not check anything (exit 4): nothing ran."""
    return {
        "format": 1, "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "check_mode": None, "exit_code": EXIT_NOTHING_CHECKED, "problem": problem, "inventories": inventories,
        "limit": limit, "expected": {"pattern": pattern, "limit": limit, "hosts": []}, "hosts": {},
        "summary": {"items": 0, "hosts": 0, "expected": 0, "checked": 0, "clean": [], "drift": [], "failed": [],
                    "unreachable": [], "not_checked": []},
        "runner": {"mode": "not run", "reason": problem},
    }


def ansible_env(json_path, table_path):
    """What Ansible's environment gets on top of this process's."""
    env = {}
    enabled = [c.strip() for c in os.environ.get("ANSIBLE_CALLBACKS_ENABLED", "").split(",") if c.strip()]
    if os.environ.get("ANSIBLE_CALLBACKS_ENABLED") is None:
        # Keep what ansible.cfg enables (profile_tasks ...): the variable would replace it.
        enabled = configured_callbacks()
    if CALLBACK not in enabled:
        enabled.append(CALLBACK)
    env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(enabled)
    env["DRIFT_REPORT_JSON"] = json_path
    env["DRIFT_REPORT_TABLE"] = table_path
    env["DRIFT_REPORT_SHOW_TABLE"] = "false"
    # From a checkout, this checkout's collection must win over an installed copy.
    clone = os.path.join(ROOT, ".collections")
    if os.path.isdir(os.path.join(clone, "ansible_collections", "inference", "gpu_host")):
        current = os.environ.get("ANSIBLE_COLLECTIONS_PATH")
        if current is None:
            current = "~/.ansible/collections:/usr/share/ansible/collections"
        if clone not in current.split(os.pathsep):
            env["ANSIBLE_COLLECTIONS_PATH"] = os.pathsep.join([clone, current])
    # The same interpreter's ansible-playbook (a venv, a system Python ...).
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")])
    return env


def configured_callbacks():
    """The callbacks ansible.cfg enables, read in this process (ansible-config would start a second Python)."""
    try:
        from ansible.config.manager import ConfigManager  # pylint: disable=import-outside-toplevel
        value = ConfigManager().get_config_value("CALLBACKS_ENABLED") or []
    except Exception:  # pylint: disable=broad-except  # no ansible-core here, or a config it cannot read
        return []
    return [v.strip() for v in (value if isinstance(value, list) else str(value).split(",")) if v.strip()]


def ansible_cli_args(args):
    """Options passed to ansible-playbook; --check --diff always."""
    out = ["--check", "--diff"]
    if args.limit:
        out += ["--limit", args.limit]
    if args.tags:
        out += ["--tags", args.tags]
    for extra in args.extra_vars:
        out += ["-e", extra]
    for vault_id in args.vault_id:
        out += ["--vault-id", vault_id]
    if args.vault_password_file:
        out += ["--vault-password-file", os.path.abspath(os.path.expanduser(args.vault_password_file))]
    if args.verbose:
        out.append("-" + "v" * args.verbose)
    return out


def import_runner():
    """The ansible_runner module, or None when this interpreter does not have it."""
    try:
        import ansible_runner  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return ansible_runner


def run_with_runner(ansible_runner, args, playbook, inventories, env, private_data_dir):
    """Run the playbook through ansible-runner; (Ansible's rc, what the report records of the run)."""
    # Artifacts name hosts, paths and versions: private to the account that runs the check.
    os.makedirs(private_data_dir, mode=0o700, exist_ok=True)
    ident = datetime.datetime.now(datetime.timezone.utc).strftime("drift-%Y%m%dT%H%M%S.%fZ")
    runner = ansible_runner.run(
        private_data_dir=private_data_dir,
        project_dir=os.getcwd(),
        playbook=playbook,
        inventory=inventories,
        cmdline=" ".join(shlex.quote(a) for a in ansible_cli_args(args)),
        envvars=env,
        ident=ident,
        # ansible-runner keeps the last N artifact directories itself.
        rotate_artifacts=args.rotate_artifacts,
        quiet=args.quiet,
        # Nothing of this run (vault password paths, webhook variables) is written under env/.
        suppress_env_files=True,
        # No fact cache of ansible-runner's in each run's artifacts (facts gathered every check): Ansible's own,
        # as ansible.cfg sets it, shared with the converges.
        fact_cache_type=None,
        timeout=args.timeout or None,
    )
    log("ansible-runner %s (rc %s), artifacts in %s" % (runner.status, runner.rc, runner.config.artifact_dir))
    if runner.status == "timeout":
        log("the run went past --timeout %d s and was stopped" % args.timeout)
    try:
        info = collect_info(runner.events)
    except (OSError, ValueError) as exc:  # no job_events to read: the report goes without the information
        log("could not read the run's events for the information lines: %s" % exc)
        info = {}
    return runner.rc, {"mode": "ansible-runner", "status": runner.status, "ansible_rc": runner.rc,
                       "artifact_dir": runner.config.artifact_dir}, info


def collect_info(events):
    """{host: [msg, ...]}: the run's information (never a finding), in order - each task that ran ok whose msg is
    a dict with INFO_KEY (the drift role's recorded benchmark figures and live acceptance, docs/drift.md)."""
    found = {}
    for event in events or ():
        if not isinstance(event, dict) or event.get("event") != "runner_on_ok":
            continue
        data = event.get("event_data") or {}
        msg = (data.get("res") or {}).get("msg") if isinstance(data.get("res"), dict) else None
        if isinstance(msg, dict) and msg.get(INFO_KEY) and isinstance(data.get("host"), str):
            found.setdefault(data["host"], []).append(msg)
    return found


def add_info(report, found):
    """Each checked host's information under hosts.<host>.info (the callback's, when it already has some)."""
    for host, infos in sorted(found.items()):
        data = report.get("hosts", {}).get(host)
        if isinstance(data, dict) and not data.get("info"):
            data["info"] = infos


def info_lines(report):
    """The table's information lines: '<host>  INFO <kind>  <summary>', one per item."""
    return ["%s  INFO %s  %s" % (host, info.get(INFO_KEY), info.get("summary", ""))
            for host in sorted(report.get("hosts", {}))
            for info in report["hosts"][host].get("info") or []]


@contextlib.contextmanager
def single_run(directory):
    """One drift check at a time per report directory (a timer and a person may overlap)."""
    if not directory:
        yield
        return
    os.makedirs(directory, mode=0o750, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(log("another drift check is running in %s" % directory) or EXIT_ERROR)
        yield


def keep_reports(report_dir, stamp, report_json, table, keep):
    """latest.json / latest.txt, and this run's timestamped pair; only the last ``keep`` pairs stay.
    (Reports only: ansible-runner rotates its own artifacts.)"""
    for name, content in (("drift-%s.json" % stamp, report_json), ("drift-%s.txt" % stamp, table)):
        write_private(os.path.join(report_dir, name), content)
    for latest, content in (("latest.json", report_json), ("latest.txt", table)):
        write_private(os.path.join(report_dir, latest), content)
    stamps = sorted(n[len("drift-"):-len(".json")] for n in os.listdir(report_dir) if n.startswith("drift-") and n.endswith(".json"))
    for old in stamps[:-keep] if keep > 0 else []:
        for ext in (".json", ".txt"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(report_dir, "drift-%s%s" % (old, ext)))


def write_private(path, content):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)
    os.replace(tmp, path)


def outcome_of(code):
    # Nothing checked (4) notifies as "failed": a schedule that checks nothing must not stay quiet.
    return {EXIT_CLEAN: "clean", EXIT_DRIFT: "drift"}.get(code, "failed")


def summary_line(report):
    s = report["summary"]
    return "drift check: %s - %d item(s); %d host(s) expected, %d checked; drifted %s; failed %s; unreachable %s; " \
        "not checked %s%s" % (
            outcome_of(report["exit_code"]), s["items"], s.get("expected", 0), s.get("checked", 0),
            ",".join(s["drift"]) or "-", ",".join(s["failed"]) or "-", ",".join(s["unreachable"]) or "-",
            ",".join(s.get("not_checked", [])) or "-", "; " + report["problem"] if report.get("problem") else "")


def notify(args, report, report_path, table, private):
    wanted = set(p.strip() for p in args.notify_on.split(",") if p.strip())
    if outcome_of(report["exit_code"]) not in wanted:
        return
    summary = summary_line(report)
    if args.notify_command:
        env = dict(os.environ, DRIFT_EXIT_CODE=str(report["exit_code"]), DRIFT_REPORT_JSON=report_path or "",
                   DRIFT_SUMMARY=summary)
        env.update(private)
        try:
            proc = subprocess.run(shlex.split(args.notify_command), input=table, text=True, env=env, check=False, timeout=120)
            if proc.returncode:
                log("notify command exited %d" % proc.returncode)
        except (OSError, subprocess.SubprocessError) as exc:
            log("notify command failed: %s" % exc)
    if args.webhook_url_env:
        url = private.get(args.webhook_url_env, "")
        if not url:
            log("--webhook-url-env %s: the variable is empty, no webhook sent" % args.webhook_url_env)
            return
        payload = {
            "text": summary + "\n```\n" + table + "```",
            "exit_code": report["exit_code"],
            "summary": report["summary"],
            "hosts": dict((h, {"status": d["status"],
                               "resources": ["%s %s" % (i["resource"]["kind"], i["resource"]["name"]) for i in d["drift"]]})
                          for h, d in report["hosts"].items()),
        }
        request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=15) as resp:  # nosec - the operator's own webhook
                resp.read()
        except OSError as exc:
            # The URL may carry a token: name the variable, never the URL.
            log("webhook from $%s failed: %s" % (args.webhook_url_env, getattr(exc, "reason", exc)))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    playbook = args.playbook or default_playbook()
    if os.path.exists(playbook):
        playbook = os.path.abspath(playbook)
    inventories = [abs_inventory(i) for i in args.inventory]
    ansible_runner = import_runner()
    if ansible_runner is None:
        log("ansible-runner is not importable by %s: pip install ansible-runner into that Python (%s -m pip install "
            "ansible-runner), or run this script with the Python that has it" % (sys.executable, sys.executable))
        return EXIT_ERROR
    # Secrets of the notifiers leave the environment before Ansible (and ansible-runner's artifacts) see it.
    private = dict((name, os.environ.pop(name)) for name in set(args.private_env + [args.webhook_url_env or ""])
                   if name and name in os.environ)
    pattern = playbook_pattern(playbook)
    expected, problem = expected_beforehand(args, inventories, pattern)
    with single_run(args.report_dir), tempfile.TemporaryDirectory(prefix="drift-check-") as tmp:
        if problem:
            log("nothing to check: %s" % problem)
            report = nothing_checked_report(problem, inventories, args.limit, pattern)
            table = retable("", report)
        else:
            done = run_check(ansible_runner, args, playbook, inventories, (pattern, expected), tmp)
            if done is None:
                return EXIT_ERROR
            report, table = done
        publish(args, report, table, private)
        return report["exit_code"]


def expected_beforehand(args, inventories, pattern):
    """What the run must check, known before it runs: Ansible goes on without an inventory source it cannot
    parse, and a play whose hosts match nothing is skipped, so its own report would say "clean"."""
    try:
        return expected_hosts(
            inventories, pattern, args.limit, args.vault_id,
            [os.path.abspath(os.path.expanduser(args.vault_password_file))] if args.vault_password_file else [])
    except Exception as exc:  # pylint: disable=broad-except  # the run's own report is still reconciled below
        log("could not work out the expected hosts beforehand (%s: %s): the hosts the run reaches are the expected ones"
            % (type(exc).__name__, exc))
        return None, None


def run_check(ansible_runner, args, playbook, inventories, wanted, tmp):
    """Run the playbook and read the callback's report; (report, table) reconciled with ``wanted`` (the pattern
    and the expected hosts), or None when the run wrote no report or was not in check mode (logged)."""
    pattern, expected = wanted
    json_path = os.path.join(tmp, "report.json")
    table_path = os.path.join(tmp, "report.txt")
    env = ansible_env(json_path, table_path)
    data_dir = args.private_data_dir or (os.path.join(args.report_dir, "runner") if args.report_dir
                                         else os.path.expanduser("~/.cache/inference.gpu_host/drift-runner"))
    rc, run, info = run_with_runner(ansible_runner, args, playbook, inventories, env, os.path.abspath(data_dir))
    if not os.path.exists(json_path):
        log("no drift report was written (ansible rc %s): the playbook did not run to its end - see %s"
            % (rc, "the output above" if not args.quiet else os.path.join(run["artifact_dir"], "stdout")))
        return None
    with open(json_path) as handle:
        report = json.load(handle)
    with open(table_path) as handle:
        table = handle.read()
    if not report.get("check_mode"):
        log("the run was not in check mode; its report is not a drift report")
        return None
    if report["exit_code"] == EXIT_CLEAN and rc not in (0, None):
        log("ansible-playbook exited %s although no host reported a failure: treating the hosts as failed" % rc)
        report["exit_code"] = EXIT_HOST_FAILED
    report["runner"] = run
    report["expected"] = {"pattern": pattern, "limit": args.limit, "hosts": expected}
    add_info(report, info)
    reconcile(report, expected)
    if report["summary"]["not_checked"]:
        log("expected but not checked: %s" % ", ".join(report["summary"]["not_checked"]))
    if report.get("problem"):
        log("nothing checked: %s" % report["problem"])
    return report, retable(table, report)


def publish(args, report, table, private):
    """Write the report where asked (--json, --table, --report-dir), print the table, notify."""
    report_json = json.dumps(report, indent=2, sort_keys=True) + "\n"
    for path, content in ((args.json_path, report_json), (args.table_path, table)):
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            write_private(os.path.abspath(path), content)
    kept = None
    if args.report_dir:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        keep_reports(args.report_dir, stamp, report_json, table, args.keep_reports)
        kept = os.path.join(args.report_dir, "latest.json")
    sys.stdout.write(table)
    sys.stdout.flush()
    notify(args, report, kept or (os.path.abspath(args.json_path) if args.json_path else ""), table, private)


if __name__ == "__main__":
    sys.exit(main())
