# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""runtime: a gateway server drained or put back through HAProxy's runtime API (issue 29)."""
from __future__ import absolute_import, division, print_function

import os
import socket
import threading

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.runtime import (
    RuntimeApiError, admin_state, parse_servers_state, parse_stat, send, server_step)

STAT_HEADER = "pxname,svname,qcur,qmax,scur,smax,slim,stot,status,weight"
STATE_HEADER = "be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight"


class FakeHaproxy(object):
    """HAProxy's answers for one backend with two servers; sessions end after ``drain_ticks`` reads."""

    def __init__(self, drain_ticks=2, up_after=1):
        self.admin = {"a": 0, "b": 0}
        self.sessions = {"a": 3, "b": 1}
        self.health = {"a": "UP", "b": "UP"}
        self.drain_ticks, self.up_after, self.commands = drain_ticks, up_after, []

    def __call__(self, command):
        self.commands.append(command)
        if command == "show stat":
            rows = []
            for name in ("a", "b"):
                status = "DRAIN" if self.admin[name] & 0x08 and self.health[name] == "UP" else self.health[name]
                rows.append("be_m,%s,0,0,%d,5,,9,%s,1" % (name, self.sessions[name], status))
                if self.admin[name] & 0x08 and self.sessions[name]:
                    self.drain_ticks -= 1
                    if self.drain_ticks <= 0:
                        self.sessions[name] = 0
                if not self.admin[name] & 0x08 and self.health[name] == "DOWN":
                    self.up_after -= 1
                    if self.up_after <= 0:
                        self.health[name] = "UP"
            return "# %s\n%s\n\n" % (STAT_HEADER, "\n".join(rows))
        if command == "show servers state be_m":
            rows = ["3 be_m %d %s 10.0.3.%d %d %d 1" % (i, n, 10 + i, 2, self.admin[n]) for i, n in enumerate("ab")]
            return "1\n# %s\n%s\n" % (STATE_HEADER, "\n".join(rows))
        if command.startswith("set server be_m/"):
            name, state = command[len("set server be_m/"):].split(" state ")
            self.admin[name] = {"drain": 0x08, "ready": 0, "maint": 0x01}[state]
            return "\n"
        return "Unknown command.\n"


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def step(fake, state, server="a", wait=10, check=False):
    clock = Clock()
    params = {"socket": "/unused", "backend": "be_m", "server": server, "state": state, "wait_timeout": wait}
    return server_step(params, check, ask=fake, sleep=clock.sleep, clock=clock)


def test_drain_waits_until_the_sessions_are_gone():
    fake = FakeHaproxy(drain_ticks=3)
    result = step(fake, "drain")
    assert result["changed"] and result["settled"]
    assert result["before"] == {"state": "ready", "status": "UP", "sessions": 3}
    assert result["after"] == {"state": "drain", "status": "DRAIN", "sessions": 0}
    assert "set server be_m/a state drain" in fake.commands
    assert fake.admin["b"] == 0


def test_drain_past_the_bound_does_not_fail():
    result = step(FakeHaproxy(drain_ticks=10 ** 6), "drain", wait=3)
    assert result["changed"] and not result["settled"] and result["waited"] >= 3


def test_a_drained_server_is_left_alone():
    fake = FakeHaproxy()
    fake.admin["a"] = 0x08
    fake.sessions["a"] = 0
    result = step(fake, "drain")
    assert not result["changed"] and not [c for c in fake.commands if c.startswith("set ")]


def test_ready_waits_for_the_health_check():
    fake = FakeHaproxy(up_after=2)
    fake.admin["a"], fake.health["a"] = 0x08, "DOWN"
    result = step(fake, "ready")
    assert result["changed"] and result["after"]["status"] == "UP" and result["after"]["state"] == "ready"


