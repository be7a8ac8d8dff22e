# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/run-local.sh's closing commands run as printed: each names files this clone has and both inventories
(inventories/local names ct129-local but not its address, which .cache/local-hosts.yml holds), and each reaches
ct129-local. Without a container: Ansible lists the hosts of each playbook; the drift check says which hosts it
expects. With RUN_LOCAL_LIVE=1 after run-local.sh, each runs for real against the container."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "scripts", "run-local.sh")
HOSTS = ".cache/local-hosts.yml"
BIN = os.path.dirname(sys.executable)


def printed():
    """(cd argv, [(comment, argv)]) of `run-local.sh --next`: what the full run prints last."""
    out = subprocess.run(["bash", SCRIPT, "--next"], capture_output=True, text=True, check=True, timeout=30).stdout
    lines = [line for line in out.splitlines() if line.strip()]
    commands, comment = [], ""
    for line in lines[1:]:
        if line.startswith("#"):
            comment = line
        else:
            commands.append((comment, shlex.split(line)))
    return shlex.split(lines[0]), commands


CD, COMMANDS = printed()
IDS = [argv[1].rsplit("/", 1)[-1] for _c, argv in COMMANDS]


def inventories(argv):
    return [argv[i + 1] for i, word in enumerate(argv) if word in ("-i", "--inventory")]


def with_hosts(argv, hosts_file):
    return [hosts_file if word == HOSTS else word for word in argv]


@pytest.fixture(name="hosts_file")
def _hosts_file(tmp_path):
    """A stand-in for the file run-local.sh writes (same keys), so nothing of a real run is touched."""
    path = tmp_path / "local-hosts.yml"
    path.write_text("all:\n  hosts:\n    ct129-local:\n      ansible_host: 192.0.2.1\n"
                    "      ansible_ssh_private_key_file: /nonexistent/id_ed25519\n"
                    "      standin_models_pair: agreeing\n"
                    "      standin_models_dir: %s/.cache/tiny-models-agreeing\n" % ROOT)
    return str(path)


def test_the_commands_start_in_this_clone_and_say_what_each_does():
    assert CD == ["cd", ROOT]
    assert [argv[1] for _c, argv in COMMANDS] == [
        "site.yml", "scripts/drift_check.py", "playbooks/benchmark.yml", "playbooks/upgrade_plan.yml"]
    assert all(comment.startswith("# ") for comment, _a in COMMANDS)


@pytest.mark.parametrize("argv", [argv for _c, argv in COMMANDS], ids=IDS)
def test_each_command_names_files_this_clone_has_and_both_inventories(argv):
    assert argv[0] in (".venv/bin/ansible-playbook", ".venv/bin/python")
    assert os.path.isfile(os.path.join(ROOT, argv[1])), argv[1]
    # inventories/local alone leaves ct129-local without an address ("unreachable").
    assert inventories(argv) == ["inventories/local", HOSTS]
    assert os.path.isdir(os.path.join(ROOT, "inventories/local"))
    for word in argv:
        if word.endswith(".txt"):
            # Absolute: Ansible looks a relative file up beside the playbook, not in the current directory.
            path = word.split("=", 1)[-1]
            assert os.path.isabs(path) and os.path.isfile(path), word


def test_run_local_writes_the_hosts_file_the_commands_name():
    text = open(SCRIPT, encoding="utf-8").read()
    assert "HOSTS=%s\n" % HOSTS in text
    assert re.search(r'^python3 - .*> "\$HOSTS" <<', text, re.M)
    for key in ("ansible_host", "ansible_ssh_private_key_file", "standin_models_pair", "standin_models_dir"):
        assert key + ":" in text


def test_the_hosts_file_gives_ct129_local_its_address(hosts_file):
    def host_vars(*sources):
        argv = [os.path.join(BIN, "ansible-inventory")] + [w for s in sources for w in ("-i", s)]
        proc = subprocess.run(argv + ["--host", "ct129-local"], cwd=ROOT, capture_output=True, text=True,
                              check=True, timeout=120)
        return json.loads(proc.stdout)

    alone = host_vars("inventories/local")
    assert "ansible_host" not in alone
    both = host_vars("inventories/local", hosts_file)
    assert both["ansible_host"] == "192.0.2.1"
    assert both["standin_models_dir"].endswith("/.cache/tiny-models-agreeing")
    assert both["standin_models_pair"] == "agreeing" and alone.get("standin_models_pair", "random") == "random"
    assert both["vllm_service_served_model_name"] == alone["vllm_service_served_model_name"]


@pytest.mark.parametrize("argv", [argv for _c, argv in COMMANDS if argv[0].endswith("ansible-playbook")],
                         ids=[i for i, (_c, argv) in zip(IDS, COMMANDS) if argv[0].endswith("ansible-playbook")])
def test_each_playbook_command_reaches_ct129_local(argv, hosts_file):
    # The printed argv as it is (the hosts file aside), with the venv of this run and --list-hosts: Ansible
    # parses the playbook, the inventories and the extra vars, and says where each play would run.
    cmd = [os.path.join(BIN, "ansible-playbook")] + with_hosts(argv, hosts_file)[1:] + ["--list-hosts"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ct129-local" in proc.stdout
    assert "WARNING" not in proc.stderr, proc.stderr


def test_the_drift_check_command_expects_ct129_local(hosts_file):
    (argv,) = [argv for _c, argv in COMMANDS if argv[1] == "scripts/drift_check.py"]
    spec = importlib.util.spec_from_file_location("drift_check_run_local", os.path.join(ROOT, argv[1]))
    drift_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drift_check)
    args = drift_check.parse_args(with_hosts(argv, hosts_file)[2:])
    cwd = os.getcwd()
    os.chdir(ROOT)  # relative sources, as printed after `cd <clone>`
    try:
        sources = [drift_check.abs_inventory(s) for s in args.inventory]
        hosts, problem = drift_check.expected_hosts(sources, drift_check.playbook_pattern(drift_check.default_playbook()))
    finally:
        os.chdir(cwd)
    assert (hosts, problem) == (["ct129-local"], None)


@pytest.mark.skipif(os.environ.get("RUN_LOCAL_LIVE") != "1",
                    reason="RUN_LOCAL_LIVE=1 runs each command against run-local.sh's container")
@pytest.mark.parametrize("argv", [argv for _c, argv in COMMANDS], ids=IDS)
def test_each_command_runs_against_the_run_local_container(argv):
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    if argv[0].endswith("ansible-playbook"):
        recap = re.search(r"ct129-local\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", proc.stdout)
        assert recap, proc.stdout[-4000:]
        if argv[1] == "site.yml":
            assert recap.group(1) == "0", "converging again changed something:\n" + proc.stdout[-4000:]
