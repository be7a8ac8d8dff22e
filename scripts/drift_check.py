#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Run the drift check (playbooks/drift.yml, forced --check --diff) and exit with what it found.

  0  clean: every host matches what the roles would make of it
  2  drift found: the table lists each drifted resource (path, packages, unit) per host
  3  a host was unreachable or failed (its report is incomplete), or a task changed
     something outside check mode
  1  the check itself could not run (bad arguments, a playbook error, no report)

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

EXIT_CLEAN, EXIT_ERROR, EXIT_DRIFT, EXIT_HOST_FAILED = 0, 1, 2, 3
CALLBACK = "inference.gpu_host.drift_report"
PLAYBOOK_FQCN = "inference.gpu_host.drift"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(msg):
    sys.stderr.write("drift_check: %s\n" % msg)
    sys.stderr.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--timeout", type=int, default=0, help="stop the run after this many seconds (0: no limit)")
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
    return runner.rc, {"mode": "ansible-runner", "status": runner.status, "ansible_rc": runner.rc,
                       "artifact_dir": runner.config.artifact_dir}


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
    return {EXIT_CLEAN: "clean", EXIT_DRIFT: "drift"}.get(code, "failed")


def summary_line(report):
    s = report["summary"]
    return "drift check: %s - %d item(s); drifted %s; failed %s; unreachable %s" % (
        outcome_of(report["exit_code"]), s["items"], ",".join(s["drift"]) or "-", ",".join(s["failed"]) or "-",
        ",".join(s["unreachable"]) or "-")


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

    with single_run(args.report_dir), tempfile.TemporaryDirectory(prefix="drift-check-") as tmp:
        json_path = os.path.join(tmp, "report.json")
        table_path = os.path.join(tmp, "report.txt")
        env = ansible_env(json_path, table_path)
        data_dir = args.private_data_dir or (os.path.join(args.report_dir, "runner") if args.report_dir
                                             else os.path.expanduser("~/.cache/inference.gpu_host/drift-runner"))
        rc, run = run_with_runner(ansible_runner, args, playbook, inventories, env, os.path.abspath(data_dir))
        if not os.path.exists(json_path):
            log("no drift report was written (ansible rc %s): the playbook did not run to its end - see the output above" % rc)
            return EXIT_ERROR
        with open(json_path) as handle:
            report = json.load(handle)
        with open(table_path) as handle:
            table = handle.read()
        if not report.get("check_mode"):
            log("the run was not in check mode; its report is not a drift report")
            return EXIT_ERROR
        code = report["exit_code"]
        if code == EXIT_CLEAN and rc not in (0, None):
            log("ansible-playbook exited %s although no host reported a failure: treating the hosts as failed" % rc)
            code = report["exit_code"] = EXIT_HOST_FAILED
        report["runner"] = run
        report_json = json.dumps(report, indent=2, sort_keys=True) + "\n"
        if args.json_path:
            os.makedirs(os.path.dirname(os.path.abspath(args.json_path)), exist_ok=True)
            write_private(os.path.abspath(args.json_path), report_json)
        if args.table_path:
            os.makedirs(os.path.dirname(os.path.abspath(args.table_path)), exist_ok=True)
            write_private(os.path.abspath(args.table_path), table)
        kept = None
        if args.report_dir:
            stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
            keep_reports(args.report_dir, stamp, report_json, table, args.keep_reports)
            kept = os.path.join(args.report_dir, "latest.json")
        sys.stdout.write(table)
        sys.stdout.flush()
        notify(args, report, kept or (os.path.abspath(args.json_path) if args.json_path else ""), table, private)
        return code


if __name__ == "__main__":
    sys.exit(main())
