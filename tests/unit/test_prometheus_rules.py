"""The vllm_service role's Prometheus target and rules, written by the role's own tasks
(monitoring_preflight.yml, monitoring.yml) with its defaults, then checked by the real
promtool of Debian's prometheus package: `promtool check rules` and `promtool test rules`
on recorded series (tests/prometheus/vllm_rules_test.yml: acceptance healthy, collapsed, no
drafts; down; restarts in a loop)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMTOOL = shutil.which("promtool")
# The ansible-playbook of the Python that runs the tests (the dev venv's).
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)) or shutil.which("ansible-playbook")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not on PATH: scripts/bootstrap.sh installs it from Debian's prometheus package")

# The role's two task files, as main.yml runs them, for an instance whose monitoring host
# is the host itself (connection local): every file lands under the test's directory.
PLAYBOOK = """
- name: Monitoring of one instance
  hosts: ct129
  gather_facts: false
  vars:
    # What the role's state read (vllm_service_host_state) returns about the installed vLLM; the role
    # derives __vllm_service_vllm from it (vars/main.yml).
    __vllm_service_state: {vllm: {installed: true, version: "0.32.0"}}
  tasks:
    - name: Preflight
      ansible.builtin.include_role:
        name: inference.gpu_host.vllm_service
        tasks_from: monitoring_preflight
    - name: Target and rules
      ansible.builtin.include_role:
        name: inference.gpu_host.vllm_service
        tasks_from: monitoring
