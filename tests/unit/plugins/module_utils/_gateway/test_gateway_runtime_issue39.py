# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 39: every wait on HAProxy's admin socket has a total deadline, and every answer of its runtime API is
parsed whole or refused naming the backend and server."""
from __future__ import absolute_import, division, print_function

import contextlib
import socket
import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gateway import runtime
from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.runtime import RuntimeApiError, send

STAT = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,status,weight\nbe_m,a,0,0,0,5,,9,UP,1\n\n"
STATE_HEADER = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight\n"
STATE = STATE_HEADER + "3 be_m 1 a 10.0.3.10 2 0 1\n"


@contextlib.contextmanager
def admin_socket(path, answer):
    """A unix socket at ``path`` that takes one connection, reads the command and lets ``answer(conn, stop)`` reply
    (in a thread); ``stop`` is set when the test is done with it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    stop = threading.Event()

    def serve():
        conn = listener.accept()[0]
        try:
            conn.recv(1024)
            answer(conn, stop)
        except OSError:
            pass  # the client gave up and closed: what the tests want of it
        finally:
            conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _trickle(conn, stop):
    """HAProxy answering a byte every 0.1 s, for 6 s."""
    for dummy in range(60):
        if stop.is_set():
            return
        conn.sendall(b"#")
        time.sleep(0.1)


# Row 6: the admin socket answers slowly, a byte at a time.
def test_row6_a_slow_answer_ends_at_the_deadline(tmp_path):
    path = str(tmp_path / "admin.sock")
    with admin_socket(path, _trickle):
        start = time.monotonic()
        with pytest.raises(RuntimeApiError, match=r"admin socket .* did not answer .*show stat.* within 1"):
            send(path, "show stat", timeout=1.0)
        assert time.monotonic() - start < 2.5


def test_row6_the_module_step_ends_at_the_deadline(tmp_path):
    path = str(tmp_path / "admin.sock")
    params = {"socket": path, "backend": "be_m", "server": "a", "state": "drain", "wait_timeout": 0}
    with admin_socket(path, _trickle):
        start = time.monotonic()
        with pytest.raises(RuntimeApiError, match="did not answer"):
            runtime.server_step(params, False, ask=lambda command: send(path, command, timeout=1.0))
        assert time.monotonic() - start < 2.5


def test_an_answer_too_large_is_refused(tmp_path):
    path = str(tmp_path / "admin.sock")

    def flood(conn, stop):
        chunk = b"x" * (1 << 20)
        for dummy in range(runtime.MAX_ANSWER_BYTES // len(chunk) + 2):
            conn.sendall(chunk)
    with admin_socket(path, flood):
        with pytest.raises(RuntimeApiError, match="more than"):
            send(path, "show stat", timeout=10.0)


# Row 7: a `show servers state` row cut short; a backend name the gateway does not have.
def _fake(stat=STAT, state=STATE):
    def ask(command):
        if command == "show stat":
            return stat
        if command == "show servers state be_m":
            return state
        if command.startswith("show servers state "):
            return "Can't find backend.\n"
        return "\n"
    return ask


def _step(ask, backend="be_m", server="a", state="drain"):
    params = {"socket": "/unused", "backend": backend, "server": server, "state": state, "wait_timeout": 0}
    return runtime.server_step(params, True, ask=ask)


@pytest.mark.parametrize("row", ["3 be_m 1 a 10.0.3.10", "3 be_m 1 a 10.0.3.10 2", "3 be_m 1 a 10.0.3.10 2 x 1",
                                 "3 be_m 1 a 10.0.3.10 2 0 1 extra"])
def test_row7_a_servers_state_row_cut_short_or_odd_is_refused_naming_the_server(row):
    with pytest.raises(RuntimeApiError, match="be_m/a"):
        _step(_fake(state=STATE_HEADER + row + "\n"))


@pytest.mark.parametrize("row", ["be_m,a,0", "be_m,a,0,0,many,5,,9,UP,1", "be_m,a,0,0,0,5,,9,UP,1,extra"])
def test_row7_a_stat_row_cut_short_or_odd_is_refused_naming_the_server(row):
    stat = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,status,weight\n%s\n" % row
    with pytest.raises(RuntimeApiError, match="be_m/a"):
        _step(_fake(stat=stat), state="ready")


def test_row7_a_backend_the_gateway_does_not_have_is_named():
    with pytest.raises(RuntimeApiError) as err:
        _step(_fake(), backend="be_typo")
    assert "be_typo" in str(err.value) and "be_typo/a" in str(err.value)
    assert "Can't find backend." in str(err.value)


def test_an_honest_answer_is_read():
    assert _step(_fake())["before"] == {"state": "ready", "status": "UP", "sessions": 0}


# Property: whatever the socket answers, the step reads it whole or refuses naming the backend and server.
_line = st.one_of(
    st.text(alphabet="be_m a,#0123456789 UPDOWNx\t.:", max_size=40),
    st.sampled_from(["be_m,a,0,0,0,5,,9,UP,1", "3 be_m 1 a 10.0.3.10 2 0 1", "3 be_m 1 a", "be_m,a",
                     "# pxname,svname,scur,status", "# be_id be_name srv_id srv_name srv_admin_state", "1"]))


@settings(max_examples=100)
@given(st.lists(_line, max_size=5), st.lists(_line, max_size=5))
def test_property_any_answer_is_read_or_refused_naming_the_server(stat_lines, state_lines):
    try:
        view = _step(_fake(stat="\n".join(stat_lines), state="\n".join(state_lines)))["before"]
    except RuntimeApiError as exc:
        assert "be_m" in str(exc)
        return
    assert view["state"] in runtime.STATES and isinstance(view["status"], str) and view["sessions"] >= 0
