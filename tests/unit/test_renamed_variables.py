# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Variables folded into documented dicts (0.3.0): each role's vars/main.yml ``__<role>_renamed`` maps an old name to
its new place; the new place is documented, nothing in the repo sets the old name any more, and a run that still
sets it stops in the role's first check, naming the new place (real ansible-playbook, check mode, before the role
reads or touches the host).
"""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(role, *parts):
    path = os.path.join(ROOT, "roles", role, *parts)
    if not os.path.isfile(path):
        return {}
    with open(path) as handle:
        return yaml.safe_load(handle) or {}


RENAMED = dict((role, _load(role, "vars", "main.yml").get("__%s_renamed" % role))
               for role in sorted(os.listdir(os.path.join(ROOT, "roles"))))
RENAMED = dict((role, table) for role, table in RENAMED.items() if table)


def test_some_role_renamed_variables():
    assert RENAMED


@pytest.mark.parametrize("role", sorted(RENAMED))
def test_new_names_are_documented(role):
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for old, new in RENAMED[role].items():
        assert old not in options, "%s is still an option of %s" % (old, role)
        group, _dot, key = new.partition(".")
        assert group in options, "%s -> %s: no option %s" % (old, new, group)
        if key:
            assert key in options[group].get("options", {}), "%s -> %s: %s has no key %s" % (old, new, group, key)


@pytest.mark.parametrize("role", sorted(RENAMED))
def test_old_names_are_gone_from_the_repo(role):
    paths = ["roles", "inventories", "molecule", "playbooks", "tests", "docs", "scripts", "benchmarks", "README.md",
             ":!roles/%s/vars/main.yml" % role, ":!tests/unit/test_renamed_variables.py"]
    found = {}
    for old in RENAMED[role]:
        proc = subprocess.run(["git", "grep", "-l", "-w", old, "--"] + paths, cwd=ROOT, capture_output=True,
                              text=True, check=False)
        if proc.stdout.strip():
            found[old] = proc.stdout.split()
    assert not found, "old names still set or named: %s" % found


# What each role needs to get past its argument validation to its first check.
MINIMAL = {
    "lxc_gpu": {"lxc_gpu_containers": [{"vmid": 129}]},
}


def test_an_old_name_stops_the_run_naming_the_new_one(tmp_path):
    """One run, one host per role (connection local, check mode), each setting the role's first old name."""
    hosts = {}
    for role, table in RENAMED.items():
        old, _new = sorted(table.items())[0]
        hosts["with-" + role] = dict(MINIMAL.get(role, {}), **{old: 1, "renamed_role": role})
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    playbook = tmp_path / "renamed.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Run each role with a renamed variable", "hosts": "all", "gather_facts": False,
        "tasks": [{"name": "The role", "ansible.builtin.include_role": {
            "name": "inference.gpu_host.{{ renamed_role }}"}}],
    }]))
    # No ansible.cfg of the clone (its profile_tasks would print into the JSON, its fact cache write to ~).
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"), ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory), "--check",
         str(playbook)], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    failed = {}
    for task in report["plays"][0]["tasks"]:
        for host, result in task["hosts"].items():
            if result.get("failed"):
                failed[host] = result.get("msg", "")
    for role, table in RENAMED.items():
        old, new = sorted(table.items())[0]
        assert "%s is now %s" % (old, new) in failed.get("with-" + role, ""), (role, failed.get("with-" + role))
    assert all(stats["changed"] == 0 and stats["failures"] == 1 for stats in report["stats"].values()), report["stats"]


def test_the_inventory_validator_names_the_new_place(tmp_path):
    """scripts/validate_inventories.py on a team's inventory that still sets old names: each is named with its new
    place, not as an unknown variable."""
    inv = tmp_path / "team"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "hosts.yml").write_text("all:\n  children:\n    inference_hosts:\n      hosts:\n        h1:\n")
    olds = dict((role, sorted(table.items())[0]) for role, table in RENAMED.items())
    (inv / "group_vars" / "inference_hosts.yml").write_text(
        "".join("%s: 1\n" % old for old, _new in olds.values()))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "validate_inventories.py"), "--inventory",
                           str(inv), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = dict((f["variable"], f) for f in json.loads(proc.stdout)["findings"])
    for old, new in olds.values():
        assert findings[old]["kind"] == "renamed_variable", findings[old]
        assert "renamed (changelog, breaking changes): %s is now %s" % (old, new) in findings[old]["message"], findings[old]


def test_an_unknown_key_of_a_documented_dict_is_refused_naming_it(tmp_path):
    """Every documented dict (an option of type dict with its keys in argument_specs): a key it does not have stops the
    run at the role's argument validation, naming <dict>.<key>, with nothing changed (one run, a host per dict)."""
    hosts = {}
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
        for name, spec in sorted(options.items()):
            if spec.get("type") == "dict" and spec.get("options"):
                hosts["%s--%s" % (role, name)] = dict(MINIMAL.get(role, {}), renamed_role=role,
                                                      **{name: {"no_such_key": 1}})
    assert len(hosts) >= 7
    inventory = tmp_path / "hosts.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    playbook = tmp_path / "unknown.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Run each role with an unknown key", "hosts": "all", "gather_facts": False,
        "tasks": [{"name": "The role", "ansible.builtin.include_role": {
            "name": "inference.gpu_host.{{ renamed_role }}"}}],
    }]))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"), ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory), "--check",
         str(playbook)], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    failed = {}
    for task in report["plays"][0]["tasks"]:
        for host, result in task["hosts"].items():
            if result.get("failed"):
                failed[host] = (task["task"]["name"], json.dumps(result.get("argument_errors") or result.get("msg")))
    for host in hosts:
        name = host.split("--")[1]
        task, message = failed.get(host, ("", ""))
        assert "Validating arguments" in task and "%s.no_such_key" % name in message, (host, task, message)
    assert all(stats["changed"] == 0 and stats["failures"] == 1 for stats in report["stats"].values()), report["stats"]
