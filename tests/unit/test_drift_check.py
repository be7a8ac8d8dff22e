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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
"""


def run(*args, python=sys.executable):
    proc = subprocess.run([python, SCRIPT] + list(args), cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def test_runner_option_is_gone_with_a_message():
    code, _out, err = run("-i", "localhost,", "--runner", "ansible-playbook")
    assert code == 2
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
    assert report["hosts"]["local-host"]["status"] == "drift"
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
