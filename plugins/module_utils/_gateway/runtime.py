# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""One server of the gateway taken out of rotation or put back, through HAProxy's runtime API (the admin socket).

``drain``: no new request reaches the server, those in flight finish; the step then waits until the server's
sessions are gone or ``wait_timeout`` passes (vLLM's own --shutdown-timeout drains what is left). ``ready``: back in
rotation; the step waits until the health check sees the model again (``UP``), and fails when it does not within
``wait_timeout``. ``maint``: out of rotation, checks stopped. The admin state is read from ``show servers state``
(its bits say drain and maintenance apart from health), sessions and health from ``show stat``.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import re
import socket
import time

# srv_admin_state bits, HAProxy 2.x include/haproxy/server-t.h: SRV_ADMF_MAINT (forced, inherited, address
# resolution failed) and SRV_ADMF_DRAIN (forced, inherited). 0x04 (disabled in the configuration) and 0x40 (the
# FQDN changed) are left out of the mask there too.
MAINT_BITS = 0x23
DRAIN_BITS = 0x18
STATES = ("ready", "drain", "maint")


# `show stat` of a gateway with thousands of servers is a few MiB; an answer beyond this is not HAProxy's.
MAX_ANSWER_BYTES = 16 << 20
_COUNT = re.compile(r"\A[0-9]{1,12}\Z")


class RuntimeApiError(Exception):
    """The admin socket could not be reached or answered something unexpected."""


def send(path, command, timeout=10.0):
    """One command on the admin socket; its whole answer, within ``timeout`` seconds in all (connect to last byte:
    a socket's own timeout bounds each wait, so an answer trickling a byte at a time would never end)."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    chunks, size = [], 0

    def left():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline")
        return remaining
    try:
        sock.settimeout(left())
        sock.connect(path)
        sock.settimeout(left())
        sock.sendall(command.encode("ascii") + b"\n")
        while True:
            sock.settimeout(left())
            chunk = sock.recv(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise RuntimeApiError("HAProxy's admin socket %s answered %r with more than %d bytes"
                                      % (path, command, MAX_ANSWER_BYTES))
            chunks.append(chunk)
    except socket.timeout:
        raise RuntimeApiError("HAProxy's admin socket %s did not answer %r within %g s" % (path, command, timeout))
    except OSError as exc:
        raise RuntimeApiError("HAProxy's admin socket %s: %s" % (path, exc))
    finally:
        sock.close()
    return b"".join(chunks).decode("utf-8", "replace")


def _where(backend, server):
    return "%s/%s: " % (backend, server) if backend or server else ""


def parse_stat(text, backend="", server=""):
    """``show stat`` (CSV whose header line starts with ``# ``) as a list of dicts; every row has the header's
    fields, else RuntimeApiError naming the server asked about (``backend``/``server``)."""
    where = _where(backend, server)
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or not lines[0].startswith("# "):
        raise RuntimeApiError("%sshow stat answered no CSV header: %r" % (where, text[:200]))
    rows = list(csv.reader([lines[0][2:]] + lines[1:]))
    header = rows[0]
    for row in rows[1:]:
        if len(row) != len(header):
            raise RuntimeApiError("%sshow stat answered a row of %d fields under a header of %d (cut short?): %r"
                                  % (where, len(row), len(header), ",".join(row)[:200]))
    return [dict(zip(header, row)) for row in rows[1:]]


def parse_servers_state(text, backend="", server=""):
    """``show servers state`` (a version line, a ``# `` header, space-separated rows) as a list of dicts; every row
    has the header's fields, else RuntimeApiError naming the server asked about."""
    where = _where(backend, server)
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2 or not lines[1].startswith("# "):
        missing = "the gateway has no backend %s: " % backend if "Can't find backend" in text and backend else ""
        raise RuntimeApiError("%s%sshow servers state%s answered no header: %r" % (
            where, missing, " " + backend if backend else "", text[:200]))
    header = lines[1][2:].split()
    rows = []
    for line in lines[2:]:
        if line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != len(header):
            raise RuntimeApiError("%sshow servers state answered a row of %d fields under a header of %d (cut "
                                  "short?): %r" % (where, len(fields), len(header), line[:200]))
        rows.append(dict(zip(header, fields)))
    return rows


def admin_state(bits):
    """The admin state one ``srv_admin_state`` value means: maint, drain or ready."""
    bits = int(bits)
    if bits & MAINT_BITS:
        return "maint"
    return "drain" if bits & DRAIN_BITS else "ready"


def server_view(stat_rows, state_rows, backend, server):
    """{state, status, sessions} of one server, or None when the gateway has no such server; RuntimeApiError
    naming it when its rows lack a field or hold a count that is not one."""
    stat = [r for r in stat_rows if r.get("pxname") == backend and r.get("svname") == server]
    admin = [r for r in state_rows if r.get("be_name") == backend and r.get("srv_name") == server]
    if not stat or not admin:
        return None
    bits, sessions, status = admin[0].get("srv_admin_state"), stat[0].get("scur"), stat[0].get("status")
    for what, value, command in (("srv_admin_state", bits, "show servers state"), ("scur", sessions, "show stat")):
        if not isinstance(value, str) or not _COUNT.match(value):
            raise RuntimeApiError("%s/%s: %s answered %s=%r, expected a count"
                                  % (backend, server, command, what, value))
    if not isinstance(status, str):
        raise RuntimeApiError("%s/%s: show stat answered no status column" % (backend, server))
    return {"state": admin_state(bits), "status": status, "sessions": int(sessions)}


def read_server(ask, backend, server):
    view = server_view(parse_stat(ask("show stat"), backend, server),
                       parse_servers_state(ask("show servers state %s" % backend), backend, server), backend, server)
    if view is None:
        raise RuntimeApiError("the gateway has no server %s/%s (is the host in the model's inventory group, and the "
                              "gateway converged since?)" % (backend, server))
    return view


def _settled(view, state):
    if state == "drain":
        return view["sessions"] == 0
    if state == "ready":
        return view["status"].startswith("UP")
    return True


def server_step(params, check_mode, ask=None, sleep=time.sleep, clock=time.monotonic):
    """The module's one entry: set the server's admin state (unless it has it) and wait for it to settle.

    params: socket, backend, server, state (ready|drain|maint), wait_timeout (seconds, 0: do not wait).
    """
    if params["state"] not in STATES:
        raise RuntimeApiError("state must be one of %s" % ", ".join(STATES))
    ask = ask or (lambda command: send(params["socket"], command))
    backend, server, state = params["backend"], params["server"], params["state"]
    before = read_server(ask, backend, server)
    changed = before["state"] != state
    result = {"changed": changed, "before": before, "after": before, "waited": 0.0, "settled": True}
    if check_mode:
        return result
    if changed:
        answer = ask("set server %s/%s state %s" % (backend, server, state)).strip()
        if answer:
            raise RuntimeApiError("set server %s/%s state %s: %s" % (backend, server, state, answer))
    start = clock()
    view = read_server(ask, backend, server)
    while not _settled(view, state) and clock() - start < params["wait_timeout"]:
        sleep(1.0)
        view = read_server(ask, backend, server)
    result.update(after=view, waited=round(clock() - start, 1), settled=_settled(view, state))
    if state == "ready" and not result["settled"]:
        raise RuntimeApiError("%s/%s is back in rotation but its health check is %r after %ss: the server does not "
                              "list the model" % (backend, server, view["status"], params["wait_timeout"]))
    return result
