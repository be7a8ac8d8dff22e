# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Asking a running vLLM server whether it serves: the HTTP requests and the captured-layers check
# that vllm_wait_ready (waiting after a change) and vllm_service_host_state (one look on a run
# with nothing to change: BENCHMARKS.md) share.

import ipaddress
import json
import math
import os
import re
import socket
import time
from urllib.parse import urlsplit

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import read_json_file
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import parse_json_bounded
from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.captured_layers import captured_layers_verdict, find_captured_layers

# Bounds of one answer. Whatever is on the port (a vLLM that hangs half way, another program, a
# server that trickles a byte at a time) is read within the request's deadline and these bounds, and
# anything else is "not ready: <why>", never a traceback or a wait.
# A body larger than this is refused: /metrics of a big server is a few hundred KiB; a misbehaving
# server (or something else on the port) must not fill the node's memory.
MAX_BODY = 8 * 1024 * 1024
# /v1/models and a completion of a few tokens are kilobytes; JSON answers are parsed only up to this
# (the depth scan and json then cost well under a second whatever the bytes are).
MAX_JSON_BODY = 1024 * 1024
MAX_JSON_DEPTH = 64
MAX_HEADER_LINE = 8192  # uvicorn (h11) answers lines of a few hundred bytes
MAX_HEADERS = 100  # http.client's own limit; uvicorn sends 4 or 5
MAX_HEAD = 64 * 1024  # status line and all headers together
SPEC_METRICS = {
    "vllm:spec_decode_num_draft_tokens_total": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "num_accepted_tokens",
    "vllm:spec_decode_num_drafts_total": "num_drafts",
}
SMOKE_PROMPT = "The capital of France is"
# A bearer token goes into an HTTP header: a space or a line break there would break (or inject) a header.
API_KEY = re.compile(r"^[\x21-\x7e]+\Z")  # \Z: "$" would let a final newline through
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")
_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] ([1-5][0-9][0-9])(?: [\x09\x20-\x7e\x80-\xff]*)?\r?\n$")
_HEADER_LINE = re.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([\x09\x20-\x7e\x80-\xff]*?)[ \t]*\r?\n$")
_CHUNK_SIZE = re.compile(rb"^([0-9A-Fa-f]{1,8})[ \t]*(?:;[^\r\n]*)?\r?\n$")


def check_host(host):
    """An error message unless ``host`` is an IP address (IPv6 with or without brackets) or a host name.

    Empty is vLLM's default bind address (every address), probed on loopback like 0.0.0.0.
    """
    if host == "":
        return None
    bracketed = host.startswith("[") and host.endswith("]")
    bare = host[1:-1] if bracketed else host
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        ip = None
    # Brackets only around IPv6; no zone id (fe80::1%eth0), which has no place in the URL.
    if ip is not None and "%" not in bare and (ip.version == 6 or not bracketed):
        return None
    if ip is None and not bracketed and _HOSTNAME.match(bare):
        return None
    return _host_error(host)


def _host_error(host):
    return ("host must be an IP address or a host name, without scheme, port or path (e.g. 127.0.0.1, ::1, "
            "localhost), got %r" % safe_text(host, 300))


class ProbeError(Exception):
    """Why a request got no usable answer (a sentence, valid UTF-8)."""


