# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/validate_inventories.py on a host defined in several inventory files (issue 41): the finding names each
host variable the files set to different values, the values (credentials masked, vaulted values never decrypted) and
the file whose value Ansible takes. The winner is checked against ansible-core itself: a fresh InventoryManager and
VariableManager over the same directory, for files of any names and nesting (Hypothesis)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

# The script as a module (vi), its roles, a real run of it (run) and write: as issue 27's tests have them.
from test_validate_inventories_issue27 import roles, run, vi, write  # noqa: F401  pylint: disable=unused-import

EXPLAINED = ("(Ansible reads an inventory directory's files in ASCII order of their names, a later file's host "
             "variable replacing an earlier one's)")


def host_file(group, hosts):
    """A YAML inventory file putting ``hosts`` ({name: {var: value}}) into ``group``."""
    lines = ["all:", "  children:", "    %s:" % group, "      hosts:"]
    for name, variables in hosts.items():
        lines.append("        %s:%s" % (name, "" if variables else " {}"))
        lines += ["          %s: %s" % (key, json.dumps(value)) for key, value in variables.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    inv = str(tmp_path_factory.mktemp("inventories") / "team")
    write(os.path.join(inv, "hosts.yml"), host_file("inference_hosts", {
        "h1": {"vllm_service_port": 8000, "vllm_service_api_key": "sk-first-secret-key", "drafter_profile": "auto",
               "vllm_service_extra_args": ["--max-num-seqs", "8"]},
        "h2": {"vllm_service_port": 1}}))
    write(os.path.join(inv, "more.yml"), host_file("qwen_profile", {
        "h1": {"vllm_service_port": 8001, "vllm_service_api_key": "sk-second-secret-key", "drafter_profile": "auto",
               "vllm_service_extra_args": ["--max-num-seqs", "16", "--hf-token", "hf_notarealtokenvalue123"]},
        "h2": {"vllm_service_port": 2}}))
    write(os.path.join(inv, "host_vars", "h2.yml"), "vllm_service_port: 2\n")
    code, out, err = run("--inventory", inv, "--json")
    assert code == 1, (out, err)
    return out, dict((f["host"], f) for f in json.loads(out)["findings"] if f["kind"] == "host_in_two_files")


def test_the_differing_variables_their_values_and_the_winner(report):
    _out, findings = report
    message = findings["h1"]["message"]
    assert message == (
        "defined in hosts.yml and more.yml: Ansible merges the definitions silently (groups and variables of each, "
        "the later file winning); the host variables that differ: "
        'vllm_service_api_key (hosts.yml "********", more.yml "********": Ansible takes more.yml\'s), '
        'vllm_service_extra_args (hosts.yml ["--max-num-seqs", "8"], more.yml ["--max-num-seqs", "16", "--hf-token", '
        '"********"]: Ansible takes more.yml\'s), '
        "vllm_service_port (hosts.yml 8000, more.yml 8001: Ansible takes more.yml's) " + EXPLAINED +
        "; define the host in one file"), message
    # drafter_profile is the same in both: merged, but not a difference.
    assert [d["variable"] for d in findings["h1"]["details"]] == [
        "vllm_service_api_key", "vllm_service_extra_args", "vllm_service_port"]
    assert findings["h1"]["details"][2] == {"variable": "vllm_service_port", "winner": "more.yml",
                                            "taken": "Ansible takes more.yml's",
                                            "values": [["hosts.yml", "8000"], ["more.yml", "8001"]]}


def test_no_secret_reaches_the_report(report):
    out, _findings = report
    for secret in ("sk-first-secret-key", "sk-second-secret-key", "hf_notarealtokenvalue123"):
        assert secret not in out


def test_host_vars_overrides_every_file(report):
    _out, findings = report
    assert ("vllm_service_port (hosts.yml 1, more.yml 2: Ansible takes neither: host_vars/h2 sets it, above every "
            "inventory file's host variables)") in findings["h2"]["message"]


def test_a_vaulted_value_is_compared_and_shown_without_its_secret(tmp_path):
    inv = str(tmp_path / "vaulted")
    vault = ("!vault |\n            $ANSIBLE_VAULT;1.1;AES256\n            %s\n" % ("61" * 32))
    write(os.path.join(inv, "a.yml"), "all:\n  hosts:\n    h1:\n      team_token: %s" % vault)
    write(os.path.join(inv, "b.yml"), "all:\n  hosts:\n    h1:\n      team_token: plain\n")
    code, out, err = run("--inventory", inv, "--json")
    assert code == 1, (out, err)
    finding = [f for f in json.loads(out)["findings"] if f["kind"] == "host_in_two_files"][0]
    assert finding["details"][0]["values"] == [["a.yml", '"<vaulted>"'], ["b.yml", '"********"']], finding


def test_a_precedence_conflict_masks_a_credential_too(tmp_path):
    inv = str(tmp_path / "groups")
    write(os.path.join(inv, "hosts.yml"), "all:\n  children:\n    a_team:\n      hosts:\n        h1:\n"
                                          "    b_team:\n      hosts:\n        h1:\n")
    write(os.path.join(inv, "group_vars", "a_team.yml"), "vllm_service_api_key: sk-group-a-secret\n")
    write(os.path.join(inv, "group_vars", "b_team.yml"), "vllm_service_api_key: sk-group-b-secret\n")
    code, out, err = run("--inventory", inv)
    assert code == 1, (out, err)
    assert 'set to different values in groups a_team ("********"), b_team ("********")' in out, out
    assert "sk-group" not in out


def test_host_differences_takes_the_last_setter(vi):
    found = vi.host_differences([("a.yml", {"x": 1, "y": [1], "inventory_file": "a.yml"}),
                                 ("b.yml", {"x": 2, "y": [1], "inventory_file": "b.yml"}),
                                 ("c/d.yml", {"x": 1})])
    assert found == [{"variable": "x", "values": [("a.yml", 1), ("b.yml", 2), ("c/d.yml", 1)], "winner": "c/d.yml"}]


VALUES = st.one_of(st.integers(-5, 5), st.text("abxyz", min_size=1, max_size=3), st.lists(st.integers(0, 3), max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["p", "q", "r"]), VALUES, max_size=3), min_size=1, max_size=4))
def test_host_differences_property(vi, definitions):
    named = [("f%d.yml" % i, d) for i, d in enumerate(definitions)]
    found = {d["variable"]: d for d in vi.host_differences(named)}
    for name in ("p", "q", "r"):
        setters = [(path, d[name]) for path, d in named if name in d]
        differs = len(setters) > 1 and any(json.dumps(v) != json.dumps(setters[0][1]) for _p, v in setters)
        assert (name in found) == differs
        if differs:
            assert found[name]["values"] == setters
            assert found[name]["winner"] == setters[-1][0]


