# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_failure_cause run for real as a subprocess, on the real captured vLLM logs."""

from __future__ import absolute_import, division, print_function

import os

import pytest
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
LOGS = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "vllm_logs")


def run_module(tmp_path, args, env_extra=None, check_mode=False):
    return _module_runner.run_module("vllm_failure_cause", tmp_path, args, check=check_mode, env=env_extra,
                                     args_name="args.json")


def test_log_file_worker_value_error(tmp_path):
    path = os.path.join(LOGS, "cpu-0.32.0-gpu-memory-utilization-too-high.log")
    res = run_module(tmp_path, {"path": path})
    assert not res.get("failed"), res
    assert res["changed"] is False
    assert res["found"] is True
    assert res["exception_type"] == "ValueError"
    assert res["process"] == "VllmWorker-0"
    assert res["hint_id"] == "memory_utilization_too_high"
    assert res["source"] == path
    assert res["message"].startswith("cpu-0.32.0-gpu-memory-utilization-too-high.log failed: ValueError: Available memory")
    assert u"\u2014 hint: " in res["message"]
    assert "Engine core initialization failed" not in res["message"]
    assert res["relevant_lines"][-1].endswith(res["cause"][-40:]) or res["cause"][:60] in res["relevant_lines"][-1]


def test_log_file_in_check_mode_reads_the_same(tmp_path):
    path = os.path.join(LOGS, "cuda-0.20.1-no-gpu.log")
    res = run_module(tmp_path, {"path": path, "max_lines": 5}, check_mode=True)
    assert not res.get("failed"), res
    assert res["changed"] is False
    assert res["hint_id"] == "no_gpu"
    assert len(res["relevant_lines"]) == 5


def test_text_input(tmp_path):
    with open(os.path.join(LOGS, "cpu-0.32.0-misspelt-flag.log")) as fh:
        text = fh.read()
    res = run_module(tmp_path, {"text": text})
    assert res["hint_id"] == "unrecognized_argument"
    assert res["message"].startswith("vLLM failed: unrecognized arguments: --max-modle-len")


def test_missing_file_fails(tmp_path):
    res = run_module(tmp_path, {"path": str(tmp_path / "nope.log")})
    assert res["failed"] is True
    assert "does not exist" in res["msg"]


def test_needs_one_source(tmp_path):
    res = run_module(tmp_path, {})
    assert res["failed"] is True
    assert "one of the following is required" in res["msg"]


def _stub(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def fake_systemd(tmp_path):
    """systemctl/journalctl stand-ins (this machine runs no systemd): they record their argv."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "calls"
    log = os.path.join(LOGS, "cpu-0.32.0-drafter-fc-width-mismatch.log")
    _stub(bindir / "systemctl", 'echo "systemctl $*" >> %s\necho 0123456789abcdef0123456789abcdef\n' % calls)
    _stub(bindir / "journalctl", 'echo "journalctl $*" >> %s\ncat %s\n' % (calls, log))
    return {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))}, calls


def test_unit_reads_its_current_invocation(tmp_path, fake_systemd):
    env, calls = fake_systemd
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"}, env_extra=env)
    assert not res.get("failed"), res
    assert res["invocation_id"] == "0123456789abcdef0123456789abcdef"
    assert res["source"] == "journal of vllm@tiny.service, invocation 0123456789abcdef0123456789abcdef"
    assert res["hint_id"] == "weight_shape_mismatch"
    assert res["message"].startswith("vllm@tiny.service failed: AssertionError: Tried to load weights")
    recorded = calls.read_text().splitlines()
    assert recorded[0] == "systemctl show -p InvocationID --value vllm@tiny.service"
    assert recorded[1] == ("journalctl --no-pager -q -o cat -n 5000 _SYSTEMD_INVOCATION_ID=0123456789abcdef0123456789abcdef"
                           " + INVOCATION_ID=0123456789abcdef0123456789abcdef")


def test_unit_with_given_invocation(tmp_path, fake_systemd):
    env, calls = fake_systemd
    inv = "ffffffffffffffffffffffffffffffff"
    res = run_module(tmp_path, {"unit": "vllm@tiny.service", "invocation_id": inv, "journal_lines": 100},
                     env_extra=env)
    assert res["invocation_id"] == inv
    recorded = calls.read_text().splitlines()
    assert len(recorded) == 1 and "-n 100 _SYSTEMD_INVOCATION_ID=" + inv in recorded[0]