class _Answer(object):
    """Reads one HTTP/1.x answer from a socket, each recv bounded by what is left of the deadline.

    A socket timeout alone bounds each wait, not the whole: a server that sends a byte every 0.5 s
    keeps a 2 s timeout from ever firing. Here every recv gets settimeout(deadline - now), and none
    starts once the deadline has passed.
    """

    def __init__(self, sock, deadline, timeout):
        self.sock = sock
        self.deadline = deadline
        self.timeout = timeout
        self.buf = bytearray()
        self.head = 0

    def _recv(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ProbeError("no complete answer within %gs" % self.timeout)
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise ProbeError("no complete answer within %gs" % self.timeout)
        except (IOError, OSError) as exc:
            raise ProbeError("the connection failed while reading the answer: %s" % safe_text(str(exc), 300))
        return data

    def line(self, limit, what):
        """One line (with its end), at most ``limit`` bytes; ProbeError when longer or cut off."""
        while True:
            end = self.buf.find(b"\n", 0, limit)
            if end >= 0:
                line = bytes(self.buf[:end + 1])
                del self.buf[:end + 1]
                self.head += len(line)
                if self.head > MAX_HEAD:
                    raise ProbeError("the status line and headers are longer than %d bytes" % MAX_HEAD)
                return line
            if len(self.buf) >= limit:
                raise ProbeError("%s is longer than %d bytes" % (what, limit))
            data = self._recv()
            if not data:
                if not self.buf and what == "the status line":
                    raise ProbeError("the connection closed without an answer")
                raise ProbeError("the connection closed in the middle of %s" % what)
            self.buf += data

    def exactly(self, count, what):
        while len(self.buf) < count:
            data = self._recv()
            if not data:
                raise ProbeError("the connection closed after %d of the %d bytes of %s" % (len(self.buf), count, what))
            self.buf += data
        out = bytes(self.buf[:count])
        del self.buf[:count]
        return out

    def to_end(self, limit):
        while len(self.buf) <= limit:
            data = self._recv()
            if not data:
                return bytes(self.buf)
            self.buf += data
        raise ProbeError("the answer is larger than %d bytes" % limit)


def _status_and_headers(answer):
    line = answer.line(MAX_HEADER_LINE, "the status line")
    match = _STATUS_LINE.match(line)
    if not match:
        raise ProbeError("the answer is not HTTP/1.x (it starts %s)" % safe_text(repr(line[:60]), 200))
    headers = []
    while True:
        line = answer.line(MAX_HEADER_LINE, "a header line")
        if line in (b"\r\n", b"\n"):
            return int(match.group(1)), headers
        if len(headers) >= MAX_HEADERS:
            raise ProbeError("the answer has more than %d header lines" % MAX_HEADERS)
        header = _HEADER_LINE.match(line)
        if not header:
            raise ProbeError("the answer has a malformed header line: %s" % safe_text(repr(line[:60]), 200))
        headers.append((header.group(1).decode("ascii").lower(), header.group(2).decode("latin-1")))


def _body(answer, status, headers, limit):
    if status < 200 or status in (204, 304):
        return b""
    encodings = [v.strip().lower() for k, v in headers if k == "transfer-encoding"]
    if encodings:
        if encodings[-1] != "chunked":
            raise ProbeError("the answer has an unknown Transfer-Encoding %s" % safe_text(encodings[-1], 100))
        return _chunked(answer, limit)
    lengths = set(v.strip() for k, v in headers if k == "content-length")
    if len(lengths) > 1 or (lengths and not re.match(r"^[0-9]{1,18}$", next(iter(lengths)))):
        raise ProbeError("the answer has an invalid Content-Length %s" % safe_text(", ".join(sorted(lengths)), 100))
    if lengths:
        length = int(lengths.pop())
        if length > limit:
            raise ProbeError("the answer is larger than %d bytes (Content-Length %d)" % (limit, length))
        return answer.exactly(length, "the body")
    return answer.to_end(limit)


def _chunked(answer, limit):
    body = bytearray()
    while True:
        line = answer.line(1024, "a chunk size line")
        match = _CHUNK_SIZE.match(line)
        if not match:
            raise ProbeError("the answer has a malformed chunk size line: %s" % safe_text(repr(line[:60]), 200))
        size = int(match.group(1), 16)
        if size == 0:
            break
        if len(body) + size > limit:
            raise ProbeError("the answer is larger than %d bytes" % limit)
        body += answer.exactly(size, "a chunk")
        if answer.line(3, "the end of a chunk") not in (b"\r\n", b"\n"):
            raise ProbeError("the answer has a chunk longer than its size line says")
    for dummy in range(MAX_HEADERS + 1):  # trailers, then the blank line
        if answer.line(MAX_HEADER_LINE, "a trailer line") in (b"\r\n", b"\n"):
            return bytes(body)
    raise ProbeError("the answer has more than %d trailer lines" % MAX_HEADERS)


def _connect(host, port, deadline, timeout):
    """A socket connected to host:port before the deadline (each address of a name tried in turn)."""
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ProbeError("cannot resolve %s: %s" % (safe_text(host, 300), safe_text(str(exc), 300)))
    error = "no address"
    for family, kind, proto, _name, address in infos:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ProbeError("could not connect within %gs" % timeout)
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(left)
            sock.connect(address)
            return sock
        except socket.timeout:
            sock.close()
            error = "could not connect within %gs" % timeout
        except (IOError, OSError) as exc:
            sock.close()
            error = safe_text(str(exc), 300)
    raise ProbeError("cannot connect to %s port %d: %s" % (safe_text(host, 300), port, error))


def http_request(url, method, path, headers, body, timeout, limit=MAX_BODY):
    """(status, body bytes) of one HTTP/1.1 request; ProbeError saying why there is no usable answer.

    A small client over a socket instead of urllib/http.client: those bound each socket wait, not the
    request (a trickling server holds them for ever), accept a header line up to 64 KiB and answer
    protocol garbage with exceptions of their own. Here ``timeout`` seconds bound everything from the
    connect to the last byte of the body (time.monotonic), the status line and every header line are
    at most 8 KiB, the head 64 KiB and 100 headers, the body ``limit`` bytes; plain HTTP only, no
    proxy, no redirect followed (a 3xx is the answer), Connection: close.
    """
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    request = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % parts.netloc, "Connection: close",
               "User-Agent: inference.gpu_host"]
    request += ["%s: %s" % item for item in sorted(headers.items())]
    if any(c in line for line in request for c in "\r\n\0"):
        raise ProbeError("a request header holds a line break or NUL")  # the callers check; never sent
    data = body or b""
    if body is not None:
        request.append("Content-Length: %d" % len(data))
    sock = _connect(parts.hostname, parts.port or 80, deadline, timeout)
    try:
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(("\r\n".join(request) + "\r\n\r\n").encode("latin-1") + data)
        except socket.timeout:
            raise ProbeError("could not send the request within %gs" % timeout)
        except (IOError, OSError) as exc:
            raise ProbeError("the connection failed while sending the request: %s" % safe_text(str(exc), 300))
        answer = _Answer(sock, deadline, timeout)
        status, answer_headers = _status_and_headers(answer)
        return status, _body(answer, status, answer_headers, limit)
    finally:
        sock.close()


