# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_failure_cause run for real as a subprocess, on the real captured vLLM logs."""

from __future__ import absolute_import, division, print_function

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position
from _result_checks import assert_valid_utf8  # noqa: E402  pylint: disable=wrong-import-position

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
    assert res["message"].startswith(
        "cpu-0.32.0-gpu-memory-utilization-too-high.log failed: ValueError: Available memory")
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
    assert recorded[1] == ("journalctl --no-pager -q -o cat -n 5000"
                           " _SYSTEMD_INVOCATION_ID=0123456789abcdef0123456789abcdef"
                           " + INVOCATION_ID=0123456789abcdef0123456789abcdef")


def test_unit_with_given_invocation(tmp_path, fake_systemd):
    env, calls = fake_systemd
    inv = "ffffffffffffffffffffffffffffffff"
    res = run_module(tmp_path, {"unit": "vllm@tiny.service", "invocation_id": inv, "journal_lines": 100},
                     env_extra=env)
    assert res["invocation_id"] == inv
    recorded = calls.read_text().splitlines()
    assert len(recorded) == 1 and "-n 100 _SYSTEMD_INVOCATION_ID=" + inv in recorded[0]


# ---- logs of any size and encoding ---------------------------------------------------------------------


def _bad_byte_log(tmp_path, name="bad.log"):
    """The real log of a worker's ValueError, with one non-UTF-8 byte in the exception line and in a frame."""
    with open(os.path.join(LOGS, "cpu-0.32.0-gpu-memory-utilization-too-high.log"), "rb") as fh:
        raw = fh.read()
    raw = raw.replace(b"ValueError: Available memory", b"ValueError: Available \xffmemory", 1)
    raw = raw.replace(b'  File "', b'  File "\xfe', 1)
    path = tmp_path / name
    path.write_bytes(raw)
    return str(path)


def test_non_utf8_byte_in_the_traceback_still_gives_the_cause(tmp_path):
    res = run_module(tmp_path, {"path": _bad_byte_log(tmp_path)})
    assert not res.get("failed"), res
    assert_valid_utf8(res)
    assert res["found"] is True
    assert res["exception_type"] == "ValueError"
    assert res["hint_id"] == "memory_utilization_too_high"
    assert res["process"] == "VllmWorker-0"
    assert res["cause"].startswith(u"Available \ufffdmemory on node 0")
    assert res["message"].startswith(u"bad.log failed: ValueError: Available \ufffdmemory")
    assert res["lines_read"] == 169


def test_non_utf8_bytes_in_the_journal_and_in_journalctl_errors(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = _bad_byte_log(tmp_path)
    _stub(bindir / "systemctl", "echo 0123456789abcdef0123456789abcdef\n")
    _stub(bindir / "journalctl", "cat %s\n" % log)
    env = {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))}
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"}, env_extra=env)
    assert not res.get("failed"), res
    assert_valid_utf8(res)
    assert res["hint_id"] == "memory_utilization_too_high"
    assert u"\ufffd" in res["cause"]
    # journalctl fails: its stderr (bad bytes too) is in the message, as valid UTF-8
    _stub(bindir / "journalctl", "printf 'No journal files were found \\377\\n' >&2\nexit 1\n")
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"}, env_extra=env)
    assert res["failed"] is True
    assert_valid_utf8(res)
    assert res["msg"].startswith("reading the journal of vllm@tiny.service failed (")
    assert res["msg"].endswith(u"rc=1): No journal files were found \ufffd")


