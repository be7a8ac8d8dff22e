# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 27, item 4 (reads that never hang), through the real modules run as subprocesses.

* what may be on the vLLM port (a real socket on 127.0.0.1: a byte every 0.5 s, non-HTTP bytes, a 64 KB
  header line, 200 headers, 100,000-deep JSON): vllm_service_host_state's probe and vllm_wait_ready answer
  "not ready: <why>" within their deadline (they held 40 s and more, or died with BadStatusLine,
  LineTooLong or RecursionError tracebacks);
* NaN or negative spec-decode counters: not ready (NaN was reported ready);
* the local-facts record or the drafter's config.json a FIFO: all four *_host_state modules come back at
  once (they hung);
* journald stopped, or journalctl failing: vllm_wait_ready says the journal is unavailable (it said "no
  root cause found in its log").
"""

import os
import sys
import time

import pytest

import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
from _hostile_http import (  # noqa: E402  pylint: disable=wrong-import-position
    RawServer, deep_json, http_answer, models_answer, trickle)
from test_vllm_service_host_state import _args, _probe_env, _venv  # noqa: E402  pylint: disable=wrong-import-position

SLACK = 6  # a module's start in a child Python (Ansible's imports) on a busy 2-core machine
GOOD_METRICS = ('vllm:spec_decode_num_drafts_total{engine="0"} 7.0\n'
                'vllm:spec_decode_num_draft_tokens_total{engine="0"} 21.0\n'
                'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 3.0\n')


@pytest.fixture
def raw():
    servers = []

    def make(answer, **kw):
        server = RawServer(answer, **kw)
        servers.append(server)
        return server
    yield make
    for server in servers:
        server.close()


def serving(metrics=GOOD_METRICS, **override):
    """A well-behaved vLLM but for the paths in ``override``."""
    answers = {"/health": http_answer(""), "/v1/models": models_answer("tiny"),
               "/v1/completions": http_answer({"choices": [{"text": " Paris"}], "usage": {"completion_tokens": 1}}),
               "/metrics": http_answer(metrics, content_type="text/plain")}
    answers.update(override)
    return lambda path: answers[path]


HOSTILE = {
    "trickle": (serving(**{"/health": trickle(http_answer(""), 0.5)}), "/health: no usable answer: no complete answer within 1s"),
    "not_http": (serving(**{"/health": b"SSH-2.0-OpenSSH_9.2p1\r\n"}), "/health: no usable answer: the answer is not HTTP/1.x"),
    "64k_header": (serving(**{"/health": b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 65536 + b"\r\n\r\n"}),
                   "/health: no usable answer: a header line is longer than 8192 bytes"),
    "200_headers": (serving(**{"/health": http_answer("", headers=[b"X-%d: v" % i for i in range(200)])}),
                    "/health: no usable answer: the answer has more than 100 header lines"),
    "deep_json": (serving(**{"/v1/models": http_answer(deep_json())}),
                  "/v1/models answered 200 without a JSON model list: nested deeper than 64 levels"),
}


def host_state_probe(tmp_path, port, probe):
    _venv(tmp_path)
    start = time.monotonic()
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path, port=port, probe=probe),
                                       check=True, env=_probe_env(tmp_path, port), check_rc=True)
    return result, time.monotonic() - start


@pytest.mark.parametrize("row", sorted(HOSTILE))
def test_host_state_probe_of_a_hostile_port_is_not_ready_within_its_timeout(tmp_path, raw, row):
    answer, needle = HOSTILE[row]
    server = raw(answer)
    result, wall = host_state_probe(tmp_path, server.port, {"served_model_name": "tiny", "timeout": 1})
    assert not result.get("failed"), result
    probe = result["probe"]
    assert probe["ready"] is False and probe["reason"] == "not_ready" and probe["msg"].startswith(needle), probe
    assert wall < 1 + SLACK


def test_wait_ready_on_a_trickling_port_ends_at_its_timeout(tmp_path, raw):
    server = raw(serving(**{"/health": trickle(http_answer(""), 0.5)}))
    start = time.monotonic()
    result = _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": server.port, "served_model_name": "tiny", "timeout": 1, "request_timeout": 30, "poll_interval": 0.2},
        check_rc=True)
    wall = time.monotonic() - start
    assert result["failed"] and result["reason"] == "timeout", result
    assert "not ready within 1s (last poll: /health: no usable answer: no complete answer within" in result["msg"]
    assert wall < 1 + SLACK  # request_timeout 30 does not outlast the wait's timeout


@pytest.mark.parametrize("row", ["not_http", "deep_json"])  # every row: the host-state test above, and the client's own
def test_wait_ready_on_protocol_garbage_is_not_ready_not_a_traceback(tmp_path, raw, row):
    answer, needle = HOSTILE[row]
    server = raw(answer)
    result = _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": server.port, "served_model_name": "tiny", "timeout": 1, "poll_interval": 0.3}, check_rc=True)
    assert result["failed"] and result["reason"] == "timeout" and "(last poll: %s" % needle in result["msg"], result


@pytest.mark.parametrize("value", ["NaN", "-5"])  # +Inf and the rest: test_vllm_probe_bounded.py
def test_nan_or_negative_counters_are_not_ready(tmp_path, raw, value):
    metrics = GOOD_METRICS.replace("3.0", value)
    server = raw(serving(metrics=metrics))
    result = host_state_probe(tmp_path, server.port, {"served_model_name": "tiny", "timeout": 1,
                                                      "drafter_dir": str(tmp_path / "drafter")})[0]
    probe = result["probe"]
    assert probe["ready"] is False and probe["reason"] == "metrics_failed", probe
    assert probe["msg"].startswith("not ready: metrics unreadable: vllm:spec_decode_num_accepted_tokens_total")
    waited = _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": server.port, "served_model_name": "tiny", "speculative": True, "timeout": 5}, check_rc=True)
    assert waited["failed"] and waited["reason"] == "metrics_failed" and not waited["ready"]
    assert "not ready: metrics unreadable: " in waited["msg"] and "spec_decode" not in waited


def test_counters_that_fall_across_the_smoke_completion_are_not_ready(tmp_path, raw):
    reads = []

    def answer(path):
        if path == "/metrics":
            reads.append(path)
            # before the completion 21 draft tokens, after it 10: a counter fell
            return http_answer(GOOD_METRICS if len(reads) == 1 else GOOD_METRICS.replace("21.0", "10.0"))
        return serving()(path)
    server = raw(answer)
    waited = _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": server.port, "served_model_name": "tiny", "speculative": True, "timeout": 5}, check_rc=True)
    assert waited["failed"] and waited["reason"] == "metrics_failed"
    assert "not ready: metrics unreadable: num_draft_tokens fell from 21 to 10 without a restart" in waited["msg"]


# ---- FIFOs where a record or a config.json should be ----------------------------------------------------

def _warned(result, needle):
    return needle in repr(result.get("warnings"))


def test_vllm_service_host_state_with_a_fifo_record_or_config_comes_back(tmp_path):
    env = _probe_env(tmp_path, 8000)
    os.mkfifo(str(tmp_path / "t.fact"))
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path), check=True, env=env,
                                       check_rc=True)
    assert result["record"] is None and _warned(result, "t.fact is a FIFO, not a regular file"), result
    assert "sha256" not in result["files"]["record"]
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    os.mkfifo(str(drafter / "config.json"))
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path, drafter=str(drafter)),
                                       check=True, env=env, check_rc=True)
    assert result["failed"] and result["msg"] == (
        "%s is a FIFO, not a regular file; expected a JSON file" % (drafter / "config.json"))


def test_base_host_state_with_a_fifo_record_comes_back(tmp_path):
    from test_base_host_state import _args as base_args
    os.mkfifo(str(tmp_path / "base.fact"))
    result = _module_runner.run_module("base_host_state", tmp_path, base_args(tmp_path), check=True, check_rc=True)
    assert result["record"] is None and _warned(result, "base.fact is a FIFO, not a regular file"), result


def test_python_env_host_state_with_a_fifo_record_comes_back(tmp_path):
    from test_python_env_host_state import _args as env_args
    os.mkfifo(str(tmp_path / "python_env.fact"))
    result = _module_runner.run_module("python_env_host_state", tmp_path, env_args(str(tmp_path)), check=True,
                                       check_rc=True)
    assert result["record"] is None and _warned(result, "python_env.fact is a FIFO, not a regular file"), result


def test_drafter_host_state_with_a_fifo_record_facts_or_config_comes_back(tmp_path):
    from test_drafter_host_state import host as drafter_host  # noqa: F401  pylint: disable=unused-import
    import _dflash_fixtures as fx
    dest = tmp_path / "dest"
    dest.mkdir()
    fx.write_tiny_drafter(dest / "model.safetensors")
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    config = {"target": target, "dest": str(dest / "config.json"), "block_size": 4, "mask_token_id": 1000,
              "layer_types": ["full_attention", "full_attention"], "vllm_version": "0.20.1",
              "layer_id_policy": "report", "mode": "0644"}
    args = {"dest_dir": str(dest), "weights": str(dest / "model.safetensors"),
            "record": str(dest / ".inference-gpu-host-source.json"), "facts": str(tmp_path / "drafter.fact"),
            "target_config": target + "/config.json", "config": config}
    for name in (".inference-gpu-host-source.json", "config.json"):
        os.mkfifo(str(dest / name))
    os.mkfifo(str(tmp_path / "drafter.fact"))
    result = _module_runner.run_module("drafter_host_state", tmp_path, args, check=True, check_rc=True)
    assert not result.get("failed"), result
    assert result["record"] is None and _warned(result, ".inference-gpu-host-source.json is a FIFO"), result
    assert "sha256" not in result["facts"] and "sha256" not in result["record_file"]
    assert result["config"]["decided"] is False and "is not a config.json the module replaces" in result["config"]["reason"]


# ---- the journal unavailable ------------------------------------------------------------------------------

INV = "11111111111111111111111111111111"


def _stub(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _wait_failed_unit(tmp_path, journald, journalctl):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stub(bindir / "systemctl", """
case "$*" in
  *systemd-journald.service*) echo ActiveState=%s; echo SubState=%s ;;
  *"--value"*) echo %s ;;
  *) echo ActiveState=failed; echo SubState=failed; echo NRestarts=0; echo InvocationID=%s; echo LoadState=loaded ;;