# File names whose ASCII order differs from the order they are written in; one may sit in a subdirectory,
# which Ansible reads where its own name sorts.
NAMES = st.lists(st.text("aB0_-z", min_size=1, max_size=3).filter(lambda n: not n.startswith((".", "-"))),
                 min_size=2, max_size=4, unique_by=str.lower)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(NAMES, st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=4, max_size=4), st.booleans())
def test_the_named_winner_is_ansibles_value(vi, roles, names, values, nested):
    from ansible.inventory.manager import InventoryManager  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.vars.manager import VariableManager  # pylint: disable=import-outside-toplevel
    top = tempfile.mkdtemp()
    try:
        inv = os.path.join(top, "inv")
        for index, name in enumerate(names):
            rel = os.path.join(name, "hosts.yml") if nested and index == 0 else name + ".yml"
            variables = {} if values[index] is None else {"team_port": values[index]}
            write(os.path.join(inv, rel), host_file("g%d" % index, {"h1": variables}))
        report = vi.Report()
        vi.InventoryCheck(inv, roles, report, vi.SourceText()).run()
        loader = DataLoader()
        inventory = InventoryManager(loader=loader, sources=[inv])
        ansible_value = VariableManager(loader=loader, inventory=inventory).get_vars(
            host=inventory.get_host("h1")).get("team_port")
        finding = [f for f in report.findings if f["kind"] == "host_in_two_files"]
        assert len(finding) == 1
        set_values = [v for v in values[:len(names)] if v is not None]
        details = finding[0].get("details") or []
        if len(set(set_values)) < 2:
            assert not details
            return
        winner = details[0]["winner"]
        assert details[0]["taken"] == "Ansible takes %s's" % winner
        shown = dict(details[0]["values"])
        assert shown[winner] == json.dumps(ansible_value)
        # ... and it is the last of the setting files in ASCII order, as the docs say (a directory where its name sorts).
        assert winner == sorted(shown, key=lambda p: [part.encode() for part in p.split(os.sep)])[-1]
    finally:
        shutil.rmtree(top)
