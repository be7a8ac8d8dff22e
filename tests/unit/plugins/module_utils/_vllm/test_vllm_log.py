# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The root-cause reader (plugins/module_utils/_vllm/log.py).

On real vLLM logs (data/vllm_logs/, README.md there says how each was made; the H200 runs' evidence under
tests/gpu/evidence/), and on logs of any size and encoding: bounded memory, capped results, valid UTF-8 (real logs
with bad bytes, CRLF and NULs mixed in; big logs generated in tmp_path with a few large writes; Hypothesis for
random bytes and random mixes of real traceback lines and garbage).
"""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import re
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    KNOWN_CAUSES,
    MAX_LINE_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_RELEVANT_LINES,
    MAX_TEXT_CHARS,
    VllmLogError,
    WRAPPERS,
    failure_message,
    find_root_cause,
    iter_log_lines,
    open_log_file,
    parse_line,
)
from _result_checks import assert_valid_utf8  # noqa: E402  pylint: disable=wrong-import-position

UNIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/unit/plugins/module_utils
DATA = os.path.join(UNIT, "data", "vllm_logs")


# file -> (exception type (regex), text the cause must contain, hint id, process that printed it)
EXPECTED = {
    "cuda-0.20.1-no-gpu.log": (
        r"^RuntimeError$", "Failed to infer device type", "no_gpu", None),
    "cpu-0.32.0-misspelt-flag.log": (
        r"^argparse error", "unrecognized arguments: --max-modle-len", "unrecognized_argument", None),
    "cpu-0.32.0-batched-tokens-below-max-model-len.log": (
        r"ValidationError$", "max_num_batched_tokens (256) is smaller than max_model_len (512)",
        "batched_tokens_below_max_model_len", None),
    "cpu-0.32.0-gpu-memory-utilization-too-high.log": (
        r"^ValueError$", "is less than desired CPU memory utilization (0.99", "memory_utilization_too_high",
        "VllmWorker-0"),
    "cpu-0.32.0-drafter-fc-width-mismatch.log": (
        r"^AssertionError$", "Tried to load weights of size torch.Size([256, 768])", "weight_shape_mismatch",
        "Worker"),
    "cpu-0.32.0-port-in-use.log": (
        r"^OSError$", "Address already in use", "port_in_use", None),
    # pydantic error with a field line (no "Value error"): "num_speculative_tokens: Input should be ..."
    "cpu-0.32.0-speculative-config-bad-type.log": (
        r"ValidationError$", "num_speculative_tokens: Input should be a valid integer", "invalid_config_value", None),
    "cpu-0.32.0-model-path-missing.log": (
        r"HFValidationError$", "'/root/tiny/no-such-model'", "model_not_found", None),
    # after warm-up, at KV cache allocation (--kv-cache-memory-bytes 200 GB)
    "cpu-0.32.0-kv-cache-too-small.log": (
        r"^ValueError$", "on kv cache allocation is less than requested memory for kv (186.26 GiB)",
        "kv_cache_allocation", "Worker"),
    # journald: no g++ in the container, torch.compile's warm-up fails in the worker
    "cpu-0.32.0-journal-no-cxx-compiler.log": (
        r"InductorError$", "No working C++ compiler found", "no_cxx_compiler", "Worker"),
    # /health and /v1/models answered, the first completion killed the worker (C++ abort, unprefixed stderr)
    "cpu-0.32.0-token-id-beyond-vocab.log": (
        r"^std::runtime_error$", "index out of bounds: 0 <= tmp3 < 256L", "token_id_out_of_range", None),
    # journalctl (short format) of a real systemd unit in an LXC container lacking libnuma1
    "cpu-0.32.0-journal-libnuma-missing.log": (
        r"^AttributeError$", "object has no attribute 'init_cpu_memory_env'", "vllm_extension_not_loaded",
        "VllmWorker-0"),
    # captured on a real H200 (tests/gpu/evidence/h200-run1-vllm-0.22.0): flash-attn-4 alone, vLLM 0.22.0
    "gpu-0.22.0-flash-attn-4.log": (
        r"^ModuleNotFoundError$", "No module named 'flash_attn.ops'", "flash_attn_ops", "EngineCore"),
    "synthetic-gpu-flash-attn-ops.log": (
        r"^ModuleNotFoundError$", "No module named 'flash_attn.ops'", "flash_attn_ops", "EngineCore"),
}
OPTIONAL = {}  # logs that may be absent (none now)
HEALTHY = ["cpu-0.32.0-dflash-ok.log"]
# Served on the V2 model runner (H200, vLLM 0.26.0, flash-attn-4 alone): test_vllm_log_gpu_v2.py reads it.
HEALTHY_V2 = ["gpu-0.26.0-v2-flash-attn-4-served.log"]


def _read(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as fh:
        return fh.read()


def _cases():
    cases = dict(EXPECTED)
    for name, exp in OPTIONAL.items():
        if os.path.exists(os.path.join(DATA, name)):
            cases[name] = exp
    return sorted(cases.items())


def _is_wrapper_text(text):
    for t, m in WRAPPERS:
        if m and re.search(m, text or ""):
            return True
    return False


def test_every_log_file_is_covered():
    """A log added to the data folder without an expectation is a test nobody wrote."""
    on_disk = sorted(f for f in os.listdir(DATA) if f.endswith(".log"))
    covered = sorted(set(EXPECTED) | set(OPTIONAL) | set(HEALTHY) | set(HEALTHY_V2))
    assert [f for f in on_disk if f not in covered] == []
    assert [f for f in EXPECTED if f not in on_disk] == []


@pytest.mark.parametrize("name,expected", _cases())
def test_root_cause_of_real_logs(name, expected):
    etype, cause_part, hint_id, process = expected
    res = find_root_cause(_read(name))
    assert res["found"] is True
    assert res["wrapper_only"] is False
    assert re.search(etype, res["exception_type"]), res
    assert cause_part in res["cause"], res
    assert res["hint_id"] == hint_id, res
    assert res["hint"]
    if process is not None:
        assert res["process"] == process, res
        assert isinstance(res["pid"], int)
    # never a wrapper: not "Engine core initialization failed", not "WorkerProc initialization failed" ...
    assert not _is_wrapper_text(res["cause"])
    assert "EngineDeadError" not in res["exception_type"]
    assert 0 < len(res["relevant_lines"]) <= 40
    # the lines shown contain the cause (pydantic's field and message sit on two lines there)
    assert cause_part.split("(")[0].split(": ")[-1].strip() in "\n".join(res["relevant_lines"])


@pytest.mark.parametrize("name,expected", _cases())
@pytest.mark.parametrize("prefix", [
    "Dec 02 18:22:16 ct129 vllm-tiny[2584]: ",           # journalctl -o short
    "Dec  2 18:22:16.123456 ct129 python3[2584]: ",       # short-precise, one-digit day
    "2026-12-02T18:22:16+0000 ct129 vllm@tiny[2584]: ",  # short-iso
])
def test_same_cause_through_journald_prefix(name, expected, prefix):
    if "journal" in name:
        pytest.skip("already journald output: see test_journal_capture_read_like_journalctl_o_cat")
    plain = find_root_cause(_read(name))
    lines = [prefix + line for line in _read(name).splitlines()]
    prefixed = find_root_cause(lines)
    for key in ("cause", "exception_type", "hint_id", "process", "pid"):
        assert prefixed[key] == plain[key], key
    assert prefixed["relevant_lines"][-1].startswith(prefix)


@pytest.mark.parametrize("name", ["cpu-0.32.0-journal-libnuma-missing.log", "cpu-0.32.0-journal-no-cxx-compiler.log"])
def test_journal_capture_read_like_journalctl_o_cat(name):
    """The module reads `journalctl -o cat` (no prefix); the captures have the prefix: same answer."""
    with_prefix = find_root_cause(_read(name))
    cat = [re.sub(r"^\w{3} \d\d \d\d:\d\d:\d\d \S+ [^:]+: ", "", line) for line in _read(name).splitlines()]
    assert not any(line.startswith("Dec 02") for line in cat)
    without = find_root_cause(cat)
    for key in ("cause", "exception_type", "hint_id", "hint", "process", "pid"):
        assert without[key] == with_prefix[key], key


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_log_has_no_cause(name):
    text = _read(name)
    # what the successful DFlash start is evidence of
    assert "Resolved architecture: DFlashDraftModel" in text
    assert "Using auxiliary layers from speculative config: (2, 6)" in text
    res = find_root_cause(text)
    assert res["found"] is False
    assert res["cause"] is None and res["hint"] is None
    assert res["relevant_lines"]  # the log's tail, for a person to read


def test_warning_that_mentions_an_oserror_is_not_a_cause():
    # The healthy log's ulimit WARNING quotes "OSError: [Errno 24] Too many open files".
    text = _read("cpu-0.32.0-dflash-ok.log")
    assert "OSError: [Errno 24]" in text
    assert find_root_cause(text)["found"] is False


def test_wrapper_only_log_says_so():
    text = "\n".join([
        "(APIServer pid=7) Traceback (most recent call last):",
        '(APIServer pid=7)   File "/x/vllm/v1/engine/utils.py", line 1431, in wait_for_engine_startup',
        "(APIServer pid=7)     raise RuntimeError(",
        "(APIServer pid=7) RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}",
    ])
    res = find_root_cause(text)
    assert res["wrapper_only"] is True
    assert res["found"] is True
    assert res["hint_id"] is None


def test_cxx_abort_after_health_passed():
    # The shape docs/vllm-failures.md records: the worker dies with a C++ abort, the API answers 500
    # with EngineDeadError. The what() text is the cause.
    text = "\n".join([
        "(APIServer pid=10) INFO:     127.0.0.1:5 - \"GET /health HTTP/1.1\" 200 OK",
        "(Worker pid=12) terminate called after throwing an instance of 'std::runtime_error'",
        "(Worker pid=12)   what():  index out of bounds: 1100 >= 1024",
        "(EngineCore pid=11) ERROR 12-02 18:40:01 [core.py:1200] EngineCore encountered a fatal error.",
        "(APIServer pid=10) ERROR 12-02 18:40:01 [serving.py:400] Traceback (most recent call last):",
        "(APIServer pid=10) ERROR 12-02 18:40:01 [serving.py:400]   File \"/x/async_llm.py\", line 410, in generate",
        "(APIServer pid=10) ERROR 12-02 18:40:01 [serving.py:400]     raise EngineDeadError()",
        "(APIServer pid=10) ERROR 12-02 18:40:01 [serving.py:400] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    ])
    res = find_root_cause(text)
    assert res["exception_type"] == "std::runtime_error"
    assert res["cause"] == "index out of bounds: 1100 >= 1024"
    assert res["process"] == "Worker" and res["pid"] == 12
    assert res["hint_id"] == "token_id_out_of_range"


def test_chained_exception_gives_the_first_non_wrapper():
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/x/socket.py", line 1, in bind',
        "OSError: [Errno 98] Address already in use",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/y.py", line 2, in z',
        "RuntimeError: cancelled",
    ])
    res = find_root_cause(text)
    assert res["exception_type"] == "OSError"
    assert res["hint_id"] == "port_in_use"


def test_interleaved_children_are_kept_apart():
    text = "\n".join([
        "(Worker pid=2) ERROR 12-02 01:00:00 [x.py:1] Traceback (most recent call last):",
        "(EngineCore pid=1) INFO 12-02 01:00:00 [core.py:1] waiting for worker",
        "(Worker pid=2) ERROR 12-02 01:00:00 [x.py:1]   File \"/x/nccl.py\", line 3, in init",
        "(EngineCore pid=1) INFO 12-02 01:00:00 [core.py:1] still waiting",
        "(Worker pid=2) ERROR 12-02 01:00:00 [x.py:1] RuntimeError: NCCL error: unhandled system error",
    ])
    res = find_root_cause(text)
    assert res["process"] == "Worker"
    assert res["hint_id"] == "nccl"
    assert len(res["relevant_lines"]) == 3


def test_systemd_exit_status_is_a_weak_fallback():
    text = "\n".join([
        "(APIServer pid=5) INFO 12-02 01:00:00 [x.py:1] Loading weights",
        "vllm@tiny.service: Main process exited, code=killed, status=9/KILL",
        "vllm@tiny.service: Failed with result 'signal'.",
    ])
    res = find_root_cause(text)
    assert res["exception_type"] == "signal 9/KILL"
    assert res["hint_id"] == "killed"


def test_python_m_missing_module_without_traceback():
    res = find_root_cause("/opt/venv/bin/python3: Error while finding module specification for "
                          "'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No module named 'vllm')")
    assert res["exception_type"] == "ModuleNotFoundError"
    assert res["hint_id"] == "missing_module"
    assert "vllm is missing" in res["hint"]


@pytest.mark.parametrize("cause_id", [c["id"] for c in KNOWN_CAUSES])
def test_every_known_cause_has_a_usable_hint(cause_id):
    entry = [c for c in KNOWN_CAUSES if c["id"] == cause_id][0]
    re.compile(entry["pattern"])
    assert len(entry["hint"]) > 30


def test_removed_v1_runner_hint_never_suggests_the_switch():
    # vllm/platforms/interface.py validate_environ of vLLM 0.34.0.
    log = ("Traceback (most recent call last):\n"
           "ValueError: VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed. "
           "Unset this variable.\n")
    res = find_root_cause(log)
    assert res["hint_id"] == "v1_runner_removed"
    assert "remove it from vllm_service_environment" in res["hint"]
    # No hint tells anyone to set the switch to 0 (vLLM 0.34 refuses it).
    assert not [c["id"] for c in KNOWN_CAUSES if re.search(r"VLLM_USE_V2_MODEL_RUNNER=0|set \S+ to 0", c["hint"])]


def test_context_hint_names_the_missing_library():
    res = find_root_cause(_read("cpu-0.32.0-journal-libnuma-missing.log"))
    assert "libnuma.so.1: cannot open shared object file" in res["hint"]
    assert "libnuma1" in res["hint"]
    # the warning that says why comes first in relevant_lines
    assert "Failed to import from vllm._C_AVX2" in res["relevant_lines"][0]
    assert len(res["relevant_lines"]) <= 40


def test_flash_attn_hint_is_the_guard():
    res = find_root_cause(_read("synthetic-gpu-flash-attn-ops.log"))
    assert "python_env role's flash-attn guard (policy remove)" in res["hint"]
    assert "shadows flash-attn 2" in res["hint"]


def test_relevant_lines_are_bounded_and_end_with_the_exception():
    res = find_root_cause(_read("cuda-0.20.1-no-gpu.log"), max_lines=6)
    lines = res["relevant_lines"]
    assert len(lines) == 6
    assert lines[0].startswith("Traceback")
    assert "lines left out" in lines[1]
    assert lines[-1].startswith("RuntimeError: Failed to infer device type")


@pytest.mark.parametrize("line,expected", [
    ("(EngineCore_DP0 pid=42) ERROR 12-02 18:22:21 [core.py:1510] EngineCore failed to start.",
     ("EngineCore_DP0", 42, "ERROR", "EngineCore failed to start.")),
    ("(VllmWorker-0 pid=7) ModuleNotFoundError: No module named 'x'",
     ("VllmWorker-0", 7, None, "ModuleNotFoundError: No module named 'x'")),
    ("Dec 02 18:22:16 h vllm[1]: (Worker pid=3) INFO 12-02 18:22:16 [a.py:1] hi",
     ("Worker", 3, "INFO", "hi")),
    ("[rank0]: Traceback (most recent call last):", (None, None, None, "Traceback (most recent call last):")),
    ("plain", (None, None, None, "plain")),
])
def test_parse_line(line, expected):
    assert parse_line(line) == expected


def test_failure_message_shape():
    res = find_root_cause(_read("cpu-0.32.0-gpu-memory-utilization-too-high.log"))
    msg = failure_message("vllm@tiny.service", res)
    assert msg.startswith("vllm@tiny.service failed: ValueError: Available memory on node 0")
    assert u" \u2014 hint: gpu_memory_utilization asks for more memory" in msg
    assert failure_message("u", find_root_cause("nothing here")) == (
        "u: no root cause found in its log (see relevant_lines)")


def test_bad_input_raises():
    with pytest.raises(VllmLogError, match="max_lines"):
        find_root_cause("x", max_lines=1)
    with pytest.raises(VllmLogError, match="log line 2"):
        find_root_cause(["ok", 3])
    with pytest.raises(VllmLogError, match="expected the log"):
        find_root_cause(42)


# ==== logs of any size and encoding ====================================================================

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


# ==== real starts on an NVIDIA H200 (issue 16) with no root cause, or one without a hint ===================
# gpu-0.26.0-v2-flash-attn-4-served.log: vLLM 0.26.0 served (test_vllm_captured_layers.py says more);
# tests/gpu/evidence/h200-run5-vllm-0.33.0/step6-dflash2.log: vLLM 0.33.0 with the tiny DFlash2 drafter,
# stopped while FlashInfer JIT-built its top-k kernel (tests/gpu/README.md).
V2_SERVED_LOG = os.path.join(DATA, "gpu-0.26.0-v2-flash-attn-4-served.log")
DFLASH2_LOG = os.path.join(UNIT, "..", "..", "..", "gpu", "evidence", "h200-run5-vllm-0.33.0", "step6-dflash2.log")


def _text(path):
    with io.open(path, encoding="utf-8") as fh:
        return fh.read()


def test_find_root_cause_finds_none_in_the_healthy_v2_start():
    res = find_root_cause(_text(V2_SERVED_LOG))
    assert res["found"] is False
    assert res["cause"] is None and res["hint"] is None and res["hint_id"] is None
    assert res["relevant_lines"]  # the log's tail, for a person to read


def test_the_stopped_jit_build_is_the_root_cause_found():
    # The stop (SIGTERM from the readiness timeout) reached ninja: exit status 130, no hint for it.
    res = find_root_cause(_text(DFLASH2_LOG))
    assert res["found"] is True
    assert "ninja" in res["cause"] and "exit status 130" in res["cause"]
    assert res["exception_type"] == "subprocess.CalledProcessError"
