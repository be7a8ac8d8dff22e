# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""host_state: the one module the roles' reads and the run lock run on the host (issue 37). The module run for real
(the lock and a read in one call, a held lock reads nothing, bad options fail before the lock is taken), each read
the same as its own module's, and the action plugins in a real ansible-playbook (-c local): base_host_state taking
the lock in its read, the read's keys at the top level, check mode taking nothing, one payload for all."""
from __future__ import absolute_import, division, print_function

import json
import os

from _module_runner import run_module, run_playbook

from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import (
    acquire, controller_identity, make_record, read_lock)


def record(hostname="ctl-a", pid=None):
    me = controller_identity(os.getpid() if pid is None else pid, hostname=hostname)
    return make_record(me, "alice", "site.yml", "Inference containers", started="2026-12-05T04:00:00Z")


def base_args(tmp_path, **over):
    args = {"packages": ["dpkg"], "ca_dir": str(tmp_path / "ca"), "record": str(tmp_path / "base.fact"),
            "user": "root", "group": "root", "paths": [str(tmp_path)]}
    args.update(over)
    return args


def test_the_lock_and_a_read_in_one_call(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    rec = record()
    out = run_module("host_state", tmp_path, {"lock": {"path": path, "record": rec}, "base": base_args(tmp_path)},
                     check_rc=True)
    assert out["run_lock"]["acquired"] and read_lock(path) == rec and not out["changed"]
    alone = run_module("base_host_state", tmp_path, base_args(tmp_path), check_rc=True)
    alone.pop("invocation")
    assert out["base"] == alone
    out = run_module("host_state", tmp_path, {"lock": {"path": path, "state": "released", "id": rec["id"]}},
                     check_rc=True)
    assert out["run_lock"]["released"] and not os.path.exists(path)


def test_a_held_lock_reads_nothing(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    theirs = record(hostname="ctl-b")
    acquire(path, theirs)
    out = run_module("host_state", tmp_path, {"lock": {"path": path, "record": record()}, "base": base_args(tmp_path)},
                     check_rc=True)
    assert not out["run_lock"]["acquired"] and out["run_lock"]["holder"]["id"] == theirs["id"] and "base" not in out
    assert read_lock(path) == theirs


def test_bad_read_options_fail_naming_the_module_before_the_lock_is_taken(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    out = run_module("host_state", tmp_path, {"lock": {"path": path, "record": record()},
                                              "drafter": {"dest_dir": "/srv/d"}}, check_rc=True)
    assert out["failed"] and out["msg"].startswith("drafter_host_state: missing required arguments"), out
    assert not os.path.exists(os.path.dirname(path))
    out = run_module("host_state", tmp_path, {"base": base_args(tmp_path, ca_dir="relative")}, check_rc=True)
    assert out["failed"] and "ca_dir must be an absolute path" in out["msg"]


def test_one_read_per_call(tmp_path):
    out = run_module("host_state", tmp_path, {"base": base_args(tmp_path), "drafter": {}}, check_rc=True)
    assert out["failed"] and "mutually exclusive" in out["msg"]


def test_no_log_options_of_a_read_are_masked(tmp_path):
    # vllm_service_host_state's probe api_key is no_log: masked in host_state's result too.
    args = {"venv": str(tmp_path / "venv"), "model": str(tmp_path / "model"), "user": "root", "unit": "igh-none.service",
            "port": 1, "probe": {"served_model_name": "m", "api_key": "igh-secret-key-5c1e"}}
    out = run_module("host_state", tmp_path, {"vllm_service": args})
    assert "igh-secret-key-5c1e" not in json.dumps(out)


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: read and lock
      inference.gpu_host.base_host_state: %(base)s
      check_mode: false
    - name: lock file
      ansible.builtin.slurp: {src: "%(path)s"}
    - name: release
      inference.gpu_host.host_run_lock: {path: "%(path)s", state: released}
    - name: check mode
      inference.gpu_host.base_host_state: %(base)s
      check_mode: true
    - name: lock in another read
      inference.gpu_host.drafter_host_state: {dest_dir: /srv/d, lock: {path: "%(path)s"}}
      ignore_errors: true
    - name: a release in base's read
      inference.gpu_host.base_host_state: %(release)s
      ignore_errors: true
    - name: bad lock
      inference.gpu_host.base_host_state: %(bad)s
      ignore_errors: true
"""


def test_action_plugins_in_a_real_run(tmp_path):
    path = str(tmp_path / "igh" / "run.lock")
    base = dict(base_args(tmp_path), lock={"path": path})
    out, proc = run_playbook(tmp_path, PLAYBOOK % {
        "path": path, "base": json.dumps(base), "bad": json.dumps(dict(base, lock={"path": path, "timeout": -1})),
        "release": json.dumps(dict(base, lock={"path": path, "state": "released"}))}, "-vvv")
    results = dict((t["task"]["name"], t["hosts"]["localhost"]) for t in out["plays"][0]["tasks"])
    read = results["read and lock"]
    # The read's keys at the top level, as base_host_state returns them, and the lock taken in the same call.
    assert read["packages"]["dpkg"] is True and read["run_lock"]["acquired"] and not read["changed"]
    held = json.loads(__import__("base64").b64decode(results["lock file"]["content"]))
    assert held["id"] == read["run_lock"]["id"]
    assert results["release"]["released"] and not os.path.exists(path)
    # In check mode the read runs (check_mode: false would not matter) and the lock is neither read nor taken.
    assert results["check mode"]["run_lock"]["skipped"] and "packages" in results["check mode"]
    assert not os.path.exists(path)
    assert results["lock in another read"]["failed"]
    assert "Unsupported parameters" in results["lock in another read"]["msg"]
    assert results["bad lock"]["failed"] and "expected seconds from 0 to 86400, got -1" in results["bad lock"]["msg"]
    # base's read only takes the lock.
    assert results["a release in base's read"]["failed"] and "acquired" in results["a release in base's read"]["msg"]
    # One module payload for the reads and the lock: every module call ran host_state.
    assert "AnsiballZ_host_state.py" in proc.stdout + proc.stderr
    assert "AnsiballZ_base_host_state" not in proc.stdout + proc.stderr
    assert "AnsiballZ_host_run_lock" not in proc.stdout + proc.stderr


def test_texts_read_small_files_in_their_order(tmp_path):
    (tmp_path / "last.json").write_text('{"tok_s": 1}')
    os.mkfifo(str(tmp_path / "fifo"))
    paths = [str(tmp_path / "last.json"), str(tmp_path / "missing.json"), str(tmp_path / "fifo")]
    out = run_module("host_state", tmp_path, {"texts": paths}, check=True, check_rc=True)
    assert out["texts"] == ['{"tok_s": 1}', "", ""] and not out["changed"]
