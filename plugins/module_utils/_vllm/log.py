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
#
# Logs come in any size and encoding: the reader streams them line by line (memory bounded), decodes
# bytes with replacement (one bad byte must not hide the cause, nor make the result invalid UTF-8,
# which Ansible's controller refuses) and caps every line and string it returns (see "caps" below).
# Its neighbours: _vllm/captured_layers.py reads the captured-layers line with the same line reader;
# _common/systemd.py runs systemctl and journalctl (journal_root_cause() joins the two).

import collections
import errno
import io
import os
import re
import stat

from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log_causes import KNOWN_CAUSES
from ansible_collections.inference.gpu_host.plugins.module_utils._common.systemd import (
    MAX_JOURNAL_LINES, SystemdError, UnitJournal, check_invocation_id, check_unit_name)

__all__ = [
    "VllmLogError",
    "KNOWN_CAUSES",
    "WRAPPERS",
    "parse_line",
    "find_root_cause",
    "failure_message",
    "journal_root_cause",
    "failure_cause",
    "MAX_LINE_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_RELEVANT_LINES",
    "MAX_TEXT_CHARS",
    "iter_log_lines",
    "open_log_file",
]


class VllmLogError(ValueError):
    """The log given to the reader is not something it can read (wrong type, bad limit)."""


# journald's own prefixes ("short", "short-precise", "short-iso", "short-iso-precise"):
#   "Dec 02 18:12:46 host vllm-tiny[123]: " / "2026-12-02T18:12:46+0000 host unit[1]: "
_JOURNAL_PREFIX = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" \S+ [^\s\[\]:]+(?:\[\d+\])?: ?"
)
# vLLM's per-process prefix: "(EngineCore_DP0 pid=123) ", "(VllmWorker-0 pid=9) ", "(Worker_TP1 pid=9) "
_PROC_PREFIX = re.compile(r"^\((?P<proc>[A-Za-z][\w.\-]*) pid=(?P<pid>\d+)\) ?")
# torch.distributed's "[rank0]: " prefix on child stderr.
_RANK_PREFIX = re.compile(r"^\[rank\d+\]: ?")
# vLLM's logger: "ERROR 12-02 18:12:46 [core.py:123] message" (newer: with ".123" and no brackets variants)
_LOG_HEADER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
    r"(?: \[[^\]]*\])? ?(?P<msg>.*)$"
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


def _naming_problems(cause, hint):
    """The hint, ending with the known-problem rows the cause can be (their ids, in docs/vllm-versions.md)."""
    ids = cause.get("problems")
    return hint if not ids or hint is None else "%s (known problem %s: docs/vllm-versions.md)" % (hint, ", ".join(ids))


_KNOWN = [(c["id"], re.compile(c["pattern"]), _naming_problems(c, c["hint"]),
           _naming_problems(c, c.get("context_hint"))) for c in KNOWN_CAUSES]
# The context patterns are looked for in every line while reading (the log is read only once).
_CONTEXTS = [(c["id"], re.compile(c["context"])) for c in KNOWN_CAUSES if c.get("context")]

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

# ---- caps: what the reader keeps and returns, whatever the size of the log ------------------------
# A 200 MB log, a 100 MB line without a newline or a binary file read by mistake must neither fill the
# managed node's memory nor reach the controller as a huge result.
MAX_LINE_CHARS = 2000       # a longer log line is cut while reading, with a marker saying so
MAX_RELEVANT_LINES = 200    # the largest max_lines accepted
MAX_TEXT_CHARS = 2000       # cause, exception type and hint
MAX_MESSAGE_CHARS = 5000    # failure_message()
_LINE_READ = MAX_LINE_CHARS * 4     # bytes read of one line: MAX_LINE_CHARS characters of UTF-8
_SKIP_CHUNK = 1 << 16               # the rest of a long line is skipped in pieces of this size
_MAX_ACTIVE_PROCS = 32              # processes whose traceback is followed at once (vLLM starts a handful)
_MAX_CONTINUATION = 50              # indented lines kept after an exception line (pydantic's error list)
_MAX_GROUP_CHARS = 200              # log text quoted in a hint
_CUT_MARK = " [... cut: the line has %d %s]"
_CUT_RE = re.compile(r" \[\.\.\. cut: the line has \d+ (?:bytes|characters)\]$")


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
    # Groups quote the log: a bounded excerpt each, so a hint stays short.
    groups = [match.group(0)] + [g if g is not None else "" for g in match.groups()]
    groups = [g if len(g) <= _MAX_GROUP_CHARS else g[:_MAX_GROUP_CHARS] + "..." for g in groups]
    try:
        return hint.format(*groups)
    except (IndexError, KeyError):  # a hint that names a group its pattern lacks
        return hint


