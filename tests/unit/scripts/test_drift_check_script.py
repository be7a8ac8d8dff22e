# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/drift_check.py, run for real: through ansible-runner on a local play, and without it."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import glob
import json
import os
import subprocess
import sys
import venv

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "scripts", "drift_check.py")

# One check-mode change on the control node itself: a file the play would write.
PLAYBOOK = """\
- name: A drift of one file
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the file
      ansible.builtin.copy:
        dest: "{{ target }}"
        content: "wanted\\n"
        mode: "0644"
    # Information, never a finding (the drift role's recorded benchmark figures and live acceptance).
    - name: Information
      ansible.builtin.debug:
        msg:
          drift_info: benchmark
          summary: last recorded benchmark 300.0 tok/s; live acceptance length 3.88
"""


def run(*args, python=sys.executable):
    proc = subprocess.run([python, SCRIPT] + list(args), cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_runner_option_is_gone_with_a_message():
    code, _out, err = run("-i", "localhost,", "--runner", "ansible-playbook")
    assert code == 1  # a bad argument: the check could not run (argparse's own 2 would read as "drift found")
    assert "--runner was removed: the drift check always runs through ansible-runner" in err


def test_without_ansible_runner_names_the_interpreter_and_the_fix(tmp_path):
    # A real interpreter without ansible-runner (nor anything else): a bare venv.
    env_dir = str(tmp_path / "bare")
    venv.create(env_dir, with_pip=False)
    python = os.path.join(env_dir, "bin", "python")
    code, out, err = run("-i", "localhost,", python=python)
    assert code == 1, (out, err)
    assert "ansible-runner is not importable by %s" % python in err
    assert "pip install ansible-runner" in err
    assert out == ""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The same drift found twice through ansible-runner, one report and one artifact dir kept."""
    pytest.importorskip("ansible_runner")
    work = tmp_path_factory.mktemp("drift")
    playbook = work / "drift.yml"
    playbook.write_text(PLAYBOOK)
    inventory = work / "hosts.ini"
    inventory.write_text("local-host ansible_connection=local ansible_python_interpreter=%s target=%s\n"
                         % (sys.executable, work / "wanted.txt"))
    reports = work / "reports"
    results = [run("-i", str(inventory), "--playbook", str(playbook), "--quiet", "--report-dir", str(reports),
                   "--keep-reports", "1", "--rotate-artifacts", "1", "--json", str(work / ("run%d.json" % n)))
               for n in (1, 2)]
    return work, reports, results


def test_drift_through_ansible_runner(two_runs):
    work, _reports, results = two_runs
    for code, out, err in results:
        assert code == 2, (out, err)
        assert "local-host" in out  # the table
    report = json.loads((work / "run2.json").read_text())
    assert report["exit_code"] == 2 and report["check_mode"] is True
    assert report["summary"]["expected"] == 1 and report["summary"]["checked"] == 1
    assert report["expected"] == {"pattern": "all", "limit": None, "hosts": ["local-host"]}
    assert results[1][1].splitlines()[-1] == (
        "drift: 1 item(s); 1 host(s) expected, 1 checked (clean 0, drifted 1); failed 0, unreachable 0, "
        "not checked 0 -> drift found (exit 2)")
    assert report["hosts"]["local-host"]["status"] == "drift"
    # The information is in the report and the table, and counts as no item.
    assert report["hosts"]["local-host"]["info"] == [
        {"drift_info": "benchmark", "summary": "last recorded benchmark 300.0 tok/s; live acceptance length 3.88"}]
    assert "local-host  INFO benchmark  last recorded benchmark 300.0 tok/s; live acceptance length 3.88" \
        in results[1][1].splitlines()
    assert report["runner"]["mode"] == "ansible-runner"
    assert report["runner"]["status"] == "successful"
    assert report["runner"]["ansible_rc"] == 0
    assert report["runner"]["artifact_dir"].startswith(str(work / "reports" / "runner" / "artifacts" / "drift-"))
    assert not (work / "wanted.txt").exists()  # check mode: nothing written


def test_reports_and_artifacts_each_rotated_once(two_runs):
    _work, reports, _results = two_runs
    assert sorted(os.path.basename(p) for p in glob.glob(str(reports / "latest.*"))) == ["latest.json", "latest.txt"]
    assert len(glob.glob(str(reports / "drift-*.json"))) == 1  # --keep-reports 1: this script's
    assert len(glob.glob(str(reports / "drift-*.txt"))) == 1
    artifacts = [p for p in glob.glob(str(reports / "runner" / "artifacts" / "*")) if os.path.isdir(p)]
    assert len(artifacts) == 1  # --rotate-artifacts 1: ansible-runner's own rotation
    latest = json.loads((reports / "latest.json").read_text())
    assert latest["runner"]["artifact_dir"] == artifacts[0]
    assert oct(os.stat(str(reports / "runner")).st_mode & 0o777) == "0o700"


def test_configured_callbacks_come_from_the_ansible_cfg_in_use(tmp_path, monkeypatch):
    # Read in-process (no ansible-config subprocess): what ANSIBLE_CONFIG's file enables, in its order.
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\ncallbacks_enabled = ansible.posix.profile_tasks, ansible.builtin.junit\n")
    monkeypatch.setenv("ANSIBLE_CONFIG", str(cfg))
    monkeypatch.delenv("ANSIBLE_CALLBACKS_ENABLED", raising=False)
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import drift_check  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    assert drift_check.configured_callbacks() == ["ansible.posix.profile_tasks", "ansible.builtin.junit"]
    env = drift_check.ansible_env(str(tmp_path / "r.json"), str(tmp_path / "r.txt"))
    assert env["ANSIBLE_CALLBACKS_ENABLED"].split(",") == [
        "ansible.posix.profile_tasks", "ansible.builtin.junit", drift_check.CALLBACK]


# Issue 27: "drift_check.py -i /nonexistent", a YAML-broken inventory, a group typo (inferance_hosts) all gave
# "drift: 0 item(s) on 0 host(s) ... clean (exit 0)": a scheduled check stayed green forever. Each is now
# exit 4 (nothing to check) with a reason, in the report, the table and the notification; nothing runs.
def _nothing_checked(tmp_path, *args):
    notified = tmp_path / "notified.txt"
    code, out, err = run("--quiet", "--report-dir", str(tmp_path / "reports"), "--notify-command",
                         "sh -c '(echo $DRIFT_EXIT_CODE; cat) > %s'" % notified, *args)
    report = json.loads((tmp_path / "reports" / "latest.json").read_text())
    assert code == 4 == report["exit_code"], (out, err)
    assert report["runner"]["mode"] == "not run" and not (tmp_path / "reports" / "runner").exists()
    assert report["summary"]["expected"] == 0 and report["summary"]["checked"] == 0
    assert out.splitlines()[-1] == ("drift: 0 item(s); 0 host(s) expected, 0 checked (clean 0, drifted 0); failed 0, "
                                    "unreachable 0, not checked 0 -> NOTHING CHECKED (exit 4)")
    assert (tmp_path / "reports" / "latest.txt").read_text() == out
    assert notified.read_text().startswith("4\nNOTHING CHECKED: ")  # "failed" is notified by default
    assert "drift_check: nothing to check: " + report["problem"] in err
    return report["problem"]


def test_a_missing_inventory_checks_nothing(tmp_path):
    missing = str(tmp_path / "nonexistent")
    assert _nothing_checked(tmp_path, "-i", missing) == "inventory source %s does not exist" % missing


def test_a_yaml_broken_inventory_checks_nothing(tmp_path):
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all:\n  children:\n    inference_hosts: [\n")
    problem = _nothing_checked(tmp_path, "-i", str(inv))
    assert problem.startswith("inventory source %s does not parse: " % (inv / "hosts.yml"))
    assert "(at %s:4:1)" % (inv / "hosts.yml") in problem


def test_a_yaml_broken_group_vars_file_checks_nothing(tmp_path):
    inv = tmp_path / "inv"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text("all:\n  children:\n    inference_hosts:\n      hosts:\n        h1:\n")
    (inv / "group_vars" / "inference_hosts.yml").write_text("vllm_service_port: [\n")
    (inv / "group_vars" / "nobody.yml").write_text("{{ never read: no such group\n")  # Ansible skips it: so do we
    problem = _nothing_checked(tmp_path, "-i", str(inv))
    assert problem.startswith("inventory source %s does not parse: group_vars/inference_hosts.yml: YAML" % inv)
    assert "nobody" not in problem


def test_a_group_typo_checks_nothing_and_names_the_close_group(tmp_path):
    inv = tmp_path / "typo.yml"
    inv.write_text("all:\n  children:\n    inferance_hosts:\n      hosts:\n        h1:\n")
    problem = _nothing_checked(tmp_path, "-i", str(inv))
    assert problem == ("no host of %s is in the playbook's hosts proxmox_nodes:inference_hosts: inference_hosts is "
                       "not a group there (did you mean inferance_hosts?); the inventory's groups: inferance_hosts" % inv)


def test_a_limit_that_matches_nothing_checks_nothing(tmp_path):
    problem = _nothing_checked(tmp_path, "-i", os.path.join(ROOT, "inventories", "local"), "--limit", "ct129-locl")
    assert problem == ("--limit ct129-locl matches none of the 1 host(s) in proxmox_nodes:inference_hosts "
                       "(ct129-local) (did you mean ct129-local?)")


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_timeout_must_be_positive(value):
    code, _out, err = run("-i", "localhost,", "--timeout", value)
    assert code == 1
    assert "argument --timeout: expected a whole number of seconds greater than 0, got %r" % value in err


def test_a_host_expected_but_never_reached_is_not_clean(tmp_path):
    """A real run in which one expected host runs no task (meta: end_host): exit 3, never 0 or 2."""
    pytest.importorskip("ansible_runner")
    playbook = tmp_path / "drift.yml"
    playbook.write_text(PLAYBOOK.replace("  tasks:\n", "  tasks:\n    - name: Leave one host out\n"
                                         "      ansible.builtin.meta: end_host\n"
                                         "      when: inventory_hostname == 'left-out'\n"))
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s target=%s\n"
                                 % (name, sys.executable, tmp_path / "wanted.txt") for name in ("local-host", "left-out")))
    code, out, err = run("-i", str(inventory), "--playbook", str(playbook), "--quiet", "--private-data-dir",
                         str(tmp_path / "runner"), "--json", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert code == 3 == report["exit_code"], (out, err)
    assert report["hosts"]["left-out"]["status"] == "not_checked"
    assert report["summary"]["not_checked"] == ["left-out"]
    assert (report["summary"]["expected"], report["summary"]["checked"]) == (2, 1)
    assert "left-out  NOT CHECKED  expected" in out
    assert out.splitlines()[-1].endswith("not checked 1 -> host unreachable, failed or not checked (exit 3)")
    assert "expected but not checked: left-out" in err


def _module():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import drift_check  # pylint: disable=import-outside-toplevel
    finally:
        sys.path.pop(0)
    return drift_check


def test_info_comes_from_ok_events_with_drift_info_only():
    dc = _module()
    info = {"drift_info": "benchmark", "summary": "s"}
    events = [{"event": "runner_on_ok", "event_data": {"host": "h", "res": {"msg": info}}},
              {"event": "runner_on_ok", "event_data": {"host": "h", "res": {"msg": {"drift_resource": "/x"}}}},
              {"event": "runner_on_ok", "event_data": {"host": "h", "res": {"msg": "text"}}},
              {"event": "runner_on_failed", "event_data": {"host": "g", "res": {"msg": info}}},
              {"event": "verbose", "stdout": "x"}, "not an event"]
    found = dc.collect_info(events)
    assert found == {"h": [info]}
    report = {"hosts": {"h": {"status": "clean"}, "other": {"status": "clean"}}}
    dc.add_info(report, dict(found, gone=[info]))
    assert report["hosts"]["h"]["info"] == [info] and "info" not in report["hosts"]["other"]
    assert dc.info_lines(report) == ["h  INFO benchmark  s"]


def test_the_expected_pattern_is_drift_yml_s_own():
    dc = _module()
    assert dc.playbook_pattern(os.path.join(ROOT, "playbooks", "drift.yml")) == dc.DRIFT_HOSTS
    assert dc.playbook_pattern(dc.PLAYBOOK_FQCN) == dc.DRIFT_HOSTS


@pytest.mark.parametrize("statuses, expected, code, not_checked", [
    ({}, None, 4, []),                                   # the run saw no host at all
    ({}, ["a"], 3, ["a"]),
    ({"a": "clean"}, ["a"], 0, []),
    ({"a": "clean"}, ["a", "b"], 3, ["b"]),              # clean is never said of fewer hosts than expected
    ({"a": "drift"}, ["a", "b"], 3, ["b"]),
    ({"a": "drift", "b": "clean"}, None, 2, []),         # expected unknown: the hosts the run saw
    ({"a": "unreachable"}, ["a"], 3, []),
])
def test_reconcile(statuses, expected, code, not_checked):
    dc = _module()
    exit_code = 3 if "unreachable" in statuses.values() else 2 if "drift" in statuses.values() else 0
    report = {"exit_code": exit_code, "summary": {"items": 0}, "hosts": dict(
        (h, {"status": s, "drift": [], "errors": []}) for h, s in statuses.items())}
    assert dc.reconcile(report, expected) == code == report["exit_code"]
    assert report["summary"]["not_checked"] == not_checked
    assert report["summary"]["checked"] == sum(1 for s in statuses.values() if s in ("clean", "drift"))
    assert report["summary"]["expected"] == len(expected if expected is not None else statuses)


def test_each_plays_pattern_is_resolved_on_its_own(tmp_path):
    """A "!c" in one play excludes nothing from another: expected = the union of each play's hosts."""
    playbook = tmp_path / "two.yml"
    playbook.write_text("- hosts: a:!c\n  tasks: []\n- hosts: b\n  tasks: []\n- import_playbook: other.yml\n")
    dc = _module()
    assert dc.playbook_pattern(str(playbook)) == "a:!c, b"
    templated = tmp_path / "templated.yml"
    templated.write_text("- hosts: '{{ target }}'\n  tasks: []\n")
    assert dc.playbook_pattern(str(templated)) is None  # unknown here: the hosts the run reaches are expected
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[a]\na1\nc1\n[c]\nc1\nb1\n[b]\nb1\n")
    problem = _nothing_checked(tmp_path, "-i", str(inventory), "--playbook", str(playbook), "--limit", "c1")
    assert problem == "--limit c1 matches none of the 2 host(s) in a:!c, b (a1, b1)"