esac
""" % (journald[0], journald[1], INV, INV))
    _stub(bindir / "journalctl", journalctl)
    free = RawServer(lambda path: b"")
    port = free.port
    free.close()
    return _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": port, "served_model_name": "tiny", "unit": "vllm@tiny.service", "timeout": 5},
        env={"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))}, check_rc=True)


def test_journald_stopped_says_the_journal_is_unavailable(tmp_path):
    # journalctl with journald stopped: "-- No entries --" (left out by -q) and exit status 0
    result = _wait_failed_unit(tmp_path, ("inactive", "dead"), "exit 0\n")
    assert result["failed"] and result["reason"] == "unit_stopped"
    assert result["msg"].startswith("vllm@tiny.service failed: the unit is failed/failed before it was ready")
    assert result["msg"].endswith(
        "the journal is unavailable (systemd-journald.service is inactive/dead, so nothing the unit printed was "
        "kept), so no root cause could be read")
    assert "no root cause found in its log" not in result["msg"]
    assert result["journal_unavailable"].startswith("systemd-journald.service is inactive/dead")


def test_journalctl_failing_says_the_journal_is_unavailable(tmp_path):
    result = _wait_failed_unit(tmp_path, ("active", "running"),
                               'echo "Failed to get journal access: No such file or directory" >&2\nexit 1\n')
    assert "the journal is unavailable (reading the journal of vllm@tiny.service failed (" in result["msg"]
    assert "rc=1): Failed to get journal access: No such file or directory), so no root cause could be read" in (
        result["msg"])
    assert "no root cause found in its log" not in result["msg"] and "journal_unavailable" in result


def test_an_empty_journal_with_journald_running_says_so(tmp_path):
    result = _wait_failed_unit(tmp_path, ("active", "running"), "exit 0\n")
    assert result["msg"].endswith("its log has no line of this run, so no root cause could be read")
    assert "journal_unavailable" not in result


def test_without_unit_or_log_the_message_says_no_log_was_read(tmp_path, raw):
    server = raw(serving(**{"/health": http_answer("", status="503 Service Unavailable")}))
    result = _module_runner.run_module("vllm_wait_ready", tmp_path, {
        "port": server.port, "served_model_name": "tiny", "timeout": 1, "poll_interval": 0.3}, check_rc=True)
    assert result["msg"].endswith("no log was read (give unit or log_path for the root cause)"), result["msg"]
