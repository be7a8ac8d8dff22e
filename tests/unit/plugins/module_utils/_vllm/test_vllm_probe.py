# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_vllm/probe.py against what may be on a vLLM port besides a well-behaved vLLM (issue 27, item 4).

Real sockets on 127.0.0.1 (_hostile_http.RawServer): a server that trickles one byte at a time, non-HTTP
bytes, a 64 KB header line, 200 headers, 100,000-deep JSON, bodies too large. Each request must end within
its total deadline (0.3 s here) plus a small slack, as "not ready: <why>", never a traceback. Then the
spec-decode counters: NaN, infinite, negative, inconsistent or falling counters are "not ready: metrics
unreadable". Property tests: random bytes in random chunks with small delays never raise nor overrun the
deadline; random nesting never reaches json's recursion.
"""

import json
import os
import random
import socket
import sys

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import json_depth, parse_json_bounded
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import (
    API_KEY, MAX_BODY, Http, ProbeError, http_request, parse_spec_metrics, served, smoke, spec_decode)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # _hostile_http, shared
from _hostile_http import (  # noqa: E402  pylint: disable=wrong-import-position
    RawServer, Timer, deep_json, http_answer, models_answer, trickle)

DEADLINE = 0.3
SLACK = 0.5  # scheduling on a loaded machine; the client itself stops at the deadline (a trickle takes 2 s+)
# Where the outcome comes from what the server sends, not from the clock (a refusal, or an answer read whole), the
# client may wait longer: on a loaded machine (CI runs vLLM beside the unit tests) the test server's answer can take
# more than DEADLINE to arrive (CI once saw "no complete answer within 0.3s" for a well-formed answer).
PATIENT = 10.0


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


def ask(server, path="/health", timeout=DEADLINE, data=None):
    with Timer() as t:
        status, body = Http(server.url, None).request(path, timeout, data=data)
    return status, body, t.elapsed


# ---- each row of the issue: a bounded "no answer: why", within the deadline ---------------------------

def test_a_server_that_trickles_one_byte_at_a_time_is_cut_at_the_deadline(raw):
    server = raw(lambda path: trickle(http_answer("ok"), 0.05))
    status, body, elapsed = ask(server)
    assert status is None and body == "no complete answer within 0.3s"
    assert DEADLINE - 0.05 <= elapsed < DEADLINE + SLACK


def test_a_server_that_answers_nothing_is_cut_at_the_deadline(raw):
    server = raw(lambda path: None)
    status, body, elapsed = ask(server)
    assert status is None and "no complete answer within 0.3s" in body and elapsed < DEADLINE + SLACK


def test_a_body_that_trickles_after_good_headers_is_cut_at_the_deadline(raw):
    answer = http_answer(b"x" * 100)
    head, body = answer[:-100], answer[-100:]
    server = raw(lambda path: [(head, 0)] + trickle(body, 0.05))
    status, text, elapsed = ask(server)
    assert status is None and text == "no complete answer within 0.3s" and elapsed < DEADLINE + SLACK


@pytest.mark.parametrize("garbage", [
    b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),
    b"HTTP/2 200\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"<html>hello</html>\n",
    b"\x00" * 100 + b"\n",
])
def test_non_http_bytes_are_not_ready_with_the_reason(raw, garbage):
    server = raw(lambda path: garbage)
    status, body, elapsed = ask(server, timeout=PATIENT)
    assert status is None and body.startswith("the answer is not HTTP/1.x (it starts b"), body
    assert elapsed < PATIENT / 2


def test_a_64_kb_header_line_is_refused(raw):
    server = raw(lambda path: b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
    status, body, elapsed = ask(server, timeout=PATIENT)
    assert status is None and body == "a header line is longer than 8192 bytes" and elapsed < PATIENT / 2


def test_a_64_kb_status_line_is_refused(raw):
    server = raw(lambda path: b"HTTP/1.1 200 " + b"O" * 65536 + b"\r\n\r\n")
    status, body = ask(server, timeout=PATIENT)[:2]
    assert status is None and body == "the status line is longer than 8192 bytes"


def test_200_headers_are_refused(raw):
    headers = [b"X-H%d: v" % i for i in range(200)]
    server = raw(lambda path: http_answer("ok", headers=headers))
    status, body, elapsed = ask(server, timeout=PATIENT)
    assert status is None and body == "the answer has more than 100 header lines" and elapsed < PATIENT / 2


def test_100_headers_are_taken(raw):
    headers = [b"X-H%d: v" % i for i in range(98)]  # + Content-Type and Content-Length
    server = raw(lambda path: http_answer("ok", headers=headers))
    assert ask(server, timeout=PATIENT)[:2] == (200, "ok")


def test_a_malformed_header_line_is_refused(raw):
    server = raw(lambda path: b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n")
    status, body = ask(server, timeout=PATIENT)[:2]
    assert status is None and body.startswith("the answer has a malformed header line: b'no colon here")


@pytest.mark.parametrize("headers, needle", [
    ([b"Content-Length: 12x"], "invalid Content-Length 12x"),
    ([b"Content-Length: 2", b"Content-Length: 3"], "invalid Content-Length 2, 3"),
    ([b"Transfer-Encoding: gzip"], "unknown Transfer-Encoding gzip"),
])
def test_bad_framing_is_refused(raw, headers, needle):
    server = raw(lambda path: http_answer(b"ok", headers=headers, length=False))
    status, body = ask(server, timeout=PATIENT)[:2]
    assert status is None and needle in body


def test_a_body_larger_than_the_bound_is_refused_by_its_length(raw):
    server = raw(lambda path: b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY + 1), keep_open=True)
    status, body, elapsed = ask(server, timeout=PATIENT)
    assert status is None and body == "the answer is larger than %d bytes (Content-Length %d)" % (MAX_BODY, MAX_BODY + 1)
    assert elapsed < PATIENT / 2


def test_a_body_larger_than_the_bound_is_refused_without_a_length(raw):
    server = raw(lambda path: http_answer(b"x" * (MAX_BODY + 10), length=False))
    status, body = ask(server, timeout=5)[:2]
    assert status is None and body == "the answer is larger than %d bytes" % MAX_BODY


def test_a_body_shorter_than_its_length_is_refused(raw):
    server = raw(lambda path: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    status, body = ask(server, timeout=PATIENT)[:2]
    assert status is None and body == "the connection closed after 3 of the 10 bytes of the body"


def test_a_server_that_closes_at_once_and_nothing_listening(raw):
    server = raw(lambda path: b"")
    assert ask(server, timeout=PATIENT)[:2] == (None, "the connection closed without an answer")
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with Timer() as t:
        status, body = Http("http://127.0.0.1:%d" % port, None).request("/health", DEADLINE)
    assert status is None and body.startswith("cannot connect to 127.0.0.1 port %d: " % port)
    assert "refused" in body.lower() and t.elapsed < DEADLINE


def test_well_formed_answers_are_read(raw):
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
    answers = {"/len": http_answer({"a": 1}), "/chunked": chunked, "/close": http_answer(b"to the end", length=False),
               "/404": http_answer({"detail": "Not Found"}, status="404 Not Found"),
               "/204": b"HTTP/1.1 204 No Content\r\n\r\n", "/slow": [(http_answer("ok")[:10], 0),
                                                                     (http_answer("ok")[10:], 0.1)]}
    server = raw(lambda path: answers[path], keep_open=True)
    assert ask(server, "/len", timeout=PATIENT)[:2] == (200, '{"a": 1}')
    assert ask(server, "/chunked", timeout=PATIENT)[:2] == (200, "hello world")
    assert ask(server, "/404", timeout=PATIENT)[:2] == (404, '{"detail": "Not Found"}')
    # keep_open: a read to the end would wait for the timeout and answer None
    assert ask(server, "/204", timeout=PATIENT)[:2] == (204, "")  # no body
    # the length ends the answer, not the connection:
    assert ask(server, "/len", timeout=PATIENT)[:2] == (200, '{"a": 1}')
    assert ask(server, "/slow", timeout=PATIENT)[:2] == (200, "ok")
    server2 = raw(lambda path: answers[path])
    assert ask(server2, "/close", timeout=PATIENT)[:2] == (200, "to the end")


def test_the_request_sent(raw):
    server = raw(lambda path: http_answer("{}"))
    status = Http(server.url, "sekret").request("/v1/completions", 1, data={"model": "m"})[0]
    method, path, head, body = server.requests[0]
    assert status == 200 and (method, path) == ("POST", "/v1/completions") and json.loads(body) == {"model": "m"}
    assert b"\r\nAuthorization: Bearer sekret\r\n" in head and b"\r\nHost: 127.0.0.1:%d\r\n" % server.port in head
    assert b"\r\nConnection: close" in head


def test_a_header_with_a_line_break_is_never_sent():
    with pytest.raises(ProbeError, match="line break"):
        http_request("http://127.0.0.1:9", "GET", "/health", {"Authorization": "Bearer a\r\nX: y"}, None, 0.3)
    assert API_KEY.match("key\n") is None and API_KEY.match("key")


# ---- JSON answers: depth and size bounded, never a RecursionError ---------------------------------------

def test_100000_deep_json_in_v1_models_is_not_ready(raw):
    answers = {"/health": http_answer(""), "/v1/models": http_answer(deep_json())}
    server = raw(lambda path: answers[path])
    with Timer() as t:
        ok, why = served(Http(server.url, None), "tiny", DEADLINE)
    assert not ok and why == "/v1/models answered 200 without a JSON model list: nested deeper than 64 levels"
    assert t.elapsed < 2 * DEADLINE + SLACK


def test_100000_deep_json_in_a_completion_is_a_failed_smoke(raw):
    server = raw(lambda path: http_answer(b'{"choices": ' + b"[" * 100000 + b"]" * 100000 + b"}"))
    result, status, error = smoke(Http(server.url, None), "tiny", "hi", 1, PATIENT)
    assert result is None and status == 200 and error.startswith("the smoke completion answered 200 with no JSON")


def test_a_json_answer_over_1_mib_is_not_parsed(raw):
    answers = {"/health": http_answer(""), "/v1/models": http_answer(b'{"data": [' + b" " * (1 << 20) + b"]}")}
    server = raw(lambda path: answers[path])
    ok, why = served(Http(server.url, None), "tiny", 2)
    assert not ok and why == "/v1/models answered 200 without a JSON model list: larger than 1048576 bytes"


def test_ready_when_served(raw):
    answers = {"/health": http_answer(""), "/v1/models": models_answer("tiny")}
    server = raw(lambda path: answers[path])
    assert served(Http(server.url, None), "tiny", PATIENT) == (True, ["tiny"])


# ---- spec-decode counters -------------------------------------------------------------------------------

GOOD = ('# TYPE vllm:spec_decode_num_drafts_total counter\n'
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 7.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny"} 21.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 3.0\n')


def test_good_counters_sum_over_engines_and_timestamps_are_not_values():
    text = GOOD + ('vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="a b}"} 9 1712345678000\n'
                   'vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="tiny"} 1e1\n')
    assert parse_spec_metrics(text) == ({"num_drafts": 7.0, "num_draft_tokens": 30.0, "num_accepted_tokens": 13.0},
                                        None)


@pytest.mark.parametrize("line, needle", [
    ('vllm:spec_decode_num_draft_tokens_total{engine="1"} NaN', "is NaN; a counter is a finite number >= 0"),
    ('vllm:spec_decode_num_draft_tokens_total{engine="1"} +Inf', "is +Inf; a counter is a finite number >= 0"),
    ('vllm:spec_decode_num_accepted_tokens_total{engine="1"} -4', "is -4; a counter is a finite number >= 0"),
    ('vllm:spec_decode_num_accepted_tokens_total{engine="1"} twelve', "a malformed sample line"),
    ('vllm:spec_decode_num_accepted_tokens_total{engine="1" 3', "a malformed sample line"),
    ('vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 7.0', "is given twice"),
    ('vllm:spec_decode_num_accepted_tokens_total{engine="1"} 100', "103 accepted tokens of 21 draft tokens"),
    ('vllm:spec_decode_num_drafts_total{engine="1"} 100', "107 drafts of 21 draft tokens"),
])
def test_unreadable_counters_are_not_ready(raw, line, needle):
    found, why = parse_spec_metrics(GOOD + line + "\n")
    assert found is None and why.startswith("not ready: metrics unreadable: ") and needle in why, why
    server = raw(lambda path: http_answer(GOOD + line + "\n", content_type="text/plain"))
    spec, error = spec_decode(Http(server.url, None), PATIENT)
    assert spec is None and error == why


def test_counters_that_fell_since_the_last_read_are_not_ready(raw):
    server = raw(lambda path: http_answer(GOOD, content_type="text/plain"))
    http = Http(server.url, None)
    spec, error = spec_decode(http, PATIENT, previous={"num_draft_tokens": 21.0, "num_accepted_tokens": 3.0})
    assert error is None and spec["acceptance_rate"] == round(3 / 21.0, 4)
    spec, error = spec_decode(http, PATIENT, previous={"num_draft_tokens": 40.0, "num_accepted_tokens": 3.0})
    assert spec is None
    assert error == "not ready: metrics unreadable: num_draft_tokens fell from 40 to 21 without a restart"


# ---- properties ----------------------------------------------------------------------------------------

PROPERTY_DEADLINE = 0.2


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=3000), seed=st.integers(0, 2 ** 32 - 1),
       prefix=st.sampled_from([b"", b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                               b"HTTP/1.0 503 x\r\nContent-Length: 99\r\n\r\n"]))
def test_random_bytes_in_random_chunks_never_raise_nor_overrun(data, seed, prefix):
    rnd = random.Random(seed)
    payload = prefix + data
    chunks, at = [], 0
    while at < len(payload):
        size = rnd.choice([1, 2, 7, 64, 1500, 4000])
        chunks.append((payload[at:at + size], rnd.choice([0, 0, 0, 0.002, 0.02])))
        at += size
    server = RawServer(lambda path: chunks, keep_open=rnd.random() < 0.2)
    try:
        with Timer() as t:
            status, body = Http(server.url, None).request("/metrics", PROPERTY_DEADLINE)
        assert t.elapsed < PROPERTY_DEADLINE + SLACK
        assert isinstance(body, str)
        body.encode("utf-8")  # valid UTF-8 whatever came
        if status is not None:
            parse_spec_metrics(body)  # (found, why): never raises
            parse_json_bounded(body)
    finally:
        server.close()


def _nest(rnd, depth):
    """Random JSON-ish text nested ``depth`` deep, with strings that hold brackets and escapes."""
    parts = rnd.choices(['[', '{"k":', '["]\\"[", ', '[1, '], k=depth)
    closers = "".join("]" if p.startswith("[") else "}" for p in reversed(parts))
    return "".join(parts) + rnd.choice(['0', '"x"', '"\\\\"', 'null']) + closers, depth


@settings(max_examples=30, deadline=None)
# Past 1000 levels json raises RecursionError (its C scanner counts Python's recursion limit); 100,000 is
# test_100000_deep_json_* above and test_host_files_bounded.py.
@given(depth=st.one_of(st.integers(0, 80), st.integers(1000, 5000)), seed=st.integers(0, 1000),
       cut=st.integers(0, 50))
def test_random_nesting_never_reaches_a_recursion_error(depth, seed, cut):
    text, depth = _nest(random.Random(seed), depth)
    assert json_depth(text) == depth
    found, why = parse_json_bounded(text)
    assert (why is None) == (depth <= 64) and (why is None or why == "nested deeper than 64 levels")
    # cut short or with brackets mixed up: json's own message, or the depth refusal; never an exception
    found, why = parse_json_bounded(text[:len(text) - cut] + "}" * (cut % 3))
    assert why is None or isinstance(why, str)


@given(st.text(alphabet='[]{}"\\, :1a', max_size=400))
def test_random_bracket_soup_never_raises(text):
    found, why = parse_json_bounded(text)
    assert why is not None or json.loads(text) == found