def _hint_for(exc_type, msg, contexts):
    """(hint id, hint, context line or None) of the first known cause matching.

    ``contexts``: known cause id -> the first log line matching its context pattern (e.g. the earlier
    warning that says why), collected while reading.
    """
    text = "%s: %s" % (exc_type, msg) if exc_type else (msg or "")
    for cid, pat, hint, context_hint in _KNOWN:
        m = pat.search(msg or "") or pat.search(text)
        if not m:
            continue
        line = contexts.get(cid)
        if line is not None:
            for ctx_id, ctx in _CONTEXTS:
                if ctx_id == cid:
                    return cid, _format_hint(context_hint, ctx.search(line)), line
        return cid, _format_hint(hint, m), None
    return None, None, None


class _Candidate(object):
    __slots__ = ("exc_type", "msg", "process", "pid", "index", "lines", "strong", "rank")

    def __init__(self, exc_type, msg, process, pid, index, lines, strong=True):
        self.exc_type = exc_type
        self.msg = msg
        self.process = process
        self.pid = pid
        self.index = index
        self.lines = lines      # a _Window
        self.strong = strong    # a Python exception or a native abort, not only systemd's exit status
        self.rank = None        # once final: 0 strong non-wrapper, 1 weak non-wrapper, 2 wrapper


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


# ---- reading: bounded lines from a str, bytes, a file object or a list of lines --------------------

def _file_chunks(fh):
    """(start of a line, the line's full length) for each line of a file object, at most _LINE_READ of each.

    The rest of a longer line is read and dropped in small pieces, so one 100 MB line costs 64 KiB.
    """
    while True:
        chunk = fh.readline(_LINE_READ)
        if not chunk:
            return
        total, last = len(chunk), chunk
        if total >= _LINE_READ and last[-1:] not in (b"\n", "\n"):
            while last and last[-1:] not in (b"\n", "\n"):
                last = fh.readline(_SKIP_CHUNK)
                total += len(last)
        yield chunk, total - len(last) + _bare_len(last)


def _text_chunks(text):
    """Like _file_chunks for a str: slices, never a list of all its lines."""
    pos, size = 0, len(text)
    while pos < size:
        end = text.find("\n", pos)
        end = size if end < 0 else end
        yield text[pos:min(end + 1, pos + _LINE_READ)], end - pos
        pos = end + 1


def _item_chunks(lines, who="vllm_log.find_root_cause"):
    try:
        items = iter(lines)
    except TypeError:
        raise VllmLogError("%s: expected the log as a str, bytes, a binary file or a list of "
                           "lines, got %s" % (who, type(lines).__name__))
    for i, item in enumerate(items):
        if not isinstance(item, (str, bytes, bytearray)):
            raise VllmLogError("%s: log line %d is a %s, expected str"
                               % (who, i + 1, type(item).__name__))
        yield item[:_LINE_READ], _bare_len(item)


def _bare_len(line):
    """Length without the trailing newline."""
    return len(line) - 1 if line[-1:] in (b"\n", "\n") else len(line)


def _pieces(chunk, total):
    """The log lines in one chunk (str.splitlines: tqdm's \\r too), valid UTF-8, each cut to MAX_LINE_CHARS.

    ``total``: the length of the whole line without its newline; more than the chunk when it was cut.
    """
    read_cut = total > _bare_len(chunk)
    if isinstance(chunk, (bytes, bytearray)):
        text, unit = bytes(chunk).decode("utf-8", "replace"), "bytes"
    else:
        text, unit = safe_text(chunk), "characters"
    pieces = text.splitlines() or [""]
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        if i == last and read_cut:
            yield piece[:MAX_LINE_CHARS] + _CUT_MARK % (total, unit), True
        elif len(piece) > MAX_LINE_CHARS:
            yield piece[:MAX_LINE_CHARS] + _CUT_MARK % (len(piece), "characters"), True
        else:
            yield piece, False