def _write_big_log(path, size):
    """``size`` bytes of long INFO lines with a few large writes, then the real failure with a bad byte."""
    line = b"(APIServer pid=7) INFO 12-02 18:12:46 [loggers.py:1] " + b"Avg prompt throughput: 1.0 tokens/s, " * 100
    block = (line + b"\n") * (4 * 1024 * 1024 // (len(line) + 1))
    with open(os.path.join(LOGS, "gpu-0.22.0-flash-attn-4.log"), "rb") as fh:
        tail = fh.read().replace(b"No module named 'flash_attn.ops'", b"No module named 'flash_attn.ops' \xff")
    with open(path, "wb") as fh:
        for _repeat in range(size // len(block)):
            fh.write(block)
        fh.write(b"\x00" * (20 * 1024 * 1024) + b"\n")  # and one 20 MB line
        fh.write(tail)


def _run_measured(tmp_path, args):
    """The module run as _module_runner runs it, also returning the child's peak RSS (os.wait4's rusage).

    The runner cannot say how much memory the module used; os.wait4 reports it for exactly this child.
    """
    args_file = str(tmp_path / "measured-args.json")
    with open(args_file, "w") as fh:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, fh)
    env = dict(os.environ, PYTHONPATH=_module_runner.COLLECTIONS)
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", _module_runner.PREFIX + "vllm_failure_cause", args_file],
                                env=env, cwd=str(tmp_path), stdout=out, stderr=subprocess.DEVNULL)
        _pid, _status, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        out.seek(0)
        stdout = out.read()
    return stdout, usage.ru_maxrss * 1024


def test_big_log_bounded_memory_and_result(tmp_path):
    """A 64 MB log with a 20 MB line: the module's memory grows by far less than the log, its result stays small."""
    big = str(tmp_path / "big.log")
    _write_big_log(big, 64 * 1024 * 1024)
    assert os.path.getsize(big) > 80 * 1024 * 1024
    small_out, small_rss = _run_measured(tmp_path, {"path": os.path.join(LOGS, "gpu-0.22.0-flash-attn-4.log")})
    big_out, big_rss = _run_measured(tmp_path, {"path": big})
    os.remove(big)  # pytest keeps its last tmp dirs: do not leave 84 MB behind
    assert json.loads(small_out)["hint_id"] == "flash_attn_ops"
    res = json.loads(big_out.decode("utf-8"))  # strict: bytes -> str -> JSON
    assert_valid_utf8(res)
    assert res["hint_id"] == "flash_attn_ops", res.get("msg")
    assert res["cause"] == u"No module named 'flash_attn.ops' \ufffd"
    assert res["lines_cut"] >= 1
    assert len(big_out) < 64 * 1024, len(big_out)
    # the old reader held the whole file, decoded, and its lines: several times 84 MB
    assert big_rss - small_rss < 32 * 1024 * 1024, (big_rss - small_rss) / 1e6


def test_caps_are_reported(tmp_path):
    log = tmp_path / "long.log"
    log.write_bytes(b"Traceback (most recent call last):\n" + b'  File "/x.py", line 1, in f\n' * 500
                    + b"ValueError: " + b"v" * 10000 + b"\n")
    res = run_module(tmp_path, {"path": str(log), "max_lines": 200})
    assert len(res["relevant_lines"]) == 200
    assert res["relevant_lines_left_out"] == 502 - 199
    assert res["truncated"] is True
    assert res["lines_cut"] == 1
    assert res["relevant_lines"][-1].endswith(" [... cut: the line has 10012 bytes]")
    assert len(res["cause"]) < 2100


# ---- every option is checked ---------------------------------------------------------------------------

def _logs_dir(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "dir").mkdir()
    (logs / "ok.log").write_text("x\n")
    os.mkfifo(str(logs / "fifo"))
    return logs


def _snapshot(root):
    return sorted((name, os.lstat(os.path.join(str(root), name)).st_mtime_ns) for name in os.listdir(str(root)))