"""


def run_role(tmp, *args, inventory="ct129 ansible_connection=local\n", **variables):
    base = {
        "vllm_service_instance": "tiny",
        "vllm_service_served_model_name": "tiny-qwen3",
        "vllm_service_port": 30000,
        "vllm_service_prometheus_host": "ct129",
        "vllm_service_prometheus.file_sd_dir": os.path.join(tmp, "file_sd"),
        "vllm_service_prometheus.rules_dir": os.path.join(tmp, "rules"),
        "vllm_service_prometheus.promtool": PROMTOOL,
        # No Prometheus server on this machine to reload.
        "vllm_service_prometheus.service": "",
    }
    base.update(variables)
    # "vllm_service_prometheus.<key>" here is a key of the role's vllm_service_prometheus dict.
    base["vllm_service_prometheus"] = dict((name.split(".", 1)[1], base.pop(name)) for name in sorted(base)
                                           if name.startswith("vllm_service_prometheus."))
    with open(os.path.join(tmp, "vars.json"), "w") as fh:
        json.dump(base, fh)
    with open(os.path.join(tmp, "play.yml"), "w") as fh:
        fh.write(PLAYBOOK)
    with open(os.path.join(tmp, "hosts.ini"), "w") as fh:
        fh.write(inventory + "[all:vars]\nansible_python_interpreter=%s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
               ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "tmp"))
    proc = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", os.path.join(tmp, "hosts.ini"),
         os.path.join(tmp, "play.yml"), "-e", "@" + os.path.join(tmp, "vars.json")] + list(args),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc


def recap(out):
    match = re.search(r"ct129\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", out)
    assert match, out
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("monitoring"))
    first = run_role(tmp)
    assert first.returncode == 0, first.stdout + first.stderr
    second = run_role(tmp)
    assert second.returncode == 0, second.stdout + second.stderr
    return tmp, first.stdout, second.stdout


def test_target_file_names_the_instance(written):
    tmp, _first, _second = written
    with open(os.path.join(tmp, "file_sd", "ct129-tiny.json")) as fh:
        target = json.load(fh)
    assert target == [{"targets": ["127.0.0.1:30000"], "labels": {
        "instance": "ct129:30000", "vllm_instance": "tiny", "served_model_name": "tiny-qwen3",
        "vllm_version": "0.32.0"}}]


def test_second_run_changes_nothing(written):
    _tmp, first, second = written
    assert recap(first)["changed"] == 3  # the directories, the target, the rules
    assert recap(second)["changed"] == 0


def test_rules_carry_ansible_managed_and_pass_promtool_check(written):
    tmp, _first, _second = written
    path = os.path.join(tmp, "rules", "ct129-tiny.yml")
    with open(path) as fh:
        text = fh.read()
    assert text.startswith("# Ansible managed")
    names = [r.get("alert") or r.get("record") for r in yaml.safe_load(text)["groups"][0]["rules"]]
    assert names == ["instance:vllm_spec_decode_draft_tokens:rate", "instance:vllm_spec_decode_acceptance:ratio",
                     "VllmDown", "VllmRestartLoop", "VllmSpecDecodeAcceptanceCollapsed"]
    proc = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 5 rules found" in proc.stdout


def test_recorded_series_healthy_collapsed_no_drafts_down_restarts(written):
    tmp, _first, _second = written
    rules = os.path.join(tmp, "rules")
    shutil.copy(os.path.join(ROOT, "tests", "prometheus", "vllm_rules_test.yml"), rules)
    proc = subprocess.run([PROMTOOL, "test", "rules", "vllm_rules_test.yml"], cwd=rules,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_check_mode_on_a_blank_monitoring_host_writes_nothing(tmp_path):
    proc = run_role(str(tmp_path), "--check", "--diff")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert recap(proc.stdout)["changed"] == 2  # the directories, and the report of the files
    assert "would write %s/file_sd/ct129-tiny.json" % tmp_path in proc.stdout
    assert not os.path.exists(tmp_path / "file_sd") and not os.path.exists(tmp_path / "rules")


# One run for many bad values: every check of the loop runs and names its own variable.
@pytest.mark.parametrize("variables, messages", [
    ({"vllm_service_prometheus.acceptance_min": 1.5, "vllm_service_prometheus.down_for": "10 minutes",
      "vllm_service_prometheus.restart_count": 0, "vllm_service_prometheus.draft_rate_min": -1,
      "vllm_service_prometheus_labels": {"instance": "x", "env": 1}, "vllm_service_prometheus_host": "nowhere"},
     ["vllm_service_prometheus.acceptance_min=1.5: expected a ratio of accepted to draft tokens between 0 and 1",
      "vllm_service_prometheus.down_for=10 minutes: expected a Prometheus duration like 10m or 1h30m",
      "vllm_service_prometheus.restart_count=0: expected an integer >= 1",
      "vllm_service_prometheus.draft_rate_min=-1: expected draft tokens per second",
      "vllm_service_prometheus_labels: env, instance: expected Prometheus label names",
      "vllm_service_prometheus_host=nowhere is not a host of the inventory"]),
    ({"vllm_service_prometheus.acceptance_min": "ten percent", "vllm_service_prometheus_labels": {"env": 1}},
     ["vllm_service_prometheus.acceptance_min=ten percent: expected a ratio", "vllm_service_prometheus_labels: env: expected"]),
    ({"vllm_service_prometheus.promtool": "/nonexistent/promtool"},
     ["vllm_service_prometheus.promtool=/nonexistent/promtool does not run on ct129"]),
])
def test_bad_input_names_the_variable_and_writes_nothing(tmp_path, variables, messages):
    proc = run_role(str(tmp_path), **variables)
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    for message in messages:
        assert message in out, proc.stdout + proc.stderr
    assert not os.path.exists(tmp_path / "file_sd") and not os.path.exists(tmp_path / "rules")


def test_a_loopback_server_needs_a_target_for_another_monitoring_host(tmp_path):
    hosts = tmp_path / "hosts.ini"
    proc = run_role(str(tmp_path), "-i", "prom1,", vllm_service_prometheus_host="prom1")
    assert proc.returncode != 0
    assert "vllm_service_host=127.0.0.1 listens on loopback only" in " ".join(proc.stdout.split()), proc.stdout
    assert hosts.exists() and not os.path.exists(tmp_path / "file_sd")


def test_a_wildcard_server_is_scraped_at_its_inventory_address_from_another_host(tmp_path):
    proc = run_role(str(tmp_path), inventory="ct129 ansible_connection=local ansible_host=10.0.3.9\n"
                    "prom1 ansible_connection=local\n", vllm_service_host="0.0.0.0", vllm_service_prometheus_host="prom1",
                    vllm_service_prometheus_labels={"env": "prod"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(tmp_path / "file_sd" / "ct129-tiny.json") as fh:
        [target] = json.load(fh)
    assert target["targets"] == ["10.0.3.9:30000"]
    assert target["labels"]["instance"] == "ct129:30000" and target["labels"]["env"] == "prod"