def _log_lines(log, who="vllm_log.find_root_cause"):
    """(line, whether it was cut) for each line of ``log``; memory bounded whatever its size.

    ``who`` names the caller in the error for a log of the wrong type.
    """
    if isinstance(log, (bytes, bytearray)):
        chunks = _file_chunks(io.BytesIO(log))
    elif isinstance(log, str):
        chunks = _text_chunks(log)
    elif hasattr(log, "readline"):
        chunks = _file_chunks(log)
    else:
        chunks = _item_chunks(log, who)
    for chunk, total in chunks:
        yield from _pieces(chunk, total)


def iter_log_lines(log, who="vllm_log.find_root_cause"):
    """The lines of ``log`` as the reader sees them: valid UTF-8, each at most MAX_LINE_CHARS plus a cut marker.

    ``log``: a str, bytes (decoded as UTF-8, a bad byte becomes U+FFFD), a file object (read line by
    line, never whole) or a list of str/bytes lines. ``who`` names the caller in the error for a log of
    the wrong type (VllmLogError).
    """
    for line, _cut in _log_lines(log, who):
        yield line


class _Window(object):
    """The first line and the last ``keep`` lines of a growing list of lines, and how many there were."""

    __slots__ = ("head", "tail", "count")

    def __init__(self, keep, first=None):
        self.head = None
        self.tail = collections.deque(maxlen=keep)
        self.count = 0
        if first is not None:
            self.append(first)

    def append(self, line):
        if self.count == 0:
            self.head = line
        else:
            self.tail.append(line)
        self.count += 1

    def bounded(self, max_lines):
        """(at most max_lines lines: the first and the tail, which holds the frames that matter; lines left out)."""
        if self.count <= max_lines:
            return ([self.head] if self.count else []) + list(self.tail), 0
        if max_lines < 3:
            return list(self.tail)[-max_lines:], self.count - max_lines
        keep = max_lines - 2
        left_out = self.count - 1 - keep
        return [self.head, "... (%d lines left out)" % left_out] + list(self.tail)[-keep:], left_out