class Http(object):
    """Requests to one server. ``deadline`` (time.monotonic(), None for none) caps every request's timeout:
    a wait of N seconds then ends within N seconds, whatever each request was allowed."""

    def __init__(self, url, api_key, deadline=None):
        self.url = url
        self.deadline = deadline
        self.headers = {"Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer %s" % api_key

    def request(self, path, timeout, data=None, limit=MAX_BODY):
        """(status, body text); status None and body why not when no usable answer came within ``timeout``
        seconds (the whole request: connect, send, status, headers and body)."""
        if self.deadline is not None:
            timeout = max(min(timeout, self.deadline - time.monotonic()), 0.05)
        headers = dict(self.headers)
        body = None
        if data is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(data).encode("utf-8")
        try:
            status, raw = http_request(self.url, "POST" if data is not None else "GET", path, headers, body,
                                       timeout, limit)
        except ProbeError as exc:
            return None, safe_text(str(exc), 500)
        return status, body_text(raw)


def body_text(data):
    # "replace", not surrogateescape: the text may reach the result, which must be valid UTF-8.
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else safe_text(data or "")


def parse_json_answer(body):
    """(object, None) or (None, why): an answer's JSON, at most MAX_JSON_BODY characters and
    MAX_JSON_DEPTH levels (host_files' bounded parser: no input makes json recurse deeper)."""
    if len(body) > MAX_JSON_BODY:
        return None, "larger than %d bytes" % MAX_JSON_BODY
    return parse_json_bounded(body, MAX_JSON_DEPTH)


def model_ids(body):
    """The model ids /v1/models lists (strings, valid UTF-8); [] when the body is not such JSON."""
    data = (parse_json_answer(body)[0] or {})
    data = data.get("data", []) if isinstance(data, dict) else []
    if not isinstance(data, list):
        return []
    return [safe_text(m["id"], 500) for m in data[:1000] if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _answered(path, status, body):
    """"/health answered 503", or "/health: no usable answer: <why>" when the request got none."""
    if status is not None:
        return "%s answered %s" % (path, status)
    return "%s: no usable answer: %s" % (path, body)


def served(http, served_model_name, timeout):
    """(True, model ids) when /health answers 200 and /v1/models lists the name; (False, why) otherwise."""
    status, body = http.request("/health", timeout)
    if status != 200:
        return False, safe_text(_answered("/health", status, body), 1000)
    status, body = http.request("/v1/models", timeout)
    if status != 200:
        return False, safe_text(_answered("/v1/models", status, body), 1000)
    data, why = parse_json_answer(body)
    if why:
        return False, safe_text("/v1/models answered 200 without a JSON model list: %s" % why, 1000)
    ids = model_ids(body)
    if served_model_name not in ids:
        return False, safe_text("/v1/models lists %s, not %s" % (ids, served_model_name), 1000)
    return True, ids


def smoke(http, served_model_name, prompt, max_tokens, timeout):
    """One completion: (result dict, HTTP status, None) or (None, status or None, why it failed)."""
    body = {"model": served_model_name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    t0 = time.monotonic()
    status, text = http.request("/v1/completions", timeout, data=body)
    latency = round(time.monotonic() - t0, 3)
    if status != 200:
        return None, status, "the smoke completion answered %s: %s" % (
            status if status is not None else "nothing", safe_text((text or "")[:300]))
    answer, why = parse_json_answer(text)
    try:
        if why:
            raise ValueError(why)
        choice = (answer.get("choices") or [{}])[0]
        tokens = (answer.get("usage") or {}).get("completion_tokens")
        generated = choice.get("text")
    except (ValueError, AttributeError, IndexError, TypeError, KeyError):
        return None, status, "the smoke completion answered 200 with no JSON completion: %s" % safe_text(text[:300])
    return {"latency": latency, "completion_tokens": tokens if isinstance(tokens, int) else None,
            "text": safe_text(generated, 10000) if isinstance(generated, str) else generated}, status, None


# One sample line of Prometheus' text format: name, labels (quoted values with escapes), value, timestamp.
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\\n]|\\.)*")*\})?[ \t]+(\S+)(?:[ \t]+-?[0-9]+)?[ \t]*$')
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$|^[+-]?(?:Inf|inf|Infinity)$|^(?:NaN|nan)$")
UNREADABLE = "not ready: metrics unreadable"


def parse_spec_metrics(text):
    """(counters, None) or (None, why): the spec-decode counters of /metrics, summed over their label
    sets (one per engine).

    A counter only grows from 0: a value that is NaN, infinite, negative or not a number, a series
    given twice, more accepted than proposed tokens or more drafts than draft tokens is no reading
    of a working server but "not ready: metrics unreadable: <which line>", never a ready answer
    built on it.
    """
    found = {}
    seen = set()
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        key = SPEC_METRICS.get(line.split("{", 1)[0].split(" ", 1)[0].split("\t", 1)[0])
        if key is None:
            continue
        shown = safe_text(line[:300])
        match = _SAMPLE.match(line)
        if not match or not _NUMBER.match(match.group(3)):
            return None, "%s: a malformed sample line: %s" % (UNREADABLE, shown)
        series = (match.group(1), match.group(2) or "")
        if series in seen:
            return None, "%s: the series %s%s is given twice" % (UNREADABLE, series[0], safe_text(series[1][:200]))
        seen.add(series)
        value = float(match.group(3))
        if not math.isfinite(value) or value < 0:
            return None, "%s: %s is %s; a counter is a finite number >= 0" % (UNREADABLE, shown, match.group(3))
        found[key] = found.get(key, 0.0) + value
    drafted, accepted, drafts = (found.get(k) for k in ("num_draft_tokens", "num_accepted_tokens", "num_drafts"))
    if drafted is not None and accepted is not None and accepted > drafted:
        return None, "%s: %g accepted tokens of %g draft tokens" % (UNREADABLE, accepted, drafted)
    if drafted is not None and drafts is not None and drafts > drafted:
        return None, "%s: %g drafts of %g draft tokens" % (UNREADABLE, drafts, drafted)
    return found, None


def spec_decode(http, timeout, previous=None):
    """The speculative decoding counters from /metrics: (dict, None) or (None, why they are missing or unreadable).

    ``previous``: counters read earlier from the same start of the server (before the smoke completion);
    a counter below its earlier value is unreadable too (counters only fall when the server restarts).
    """
    status, text = http.request("/metrics", timeout)
    if status != 200:
        return None, _answered("/metrics", status, text)
    found, problem = parse_spec_metrics(text)
    if problem:
        return None, problem
    fell = sorted(key for key, value in (previous or {}).items() if key in found and found[key] < value)
    if fell:
        return None, "%s: %s fell from %s to %s without a restart" % (
            UNREADABLE, ", ".join(fell), ", ".join("%g" % previous[k] for k in fell),
            ", ".join("%g" % found[k] for k in fell))
    drafted = found.get("num_draft_tokens")
    accepted = found.get("num_accepted_tokens")
    drafts = found.get("num_drafts")
    if drafted is None or accepted is None:
        return None, ("speculative decoding is on but /metrics has no "
                      "vllm:spec_decode_num_draft_tokens_total / vllm:spec_decode_num_accepted_tokens_total "
                      "(was the server started with --speculative-config?)")
    return {
        "num_draft_tokens": drafted,
        "num_accepted_tokens": accepted,
        "num_drafts": drafts,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts and accepted is not None else None,
    }, None


def spec_counters(http, timeout):
    """The spec-decode counters now (a dict), or None when they cannot be read: the ``previous`` of spec_decode."""
    status, text = http.request("/metrics", timeout)
    if status != 200:
        return None
    return parse_spec_metrics(text)[0]


def captured_layers(open_log, drafter_dir):
    """The captured layers of the server's log against the drafter's trained ids.

    ``open_log``: a callable returning the log as a context manager of lines (the unit's journal
    of this start, or a log file). Returns (verdict as dflash.captured_layers_verdict makes it,
    a warning or None).
    """
    path = os.path.join(drafter_dir, "config.json")
    warning = None
    try:
        config = read_json_file(path)[1]
    except (IOError, OSError, ValueError) as e:
        config = None
        warning = "cannot read %s (%s): the captured layers are not verified" % (path, safe_text(str(e), 300))
    with open_log() as log:
        found = find_captured_layers(log)
    verdict = captured_layers_verdict(found, config, path)
    if verdict["verdict"] == "unverified" and config is not None:
        warning = verdict["message"]
    return verdict, warning