def test_ready_fails_when_the_server_does_not_list_the_model():
    fake = FakeHaproxy(up_after=10 ** 6)
    fake.admin["a"], fake.health["a"] = 0x08, "DOWN"
    with pytest.raises(RuntimeApiError, match=r"be_m/a is back in rotation but its health check is 'DOWN'"):
        step(fake, "ready", wait=5)


def test_check_mode_sends_no_command():
    fake = FakeHaproxy()
    result = step(fake, "drain", check=True)
    assert result["changed"] and fake.admin["a"] == 0
    assert not [c for c in fake.commands if c.startswith("set ")]


def test_unknown_server_and_refused_command():
    with pytest.raises(RuntimeApiError, match=r"the gateway has no server be_m/zz"):
        step(FakeHaproxy(), "drain", server="zz")
    fake = FakeHaproxy()
    real = fake.__call__

    def refusing(command):
        return "No such server.\n" if command.startswith("set ") else real(command)
    with pytest.raises(RuntimeApiError, match=r"set server be_m/a state maint: No such server."):
        step(refusing, "maint")


def test_unexpected_answers():
    with pytest.raises(RuntimeApiError, match="no CSV header"):
        parse_stat("Permission denied.\n")
    with pytest.raises(RuntimeApiError, match="no header"):
        parse_servers_state("1\n")


@pytest.mark.parametrize("bits, state", [
    (0, "ready"), (0x08, "drain"), (0x10, "drain"), (0x01, "maint"), (0x09, "maint"), (0x20, "maint"),
    # disabled in the configuration, and "the FQDN changed": HAProxy's own MAINT mask leaves both out
    (0x04, "ready"), (0x40, "ready"), (0x4C, "drain")])
def test_admin_state_examples(bits, state):
    assert admin_state(bits) == state
    assert admin_state(str(bits)) == state


@given(st.integers(0, 0x7F))
def test_admin_state_bits(bits):
    state = admin_state(bits)
    if bits & 0x23:
        assert state == "maint"
    elif bits & 0x18:
        assert state == "drain"
    else:
        assert state == "ready"


field = st.from_regex(r"\A[A-Za-z0-9_.:-]{0,12}\Z")


@given(st.lists(st.tuples(field, field, st.integers(0, 10 ** 6), st.sampled_from(["UP", "DOWN", "DRAIN", "MAINT", "no check", "UP 1/2"])),
                max_size=6))
def test_stat_reads_back(rows):
    text = "# pxname,svname,scur,status,\n" + "".join("%s,%s,%d,%s,\n" % row for row in rows) + "\n"
    parsed = parse_stat(text)
    assert [(r["pxname"], r["svname"], int(r["scur"]), r["status"]) for r in parsed] == rows


@given(st.lists(st.tuples(st.from_regex(r"\A[A-Za-z0-9_.:-]{1,12}\Z"), st.from_regex(r"\A[A-Za-z0-9_.:-]{1,12}\Z"),
                          st.integers(0, 0x7F)), max_size=6))
def test_servers_state_reads_back(rows):
    text = "1\n# be_id be_name srv_id srv_name srv_admin_state\n" + "".join(
        "3 %s 1 %s %d\n" % row for row in rows)
    parsed = parse_servers_state(text)
    assert [(r["be_name"], r["srv_name"], int(r["srv_admin_state"])) for r in parsed] == rows


def test_send_over_a_unix_socket(tmp_path):
    path = str(tmp_path / "admin.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    got = []

    def serve():
        conn = server.accept()[0]
        got.append(conn.recv(1024))
        conn.sendall(b"# pxname,svname\nbe_m,a\n")
        conn.close()
    thread = threading.Thread(target=serve)
    thread.start()
    try:
        assert parse_stat(send(path, "show stat")) == [{"pxname": "be_m", "svname": "a"}]
    finally:
        thread.join(5)
        server.close()
    assert got == [b"show stat\n"]
    with pytest.raises(RuntimeApiError, match="admin socket"):
        send(os.path.join(str(tmp_path), "missing.sock"), "show stat")