class _Scan(object):
    """One pass over the log, bounded: the candidates, the last ERROR line, context lines, the log's tail.

    Only candidates that can still be chosen are kept (see _prune), and only processes in the middle
    of a traceback have a state, at most _MAX_ACTIVE_PROCS of them (the least recently seen gives way).
    """

    def __init__(self, max_lines):
        self.max_lines = max_lines
        self.states = collections.OrderedDict()       # (process, pid) -> _ProcState
        self.pending_cxx = collections.OrderedDict()  # (process, pid) -> C++ abort waiting for its what() line
        self.cands = []
        self.prune_at = 16
        self.contexts = {}        # known cause id -> first line matching its context pattern
        self.last_error = None    # (line, text, process, pid) of the last ERROR/CRITICAL logger line
        self.tail = collections.deque(maxlen=max_lines)
        self.count = 0
        self.lines_cut = 0

    def feed(self, raw, cut):
        idx = self.count
        self.count += 1
        if cut:
            self.lines_cut += 1
        line = raw.rstrip("\r\n")
        self.tail.append(line)
        for cid, ctx in _CONTEXTS:
            if cid not in self.contexts and ctx.search(raw):
                self.contexts[cid] = line
        proc, pid, level, text = parse_line(raw)
        if level in ("ERROR", "CRITICAL"):
            self.last_error = (line, text, proc, pid)
        key = (proc, pid)
        st = self.states.get(key) or _ProcState()
        self._step(st, key, idx, line, proc, pid, level, text)
        if st.tb is None and st.exc is None:
            self.states.pop(key, None)
            return
        self.states[key] = st
        self.states.move_to_end(key)
        if len(self.states) > _MAX_ACTIVE_PROCS:
            self._finish_state(self.states.popitem(last=False)[1])

    def _step(self, st, key, idx, line, proc, pid, level, text):
        # Indented lines right after an exception line continue its message (pydantic, multi-line messages).
        # vLLM's logger repeats its "ERROR <date> [file:line] " header on every line of a logged
        # traceback; such lines are part of the traceback, an INFO/WARNING line is not.
        in_record = level is None or level in ("ERROR", "CRITICAL")
        if st.exc is not None:
            field_line = st.exc.exc_type.endswith("ValidationError") and _FIELD_LINE.match(text)
            if in_record and st.tb is None and (text[:1] in (" ", "\t") or field_line):
                st.exc.lines.append(line)
                if len(st.exc_cont) < _MAX_CONTINUATION:
                    st.exc_cont.append(text)
                return
            self._close_exc(st)

        if text.strip().startswith(_TB_START[:-1]):  # with or without its colon
            if st.tb is None:
                st.tb = _Window(self.max_lines)
            st.tb.append(line)
            return
        if st.tb is not None:
            if in_record and (text[:1] in (" ", "\t") or text == ""):
                st.tb.append(line)
                return
            if text.strip() in _CHAIN_MARKERS:
                st.tb.append(line)
                return
            m = _EXC_LINE.match(text) if in_record else None
            if m and ("." in m.group("type") or m.group("msg") is not None or _looks_like_exc(m.group("type"))):
                st.tb.append(line)
                cand = _Candidate(m.group("type"), (m.group("msg") or "").strip(), proc, pid, idx, st.tb)
                self._add(cand, final=False)
                st.exc = cand
                st.exc_cont = []
                # Each exception of a chain is a candidate of its own; the first non-wrapper wins later.
                st.tb = None
                return
            # Something else interrupted the traceback (e.g. a logger line): drop it.
            st.tb = None

        if level is None:
            self._non_python(key, proc, pid, idx, line, text)

    def _close_exc(self, st):
        cand = st.exc
        _finish_exc(st)
        st.exc = None
        st.exc_cont = []
        self._finalize(cand)

    def _finish_state(self, st):
        """End of the log, or the process gave way to others: its exception is final, its traceback dropped."""
        if st.exc is not None:
            self._close_exc(st)
        st.tb = None

    def _non_python(self, key, proc, pid, idx, line, text):
        stripped = text.strip()
        if key in self.pending_cxx:
            cand = self.pending_cxx.pop(key)
            m = _CXX_WHAT.match(text)
            if m:
                cand.msg = m.group("msg").strip()
                cand.lines.append(line)
            self._finalize(cand)
            if m:
                return
        m = _CXX_TERMINATE.search(stripped)
        if m:
            cand = _Candidate(m.group("type"), "", proc, pid, idx, _Window(self.max_lines, line))
            self._add(cand, final=False)
            self.pending_cxx[key] = cand
            if len(self.pending_cxx) > _MAX_ACTIVE_PROCS:
                self._finalize(self.pending_cxx.popitem(last=False)[1])
            return
        found = _non_python_failure(stripped)
        if found:
            exc_type, msg, strong = found
            self._add(_Candidate(exc_type, msg, proc, pid, idx, _Window(self.max_lines, line), strong=strong))

    def _add(self, cand, final=True):
        self.cands.append(cand)
        if final:
            self._finalize(cand)

    def _finalize(self, cand):
        wrapper = _is_wrapper(cand.exc_type, cand.msg)
        cand.rank = 2 if wrapper else (0 if cand.strong else 1)
        if len(self.cands) > self.prune_at:
            self._prune()

    def _prune(self):
        """Drop the candidates that can no longer be chosen (see choose()), so a long log keeps a few.

        Kept: the first candidate (the wrapper_only answer), every one not final yet (its message may still
        change), the first final strong non-wrapper and the first final weak one (systemd's exit status).
        """
        kept, seen_strong, seen_any = [], False, False
        for i, cand in enumerate(self.cands):
            rank = cand.rank
            if rank is None:
                kept.append(cand)
                continue
            if i == 0 or (rank == 0 and not seen_strong) or (rank == 1 and not seen_any):
                kept.append(cand)
            seen_strong = seen_strong or rank == 0
            seen_any = seen_any or rank <= 1
        self.cands = kept
        self.prune_at = max(16, 2 * len(kept))

    def finish(self):
        for st in list(self.states.values()):
            self._finish_state(st)
        self.states.clear()
        for cand in list(self.pending_cxx.values()):
            self._finalize(cand)
        self.pending_cxx.clear()

    def choose(self):
        """(candidate, wrapper_only): the first strong non-wrapper, else the first non-wrapper, else the first."""
        for rank in (0, 1):
            for cand in self.cands:
                if cand.rank == rank:
                    return cand, False
        if self.cands:
            return self.cands[0], True
        return None, False


