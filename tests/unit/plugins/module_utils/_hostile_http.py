# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""A real TCP server on 127.0.0.1 that answers whatever bytes a test scripts: what is on a vLLM port when it
is not a well-behaved vLLM (a trickle, garbage, huge or countless headers, deep JSON).

Shared by test_vllm_probe_bounded.py (the client itself) and the module tests
(tests/unit/plugins/modules/test_vllm_probe_hostile.py). Only ever binds 127.0.0.1.
"""

import json
import socket
import threading
import time


def http_answer(body=b"", status="200 OK", headers=(), content_type="application/json", length=True):
    """The bytes of one HTTP/1.1 answer (Content-Length unless ``length`` is False)."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
    lines = ["HTTP/1.1 %s" % status, "Content-Type: %s" % content_type]
    if length:
        lines.append("Content-Length: %d" % len(body))
    head = "\r\n".join(lines).encode() + b"".join(b"\r\n" + h for h in headers) + b"\r\n\r\n"
    return head + body


def models_answer(*names):
    return http_answer({"object": "list", "data": [{"id": n, "object": "model"} for n in names]})


def deep_json(depth=100000):
    return b'{"data": ' + b"[" * depth + b"]" * depth + b"}"


class RawServer(object):
    """Listens on 127.0.0.1; each connection: the request is read (head and Content-Length body), then
    ``answer(path)`` gives the reply: bytes, or a list of (bytes, delay before them) chunks, or None
    (send nothing, keep the connection open). The connection is closed afterwards unless ``keep_open``."""

    def __init__(self, answer, keep_open=False):
        self.answer = answer
        self.keep_open = keep_open
        self.requests = []
        self.stopped = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self._conns = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn = self.sock.accept()[0]
            except socket.timeout:
                continue
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn):
        conn.settimeout(2)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 1 << 20:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, dummy, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = 0
        for line in lines[1:]:
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        method, path = lines[0].split(b" ")[:2]
        self.requests.append((method.decode(), path.decode(), head, body))
        return path.decode()

    def _serve(self, conn):
        try:
            path = self._read_request(conn)
            if path is None:
                return
            reply = self.answer(path)
            if reply is None:
                self.stopped.wait(30)
                return
            chunks = [(reply, 0)] if isinstance(reply, bytes) else reply
            for data, delay in chunks:
                if delay and self.stopped.wait(delay):
                    return
                conn.sendall(data)
            if self.keep_open:
                self.stopped.wait(30)
        except OSError:
            pass  # the client gave up and closed: what the tests want of it
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        self.sock.close()
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass


def trickle(data, every):
    """``data`` one byte at a time, ``every`` seconds apart."""
    return [(data[i:i + 1], every) for i in range(len(data))]


class Timer(object):
    """with Timer() as t: ...; t.elapsed (time.monotonic)."""

    def __enter__(self):
        self.start = time.monotonic()
        self.elapsed = None
        return self

    def __exit__(self, *exc):
        self.elapsed = time.monotonic() - self.start
