# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/validate_inventories.py, run for real as a subprocess on real inventories."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from ansible.parsing.vault import VaultLib, VaultSecret

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "validate_inventories.py")
LINE = re.compile(r"^[^:\s]+:[^:\s]+: \S+: .+$")


def run(*args):
    proc = subprocess.run([sys.executable, SCRIPT] + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


@pytest.fixture(scope="module")
def bad_inventory(tmp_path_factory):
    """A team inventory with the usual mistakes: h1 is in two groups of depth 2."""
    inv = str(tmp_path_factory.mktemp("inventories") / "team")
    write(os.path.join(inv, "hosts.yml"), """\
all:
  children:
    inference_hosts:
      children:
        ampere_sm86:
          hosts:
            h1:
        hopper_sm90: {}
        qwen_profile:
          hosts:
            h1:
""")
    write(os.path.join(inv, "group_vars", "inference_hosts", "main.yml"), """\
python_env_venv_dirr: /root/ml-env
python_env_installer: conda
vllm_service_venv_dir: "{{ python_env_venv_dir }}"
vllm_service_hf_token: "{{ vault_hf_token | default('') }}"
vllm_service_model: "/models/{{ ansible_facts['hostname'] }}"
""")
    # Ignored like Ansible ignores it (not a vars file extension) although it is plain text.
    write(os.path.join(inv, "group_vars", "inference_hosts", "vault.yml.example"), "python_env_nonsense: 1\n")
    # A real vault file: no secret here, so it must be skipped, not fail the run.
    vault = VaultLib([("default", VaultSecret(b"not-a-real-password"))])
    with open(os.path.join(inv, "group_vars", "inference_hosts", "vault.yml"), "wb") as handle:
        handle.write(vault.encrypt("vault_hf_token: hf_secret\n"))
    write(os.path.join(inv, "group_vars", "ampere_sm86.yml"), """\
vllm_service_gpu_memory_utilization: 0.90
python_env_flash_attn_enabled: true
""")
    write(os.path.join(inv, "group_vars", "qwen_profile.yml"), """\
vllm_service_gpu_memory_utilization: 0.85
vllm_service_trust_remote_code: "yes"
vllm_service_port: 30000
""")
    # A group kept for later hosts: checked through a stand-in host.
    write(os.path.join(inv, "group_vars", "hopper_sm90.yml"), "python_env_flash_attn_enabeld: true\n")
    return inv


@pytest.fixture(scope="module")
def priority_inventory(tmp_path_factory):
    """Two same-depth groups disagree, but ansible_group_priority orders them on purpose."""
    inv = str(tmp_path_factory.mktemp("inventories") / "prio")
    write(os.path.join(inv, "hosts.yml"), """\
all:
  children:
    a_class:
      hosts:
        h1:
    b_profile:
      vars:
        ansible_group_priority: 10
      hosts:
        h1:
""")
    write(os.path.join(inv, "group_vars", "a_class.yml"), "vllm_service_port: 8000\n")
    write(os.path.join(inv, "group_vars", "b_profile.yml"), "vllm_service_port: 9000\n")
    return inv


@pytest.fixture(scope="module")
def bad_report(bad_inventory, priority_inventory):
    code, out, err = run("--inventory", bad_inventory, "--inventory", priority_inventory, "--json")
    assert code == 1, (out, err)
    report = json.loads(out)
    return {(f["host"], f["variable"]): f for f in report["findings"]}, report


def test_shipped_inventories_pass():
    code, out, err = run()
    assert code == 0, out + err
    assert out.splitlines()[-1].startswith("ok: 0 finding(s); ")
    assert "role variables checked" in out


def test_reports_exactly_the_mistakes(bad_report):
    findings, report = bad_report
    assert set(findings) == {
        ("h1", "python_env_venv_dirr"),
        ("h1", "python_env_installer"),
        ("h1", "vllm_service_trust_remote_code"),
        ("h1", "vllm_service_gpu_memory_utilization"),
        ("@hopper_sm90", "python_env_flash_attn_enabeld"),
    }, json.dumps(report["findings"], indent=2)
    assert report["ok"] is False
    assert report["summary"]["findings"] == 5


def test_misspelt_variable_gets_the_closest_name(bad_report):
    finding = bad_report[0][("h1", "python_env_venv_dirr")]
    assert finding["kind"] == "unknown_variable"
    assert "role python_env has no such variable" in finding["message"]
    assert "did you mean python_env_venv_dir?" in finding["message"]
    assert finding["source"] == "group_vars/inference_hosts"


def test_quoted_bool_is_reported_although_ansible_would_coerce_it(bad_report):
    finding = bad_report[0][("h1", "vllm_service_trust_remote_code")]
    assert finding["kind"] == "literal_type"
    assert 'expected a boolean, got the string "yes"' in finding["message"]
    assert "read it as true" in finding["message"]


def test_wrong_choice_uses_ansibles_validator(bad_report):
    finding = bad_report[0][("h1", "python_env_installer")]
    assert finding["kind"] == "invalid_value"
    assert "value of python_env_installer must be one of: uv, pip, got: conda" in finding["message"]


def test_same_depth_conflict_names_both_groups_and_the_silent_winner(bad_report):
    finding = bad_report[0][("h1", "vllm_service_gpu_memory_utilization")]
    assert finding["kind"] == "precedence_conflict"
    message = finding["message"]
    assert "ampere_sm86 (0.9)" in message and "qwen_profile (0.85)" in message
    assert "same depth (2)" in message
    assert "silently takes qwen_profile's" in message
    assert finding["source"] == "group_vars/qwen_profile"


def test_group_without_hosts_is_checked(bad_report):
    finding = bad_report[0][("@hopper_sm90", "python_env_flash_attn_enabeld")]
    assert "did you mean python_env_flash_attn_enabled?" in finding["message"]


def test_unresolvable_templates_and_vault_are_notes_not_findings(bad_report):
    notes = bad_report[1]["notes"]
    kinds = {(n["variable"], n["kind"]) for n in notes}
    assert ("vllm_service_model", "not_templated") in kinds
    assert ("group_vars/inference_hosts/vault.yml", "vaulted_file") in kinds
    assert bad_report[1]["summary"]["not_type_checked"] == 1


def test_text_output_and_exit_code(bad_inventory):
    code, out, _err = run("--inventory", bad_inventory)
    assert code == 1
    lines = out.splitlines()
    assert lines[-1].startswith("FAILED: 5 finding(s); 1 inventory, 1 hosts")
    assert all(LINE.match(line) for line in lines[:-1]), out
    assert ("team:h1: python_env_installer: value of python_env_installer must be one of: uv, pip, got: conda "
            "(set in group_vars/inference_hosts)") in lines


def test_group_priority_settles_a_conflict(bad_report):
    # The "prio" inventory (run together with "team"): different priorities, no finding.
    report = bad_report[1]
    assert report["summary"]["inventories"] == 2
    assert not [f for f in report["findings"] if f["inventory"] == "prio"]
