# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The root-cause reader on logs of any size and encoding: bounded memory, capped results, valid UTF-8.

Real vLLM logs (data/vllm_logs/) with bad bytes, CRLF and NULs mixed in; big logs generated in tmp_path
with a few large writes; Hypothesis for random bytes and random mixes of real traceback lines and garbage.
"""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import sys
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    MAX_LINE_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_RELEVANT_LINES,
    MAX_TEXT_CHARS,
    CommandOutput,
    VllmLogError,
    check_unit_name,
    failure_message,
    find_root_cause,
    iter_log_lines,
    journal_command,
    open_log_file,
    read_unit_journal,
    safe_text,
)
from _result_checks import assert_valid_utf8  # noqa: E402  pylint: disable=wrong-import-position

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vllm_logs")
MB = 1024 * 1024
MEMORY_LIMIT = 32 * MB
MARKER_ROOM = 60  # the longest cut marker appended to a capped line or text

# file -> (exception type, hint id) the clean log gives (test_vllm_log.py checks them against the logs' meaning)
LOGS = {
    "cuda-0.20.1-no-gpu.log": ("RuntimeError", "no_gpu"),
    "cpu-0.32.0-gpu-memory-utilization-too-high.log": ("ValueError", "memory_utilization_too_high"),
    "cpu-0.32.0-drafter-fc-width-mismatch.log": ("AssertionError", "weight_shape_mismatch"),
    "cpu-0.32.0-journal-libnuma-missing.log": ("AttributeError", "vllm_extension_not_loaded"),
    "cpu-0.32.0-speculative-config-bad-type.log": ("pydantic_core._pydantic_core.ValidationError",
                                                   "invalid_config_value"),
    "cpu-0.32.0-token-id-beyond-vocab.log": ("std::runtime_error", "token_id_out_of_range"),
    "gpu-0.22.0-flash-attn-4.log": ("ModuleNotFoundError", "flash_attn_ops"),
}
KEYS = ("found", "cause", "exception_type", "hint", "hint_id", "process", "pid", "wrapper_only")


def _raw(name):
    with open(os.path.join(DATA, name), "rb") as fh:
        return fh.read()


def _all_real_lines():
    lines = []
    for name in sorted(os.listdir(DATA)):
        if name.endswith(".log"):
            lines.extend(_raw(name).splitlines())
    return lines


REAL_LINES = _all_real_lines()
SHORT_LINES = [ln for ln in REAL_LINES if len(ln) < 600]
# The lines that drive the reader: tracebacks, exception lines, wrappers, C++ aborts, systemd's lines.
TRACEBACK_LINES = [ln for ln in REAL_LINES if any(k in ln for k in (
    b"Traceback", b"  File ", b"Error", b"Exception", b"what()", b"terminate called", b"above exception",
    b"Value error", b"Main process exited", b"error:", b"Failed to import"))]


def assert_within_caps(res, max_lines=40):
    assert_valid_utf8(res)
    assert len(res["relevant_lines"]) <= max_lines
    for line in res["relevant_lines"]:
        assert len(line) <= MAX_LINE_CHARS + MARKER_ROOM
    for key in ("cause", "exception_type", "hint"):
        assert res[key] is None or len(res[key]) <= MAX_TEXT_CHARS + MARKER_ROOM
    assert len(failure_message("u", res)) <= MAX_MESSAGE_CHARS + MARKER_ROOM
    # the whole result, as JSON: bounded by the caps, not by the log
    size = len(json.dumps(res, ensure_ascii=False).encode("utf-8"))
    assert size <= 4 * (max_lines * (MAX_LINE_CHARS + MARKER_ROOM + 8) + 3 * (MAX_TEXT_CHARS + MARKER_ROOM) + 1000)


def _peak(func):
    """(func's result, the peak of memory Python allocated while it ran)."""
    tracemalloc.start()
    try:
        result = func()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


# ---- bad bytes, CRLF, NULs in real logs ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(LOGS))
def test_bad_bytes_crlf_and_nuls_do_not_hide_the_cause(name):
    """A bad byte in every frame line, CRLF line ends, a NUL and a line of garbage: the same root cause."""
    clean = find_root_cause(_raw(name))
    assert (clean["exception_type"], clean["hint_id"]) == LOGS[name]
    dirty = b"\xff\xfe\x00garbage \x80\x81\n" + _raw(name).replace(b'  File "', b'  File "\xff\xc3').replace(
        b"\n", b"\r\n").replace(b"Loading", b"Load\x00ing")
    res = find_root_cause(dirty)
    for key in KEYS:
        assert res[key] == clean[key], key
    assert_within_caps(res)
    frames = [line for line in res["relevant_lines"] if 'File "' in line]
    assert all("\ufffd" in line for line in frames)


def test_bad_byte_inside_the_exception_message():
    raw = _raw("cpu-0.32.0-gpu-memory-utilization-too-high.log").replace(
        b"ValueError: Available memory", b"ValueError: Available \xff\xfememory")
    res = find_root_cause(raw)
    assert res["found"] is True
    assert res["exception_type"] == "ValueError"
    assert res["hint_id"] == "memory_utilization_too_high"
    assert res["cause"].startswith("Available \ufffd\ufffdmemory")
    assert res["process"] == "VllmWorker-0"
    assert_within_caps(res)


def test_str_with_lone_surrogates_gives_valid_utf8():
    """Text decoded with surrogateescape (or JSON's \\udcxx escapes) reaches the reader as lone surrogates."""
    text = _raw("gpu-0.22.0-flash-attn-4.log").replace(b"No module named", b"\xff No module named").decode(
        "utf-8", "surrogateescape")
    assert "\udcff" in text
    res = find_root_cause(text)
    assert res["hint_id"] == "flash_attn_ops"
    assert res["cause"].startswith("\ufffd")
    assert_within_caps(res)
    lines = find_root_cause(text.splitlines())
    assert lines["cause"] == res["cause"]


def test_text_file_and_list_read_the_same():
    raw = _raw("cpu-0.32.0-journal-libnuma-missing.log")
    as_bytes = find_root_cause(raw)
    for other in (raw.decode("utf-8"), io.BytesIO(raw), raw.splitlines(), raw.decode("utf-8").splitlines(),
                  io.StringIO(raw.decode("utf-8"))):
        assert find_root_cause(other) == as_bytes


# ---- caps ----------------------------------------------------------------------------------------------

def test_long_exception_message_is_cut_with_a_marker():
    text = "Traceback (most recent call last):\n  File \"/x.py\", line 1, in f\nValueError: " + "y" * 100000 + "\n"
    res = find_root_cause(text)
    assert res["exception_type"] == "ValueError"
    assert res["truncated"] is True
    assert res["lines_cut"] == 1
    assert res["relevant_lines"][-1].endswith(" [... cut: the line has 100012 characters]")
    assert len(res["cause"]) <= MAX_TEXT_CHARS + MARKER_ROOM
    assert res["cause"].startswith("yyyy")
    assert_within_caps(res)


def test_huge_traceback_keeps_its_first_line_and_tail():
    """A RecursionError prints thousands of frames: the first line, a count of what was left out, the tail."""
    frames = '  File "/x.py", line 3, in f\n    return f()\n' * 50000
    text = "Traceback (most recent call last):\n" + frames + "RecursionError: maximum recursion depth exceeded\n"
    res = find_root_cause(text, max_lines=10)
    lines = res["relevant_lines"]
    assert len(lines) == 10
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == "... (%d lines left out)" % (100002 - 9)
    assert res["relevant_lines_left_out"] == 100002 - 9
    assert lines[-1] == "RecursionError: maximum recursion depth exceeded"
    assert res["truncated"] is True


def test_max_lines_is_capped():
    with pytest.raises(VllmLogError, match="max_lines must be an integer from 3 to 200"):
        find_root_cause("x", max_lines=MAX_RELEVANT_LINES + 1)
    res = find_root_cause(_raw("cpu-0.32.0-journal-no-cxx-compiler.log"), max_lines=MAX_RELEVANT_LINES)
    assert len(res["relevant_lines"]) <= MAX_RELEVANT_LINES
    assert res["hint_id"] == "no_cxx_compiler"


def test_no_cause_returns_the_tail_within_caps():
    res = find_root_cause(b"\x00\x01\x02" * 100000 + b"\n" + b"INFO something\n" * 10000, max_lines=5)
    assert res["found"] is False
    assert res["relevant_lines"] == ["INFO something"] * 5
    assert res["lines_read"] == 10001
    assert res["lines_cut"] == 1
    assert res["truncated"] is False


def test_safe_text_and_failure_message_are_bounded():
    assert safe_text("a\udcffb") == "a\ufffdb"
    assert safe_text("x" * 10, 4) == "xxxx [... cut: 10 characters in all]"
    res = find_root_cause("RuntimeError: " + "z" * 50000)
    assert res["found"] is False  # no traceback, no logger ERROR line
    res = find_root_cause("ERROR 12-02 18:12:46 [core.py:1] " + "z\udcff" * 5000)
    msg = failure_message("u\udcff" * 1000, res)
    assert len(msg) <= MAX_MESSAGE_CHARS + MARKER_ROOM
    msg.encode("utf-8")


# ---- big logs: bounded memory --------------------------------------------------------------------------

def _write_big_log(path, size, tail):
    """``size`` bytes of long INFO lines (a few large writes, so it is quick), then ``tail``."""
    line = b"(APIServer pid=7) INFO 12-02 18:12:46 [loggers.py:1] " + b"Avg prompt throughput: 1.0 tokens/s, " * 100
    block = (line + b"\n") * (4 * MB // (len(line) + 1))
    with open(path, "wb") as fh:
        for _repeat in range(size // len(block)):
            fh.write(block)
        fh.write(tail)


def test_big_log_is_read_with_bounded_memory(tmp_path):
    path = str(tmp_path / "big.log")
    _write_big_log(path, 64 * MB, _raw("cpu-0.32.0-gpu-memory-utilization-too-high.log").replace(
        b"Available memory", b"Available \xffmemory"))
    assert os.path.getsize(path) > 60 * MB

    def read():
        with open_log_file(path) as fh:
            return find_root_cause(fh)

    res, peak = _peak(read)
    os.remove(path)  # pytest keeps its last tmp dirs: do not leave 64 MB behind
    assert peak < MEMORY_LIMIT, "peak %.1f MB" % (peak / MB)
    assert res["hint_id"] == "memory_utilization_too_high"
    assert res["process"] == "VllmWorker-0"
    assert res["lines_read"] > 17000
    assert_within_caps(res)


def test_single_huge_line_is_cut_while_reading(tmp_path):
    """50 MB without a newline (a binary dump, a runaway progress bar), then the failure."""
    path = str(tmp_path / "one-line.log")
    with open(path, "wb") as fh:
        for _repeat in range(50):
            fh.write(b"\x00x\xff" * (MB // 3))
        fh.write(b"\n" + _raw("cuda-0.20.1-no-gpu.log"))

    def read():
        with open_log_file(path) as fh:
            return find_root_cause(fh)

    res, peak = _peak(read)
    assert peak < MEMORY_LIMIT, "peak %.1f MB" % (peak / MB)
    assert res["hint_id"] == "no_gpu"
    assert res["lines_cut"] == 1
    assert_within_caps(res)
    # the same line at the very end, no newline, nothing else: the log's tail is that cut line
    with open(path, "wb") as fh:
        for _repeat in range(50):
            fh.write(b"y" * MB)
    with open_log_file(path) as fh:
        res = find_root_cause(fh)
    os.remove(path)
    assert res["found"] is False
    assert res["relevant_lines"] == ["y" * MAX_LINE_CHARS + " [... cut: the line has %d bytes]" % (50 * MB)]
    assert res["truncated"] is True


def test_many_processes_keep_memory_bounded():
    """Thousands of children printing interleaved tracebacks (a hostile or corrupt log): bounded, no error."""
    parts = []
    for pid in range(3000):
        parts.append("(Worker_%d pid=%d) Traceback (most recent call last):\n" % (pid, pid))
    for pid in range(3000):
        parts.append('(Worker_%d pid=%d)   File "/x.py", line 1, in f\n' % (pid, pid))
        parts.append("(Worker_%d pid=%d) RuntimeError: Engine core initialization failed\n" % (pid, pid))
    parts.append("(Worker_1 pid=9) Traceback (most recent call last):\n(Worker_1 pid=9)   File \"/y.py\"\n"
                 "(Worker_1 pid=9) OSError: [Errno 98] Address already in use\n")
    res, peak = _peak(lambda: find_root_cause("".join(parts)))
    assert peak < MEMORY_LIMIT
    assert res["hint_id"] == "port_in_use"
    assert res["pid"] == 9


def test_iter_log_lines_splits_like_splitlines():
    data = b"a\r\nb\rc\n\nd\x00\xff\n" + b"e" * 10000
    lines = list(iter_log_lines(data))
    assert lines[:5] == ["a", "b", "c", "", "d\x00\ufffd"]
    assert lines[5] == "e" * MAX_LINE_CHARS + " [... cut: the line has 10000 bytes]"


# ---- log files and commands ----------------------------------------------------------------------------

def _snapshot(root):
    return sorted((p, os.lstat(os.path.join(root, p)).st_size) for p in os.listdir(root))


def test_open_log_file_refuses_what_is_not_a_log_file(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "ok.log").write_bytes(b"x\n")
    os.mkfifo(str(tmp_path / "fifo"))
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "dangling"))
    os.symlink(str(tmp_path / "ok.log"), str(tmp_path / "link.log"))
    before = _snapshot(str(tmp_path))
    cases = [
        ("relative.log",
         r"^log_path must be an absolute path to a vLLM log file, got the relative path relative\.log$"),
        (str(tmp_path / "nope.log"), r"^log_path: .*/nope\.log does not exist; expected a vLLM log file$"),
        (str(tmp_path / "dangling"), r"^log_path: .*/dangling does not exist"),
        (str(tmp_path / "ok.log" / "x"), r"^log_path: .*/ok\.log/x does not exist"),
        (str(tmp_path / "dir"), r"^log_path: .*/dir is a directory; expected a vLLM log file"),
        (str(tmp_path / "fifo"), r"^log_path: .*/fifo is not a regular file \(a device, pipe or socket\)"),
        ("/dev/null", r"^log_path: /dev/null is not a regular file"),
        ("", r"^log_path: expected the absolute path of a vLLM log file"),
    ]
    for path, message in cases:
        with pytest.raises(VllmLogError, match=message):
            open_log_file(path, "log_path")
    with open_log_file(str(tmp_path / "link.log")) as fh:
        assert fh.read() == b"x\n"
    assert _snapshot(str(tmp_path)) == before


def test_command_output_streams_and_checks_the_exit_status():
    script = ("import sys; out = sys.stdout.buffer; out.write(open(sys.argv[1], 'rb').read().replace("
              "b'No module', b'\\xffNo module')); out.flush(); sys.stderr.write('boom ' * 10000); "
              "sys.exit(int(sys.argv[2]))")
    log = os.path.join(DATA, "gpu-0.22.0-flash-attn-4.log")
    with CommandOutput([sys.executable, "-c", script, log, "0"], "reading test output") as out:
        res = find_root_cause(out)
    assert res["hint_id"] == "flash_attn_ops"
    assert res["cause"].startswith("\ufffdNo module")
    with pytest.raises(VllmLogError, match=r"^reading test output failed \(.*, rc=3\): boom boom") as err:
        with CommandOutput([sys.executable, "-c", script, log, "3"], "reading test output") as out:
            find_root_cause(out)
    assert len(str(err.value)) < MAX_TEXT_CHARS + 1000
    with pytest.raises(VllmLogError, match="cannot run /nonexistent/journalctl"):
        CommandOutput(["/nonexistent/journalctl"], "reading the journal")


def test_read_unit_journal_streams_bytes():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "0123456789abcdef0123456789abcdef\n", ""

    def stream(argv, what):
        calls.append(argv)
        return io.BytesIO(_raw("cpu-0.32.0-drafter-fc-width-mismatch.log").replace(b"Tried", b"\xffTried"))

    log, info = read_unit_journal(run, "vllm@tiny.service", stream=stream)
    res = find_root_cause(log)
    assert res["hint_id"] == "weight_shape_mismatch"
    assert res["cause"].startswith("\ufffdTried to load weights")
    assert info["invocation_id"] == "0123456789abcdef0123456789abcdef"
    assert "_SYSTEMD_INVOCATION_ID=0123456789abcdef0123456789abcdef" in calls[-1]


def test_read_unit_journal_without_stream_decodes_bytes_with_replacement():
    def run(argv):
        if "InvocationID" in argv:
            return 0, b"0123456789abcdef0123456789abcdef\n", b""
        return 0, b"ok\n\xff bad\n" + b"z" * 9000 + b"\n", b""

    lines, _info = read_unit_journal(run, "vllm@tiny.service")
    assert lines[:2] == ["ok", "\ufffd bad"]
    assert lines[2].endswith(" [... cut: the line has 9000 bytes]")


@pytest.mark.parametrize("unit", ["", "-u", "--since=yesterday", "a b.service", "x;rm.service", "u\n.service",
                                  "x" * 300, None, 3])
def test_unit_names_are_checked(unit):
    with pytest.raises(VllmLogError, match="^unit must be a systemd unit name"):
        check_unit_name(unit)
    with pytest.raises(VllmLogError):
        journal_command(unit)


def test_journal_lines_are_checked():
    for bad in (0, -5, 10 ** 9, True, "5"):
        with pytest.raises(VllmLogError, match="journal_lines must be an integer from 1 to 1000000"):
            journal_command("vllm@tiny.service", lines=bad)


# ---- properties ----------------------------------------------------------------------------------------

SEPARATORS = [b"\n", b"\r\n", b"\r", b"", b"\x00", b"\n\n"]
GARBAGE = st.binary(max_size=200)
PIECE = st.one_of(st.sampled_from(TRACEBACK_LINES), st.sampled_from(SHORT_LINES), GARBAGE,
                  st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00" * 8,
                                   b"Traceback (most recent call last):", b"(Worker pid=3) ", b"[rank0]: ",
                                   b"ERROR 12-02 18:12:46 [x.py:1] "]))
MIXED = st.lists(st.tuples(PIECE, st.sampled_from(SEPARATORS)), max_size=40).map(
    lambda parts: b"".join(p + s for p, s in parts))


@given(data=st.binary(max_size=3000), max_lines=st.integers(min_value=3, max_value=MAX_RELEVANT_LINES))
def test_random_bytes_never_raise_and_stay_within_caps(data, max_lines):
    res = find_root_cause(data, max_lines=max_lines)
    assert_within_caps(res, max_lines)
    failure_message("u", res).encode("utf-8")


@given(data=MIXED, max_lines=st.integers(min_value=3, max_value=12))
def test_real_lines_mixed_with_garbage_stay_within_caps(data, max_lines):
    res = find_root_cause(data, max_lines=max_lines)
    assert_within_caps(res, max_lines)
    # the same log as text decoded by the caller gives the same answer (bytes are decoded line by line;
    # a cut line's marker counts bytes in one and characters in the other)
    if max(len(line) for line in data.split(b"\n")) < MAX_LINE_CHARS:
        assert find_root_cause(data.decode("utf-8", "replace"), max_lines=max_lines) == res
    # and text that kept the bad bytes as lone surrogates gives valid UTF-8 too
    assert_within_caps(find_root_cause(data.decode("utf-8", "surrogateescape"), max_lines=max_lines), max_lines)


@settings(max_examples=40)
@given(parts=st.lists(st.tuples(st.sampled_from(TRACEBACK_LINES), st.integers(min_value=0, max_value=12000)),
                      min_size=1, max_size=8))
def test_long_lines_are_cut_within_caps(parts):
    """Real lines padded past the line cap (some with a bad byte where a cut may split a character)."""
    data = b"\n".join(line + b"\xe2\x82\xac" * (pad // 3) + b"\xff" * (pad % 2) for line, pad in parts)
    res = find_root_cause(data)
    assert_within_caps(res)
    longer = [line for line in data.split(b"\n") if len(line.decode("utf-8", "replace")) > MAX_LINE_CHARS]
    assert len(longer) <= res["lines_cut"] <= res["lines_read"]
    assert all(len(line) <= MAX_LINE_CHARS + MARKER_ROOM for line in res["relevant_lines"])