def _finish_exc(st):
    cand = st.exc
    if cand.exc_type.endswith("ValidationError"):
        cand.msg = _pydantic_cause(cand, st.exc_cont)
    elif st.exc_cont and not cand.msg:
        cand.msg = st.exc_cont[0].strip()


def _looks_like_exc(name):
    return bool(re.search(r"(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault)$", name))


def _non_python_failure(stripped):
    """(type, message, strong) of a failure printed without a Python traceback, or None."""
    m = _ARGPARSE_ERROR.match(stripped)
    if m:
        return "argparse error (%s)" % m.group("prog"), m.group("msg").strip(), True
    m = _PY_MODULE_SPEC.search(stripped)
    if m:
        return m.group("type"), m.group("msg").strip(), True
    m = _PY_NO_MODULE.match(stripped)
    if m:
        exc_type = "ModuleNotFoundError" if m.group("msg").startswith("No module") else "FileNotFoundError"
        return exc_type, m.group("msg").strip(), True
    m = _FATAL_PY.match(stripped)
    if m:
        return "Fatal Python error", m.group("msg").strip(), True
    m = _SYSTEMD_EXIT.search(stripped)
    if m:
        return "signal " + m.group("status"), stripped, False
    m = _SYSTEMD_EXEC.search(stripped)
    if m and ("Failed at step EXEC" in stripped or ".service" in stripped or "Failed to execute" in stripped):
        return "exec failure", stripped, False
    return None


def _check_max_lines(max_lines):
    if not isinstance(max_lines, int) or isinstance(max_lines, bool) or not 3 <= max_lines <= MAX_RELEVANT_LINES:
        raise VllmLogError("vllm_log.find_root_cause: max_lines must be an integer from 3 to %d, got %r"
                           % (MAX_RELEVANT_LINES, max_lines))


def find_root_cause(log, max_lines=40):
    """Return the root cause of a vLLM failure found in ``log``.

    ``log`` is the text (str or bytes), a file object, or a list of lines (journal lines with or without
    journald's prefix, or a plain log file). It is read once, line by line: memory stays bounded whatever
    its size. Bytes are decoded as UTF-8 with replacement, so a bad byte never hides the cause, and every
    str returned is valid UTF-8. Returns a dict:

    - ``found``: whether a failure was recognised;
    - ``cause``: the message of the exception that killed the server (the ``Value error, ...``
      line for pydantic's ValidationError, ``what()`` for a C++ abort, the argparse error);
    - ``exception_type``: e.g. ``ValueError``, ``ModuleNotFoundError``, ``std::runtime_error``,
      ``argparse error (api_server.py)``, ``signal 9/KILL``;
    - ``hint``/``hint_id``: what to do for a known cause (None when unknown);
    - ``process``/``pid``: the child that printed it (``Worker``, ``EngineCore_DP0`` ...; None: main process);
    - ``relevant_lines``: the traceback (its first line and tail when long) as printed, at most ``max_lines``
      (3 to MAX_RELEVANT_LINES), each at most MAX_LINE_CHARS characters plus a cut marker;
    - ``wrapper_only``: True when only generic wrappers were found (then ``cause`` is the first wrapper);
    - ``truncated``: True when something returned was shortened (a line or the cause cut, lines left out);
    - ``relevant_lines_left_out``: how many lines of the traceback ``relevant_lines`` leaves out;
    - ``lines_read``/``lines_cut``: lines read, and how many of them were longer than MAX_LINE_CHARS.
    """
    _check_max_lines(max_lines)
    scan = _Scan(max_lines)
    for raw, cut in _log_lines(log):
        scan.feed(raw, cut)
    scan.finish()
    chosen, wrapper_only = scan.choose()

    if chosen is None and scan.last_error is None:
        return _result(scan, found=False, relevant=list(scan.tail))
    if chosen is None:
        # No exception at all: the last ERROR line of vLLM's logger is the best we have.
        line, text, proc, pid = scan.last_error
        hint_id, hint, _ctx = _hint_for(None, text, scan.contexts)
        return _result(scan, found=True, cause=text.strip(), hint=hint, hint_id=hint_id, process=proc, pid=pid,
                       relevant=[line])

    hint_id, hint, ctx_line = _hint_for(chosen.exc_type, chosen.msg, scan.contexts)
    relevant, left_out = chosen.lines.bounded(max_lines - 1 if ctx_line else max_lines)
    if ctx_line:
        relevant.insert(0, ctx_line)
    return _result(scan, found=True, cause=chosen.msg or chosen.exc_type, exception_type=chosen.exc_type,
                   hint=hint, hint_id=hint_id, process=chosen.process, pid=chosen.pid, wrapper_only=wrapper_only,
                   relevant=relevant, left_out=left_out)