@pytest.mark.parametrize("path,message", [
    ("logs/ok.log", r"^path must be an absolute path to a vLLM log file, got the relative path logs/ok\.log$"),
    ("{logs}/nope.log", r"^path: /.*/logs/nope\.log does not exist; expected a vLLM log file$"),
    ("{logs}/dir", r"^path: /.*/logs/dir is a directory; expected a vLLM log file"),
    ("{logs}/fifo", r"^path: /.*/logs/fifo is not a regular file \(a device, pipe or socket\)"),
    ("/dev/zero", r"^path: /dev/zero is not a regular file"),
])
def test_bad_path_fails_naming_the_option(tmp_path, path, message):
    logs = _logs_dir(tmp_path)
    before = _snapshot(logs)
    res = run_module(tmp_path, {"path": path.format(logs=logs)})
    assert res["failed"] is True
    assert re.search(message, res["msg"]), res["msg"]
    assert _snapshot(logs) == before


def test_bad_options_are_all_reported(tmp_path):
    res = run_module(tmp_path, {"unit": "-x.service", "invocation_id": "0123; rm -rf /", "since": " ",
                                "journal_lines": 0, "max_lines": 500})
    assert res["failed"] is True
    msg = res["msg"]
    assert msg.startswith("vllm_failure_cause: unit must be a systemd unit name such as vllm@tiny.service")
    assert "invocation_id must be a systemd invocation id (32 hex digits" in msg
    assert "since must be a journalctl time" in msg
    assert "journal_lines must be from 1 to 1000000, got 0" in msg
    assert "max_lines must be from 3 to 200, got 500" in msg


@pytest.mark.parametrize("args,message", [
    ({"text": "x", "invocation_id": "0123456789abcdef0123456789abcdef"}, "required by 'invocation_id': unit"),
    ({"text": "x", "since": "-1h"}, "required by 'since': unit"),
    ({"text": "x", "max_lines": 2}, "max_lines must be from 3 to 200, got 2"),
])
def test_options_that_need_another(tmp_path, args, message):
    res = run_module(tmp_path, args)
    assert res["failed"] is True
    assert message in res["msg"]


# ---- the journal unavailable (issue 27: it said "no root cause found in its log") ----------------------

def _journal_stubs(tmp_path, journald, journalctl="exit 0\n"):
    """systemctl answering for the unit and for systemd-journald.service, and journalctl as given."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stub(bindir / "systemctl", """
case "$*" in
  *systemd-journald.service*) echo ActiveState=%s; echo SubState=%s ;;
  *) echo 0123456789abcdef0123456789abcdef ;;
esac
""" % journald)
    _stub(bindir / "journalctl", journalctl)
    return {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))}


def test_journald_stopped_says_the_journal_is_unavailable(tmp_path):
    # journalctl with journald stopped: "-- No entries --" (left out by -q) and exit status 0
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"}, env_extra=_journal_stubs(tmp_path, ("inactive", "dead")))
    assert not res.get("failed"), res
    assert res["found"] is False and res["lines_read"] == 0
    assert res["message"] == (
        "vllm@tiny.service: the journal is unavailable (systemd-journald.service is inactive/dead, so nothing the "
        "unit printed was kept), so no root cause could be read")
    assert res["journal_unavailable"] == (
        "systemd-journald.service is inactive/dead, so nothing the unit printed was kept")
    assert "no root cause found in its log" not in res["message"]


def test_an_empty_journal_with_journald_running_says_no_cause_found(tmp_path):
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"}, env_extra=_journal_stubs(tmp_path, ("active", "running")))
    assert not res.get("failed"), res
    assert res["message"] == "vllm@tiny.service: no root cause found in its log (see relevant_lines)"
    assert "journal_unavailable" not in res


def test_a_cause_found_is_given_even_with_journald_stopped(tmp_path):
    # what the journal still holds of this invocation is evidence: journald's state is asked only without a cause
    log = os.path.join(LOGS, "cpu-0.32.0-drafter-fc-width-mismatch.log")
    res = run_module(tmp_path, {"unit": "vllm@tiny.service"},
                     env_extra=_journal_stubs(tmp_path, ("inactive", "dead"), "cat %s\n" % log))
    assert res["hint_id"] == "weight_shape_mismatch" and "journal_unavailable" not in res