def _result(scan, found, relevant, cause=None, exception_type=None, hint=None, hint_id=None, process=None,
            pid=None, wrapper_only=False, left_out=0):
    texts = {"cause": cause, "exception_type": exception_type, "hint": hint}
    clipped = dict((k, safe_text(v, MAX_TEXT_CHARS)) for k, v in texts.items())
    truncated = (left_out > 0 or any(clipped[k] != texts[k] for k in texts)
                 or any(_CUT_RE.search(line) for line in relevant))
    return {
        "found": found,
        "cause": clipped["cause"],
        "exception_type": clipped["exception_type"],
        "hint": clipped["hint"],
        "hint_id": hint_id,
        "process": process,
        "pid": pid,
        "wrapper_only": wrapper_only,
        "relevant_lines": relevant,
        "truncated": truncated,
        "relevant_lines_left_out": left_out,
        "lines_read": scan.count,
        "lines_cut": scan.lines_cut,
    }


def failure_message(unit, result):
    """One line for fail_json: ``<unit> failed: <cause> — hint: <hint>`` (or that no cause was found).

    At most MAX_MESSAGE_CHARS characters (plus a cut marker), valid UTF-8.
    """
    who = safe_text(unit or "vLLM", 300)
    if not result or not result.get("found"):
        return "%s: no root cause found in its log (see relevant_lines)" % who
    cause = safe_text(result.get("cause") or "unknown", MAX_TEXT_CHARS)
    etype = safe_text(result.get("exception_type") or "", MAX_TEXT_CHARS)
    if re.match(r"^[\w.]+$", etype):
        etype = etype.rsplit(".", 1)[-1]  # pydantic_core._pydantic_core.ValidationError -> ValidationError
    if etype and etype not in cause and not etype.startswith("argparse"):
        cause = "%s: %s" % (etype, cause)
    msg = "%s failed: %s" % (who, cause)
    if result.get("hint"):
        msg += " \u2014 hint: %s" % safe_text(result["hint"], MAX_TEXT_CHARS)
    return safe_text(msg, MAX_MESSAGE_CHARS)


def open_log_file(path, option="path"):
    """Open a vLLM log file for find_root_cause() (binary, read line by line), after checking it is one.

    Errors (VllmLogError) name ``option``: a relative path, a missing file, a directory, a device, pipe or
    socket (reading /dev/zero or a FIFO would never end), a file that cannot be read.
    """
    if not isinstance(path, str) or not path:
        raise VllmLogError("%s: expected the absolute path of a vLLM log file, got %r" % (option, path))
    shown = safe_text(path, 500)
    if not os.path.isabs(path):
        raise VllmLogError("%s must be an absolute path to a vLLM log file, got the relative path %s"
                           % (option, shown))
    try:
        _check_log_stat(os.stat(path), option, shown)
        # O_NONBLOCK: a file swapped for a FIFO after the check must not hang the module on open.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            raise VllmLogError("%s: %s does not exist; expected a vLLM log file" % (option, shown))
        raise VllmLogError("%s: cannot read %s: %s" % (option, shown, e.strerror or e))
    try:
        _check_log_stat(os.fstat(fd), option, shown)
    except VllmLogError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _check_log_stat(st, option, shown):
    if stat.S_ISDIR(st.st_mode):
        raise VllmLogError("%s: %s is a directory; expected a vLLM log file (the file the server's output went to)"
                           % (option, shown))
    if not stat.S_ISREG(st.st_mode):
        raise VllmLogError("%s: %s is not a regular file (a device, pipe or socket); expected a vLLM log file"
                           % (option, shown))


def journal_root_cause(journal, invocation_id=None, since=None, lines=5000, max_lines=40):
    """(find_root_cause() of one invocation's journal, info): ``journal`` a _common/systemd.py UnitJournal,
    the other arguments as its open() and find_root_cause() take them."""
    log, info = journal.open(invocation_id, since, lines)
    with log:
        return find_root_cause(log, max_lines), info


# ---- the vllm_failure_cause module's work ---------------------------------------------------------

def _failure_cause_errors(p):
    """Every problem with vllm_failure_cause's options, each naming the option and what is expected ([] when none)."""
    errors = []
    for name, value, check in (("unit", p["unit"], check_unit_name),
                               ("invocation_id", p["invocation_id"], check_invocation_id)):
        if value is None:
            continue
        try:
            check(value, name)
        except SystemdError as e:
            errors.append(str(e))
    if p["since"] is not None and not p["since"].strip():
        errors.append("since must be a journalctl time such as '2026-12-02 18:00:00' or '-1h', got an empty string")
    if not 1 <= p["journal_lines"] <= MAX_JOURNAL_LINES:
        errors.append("journal_lines must be from 1 to %d, got %d" % (MAX_JOURNAL_LINES, p["journal_lines"]))
    if not 3 <= p["max_lines"] <= MAX_RELEVANT_LINES:
        errors.append("max_lines must be from 3 to %d, got %d" % (MAX_RELEVANT_LINES, p["max_lines"]))
    return errors


def _journal_unavailable(journal):
    """Why the unit's journal could not hold the cause (journald stopped: journalctl then answers "no entries"
    with exit status 0, which is no evidence), or None; as vllm_wait_ready says it."""
    try:
        return journal.unavailable()
    except (SystemdError, IOError, OSError) as e:
        return safe_text(str(e), 1000)


def _read_cause(module, p, result):
    """(root cause, source description, label for the message), reading the journal, the file or the text."""
    if p["unit"]:
        journal = UnitJournal(module, p["unit"])
        cause, info = journal_root_cause(journal, p["invocation_id"], p["since"], p["journal_lines"], p["max_lines"])
        result["invocation_id"] = info["invocation_id"]
        if not cause.get("found"):
            unavailable = _journal_unavailable(journal)
            if unavailable:
                result["journal_unavailable"] = unavailable
        return cause, info["description"], p["unit"]
    if p["path"]:
        with open_log_file(p["path"], "path") as log:
            cause = find_root_cause(log, max_lines=p["max_lines"])
        return cause, p["path"], os.path.basename(p["path"])
    return find_root_cause(p["text"], max_lines=p["max_lines"]), "text", "vLLM"


def failure_cause(module):
    """The vllm_failure_cause module: its result, or VllmLogError with the message to fail with.

    ``module``: an AnsibleModule with vllm_failure_cause's options (exactly one of unit, path, text);
    read-only, so check mode reads too.
    """
    p = module.params
    errors = _failure_cause_errors(p)
    if errors:
        raise VllmLogError("vllm_failure_cause: " + "; ".join(errors))
    result = dict(changed=False)
    try:
        cause, source, label = _read_cause(module, p, result)
    except (VllmLogError, SystemdError) as e:
        raise VllmLogError(safe_text(str(e)))
    except (IOError, OSError) as e:
        raise VllmLogError("cannot read the log (%s): %s" % (safe_text(p["path"] or p["unit"]), safe_text(str(e))))
    result.update(cause)
    result["source"] = safe_text(source)
    result["message"] = failure_message(safe_text(label), cause)
    if result.get("journal_unavailable"):
        result["message"] = safe_text("%s: the journal is unavailable (%s), so no root cause could be read" % (
            safe_text(label, 300), result["journal_unavailable"]), MAX_MESSAGE_CHARS)
    return result
