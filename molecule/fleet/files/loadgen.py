#!/usr/bin/env python
"""A bounded load generator for the fleet scenario: completions through the gateway while a command runs.

  loadgen.py --url http://GATEWAY:PORT/v1/completions --model NAME [--concurrency 2] [--interval 0.5]
             [--before 15] [--after 5] [--max-requests 5000] [--limit 900] -- COMMAND...

Phases: ``before`` (--before seconds of load alone), ``during`` (while COMMAND runs; its output goes to stderr),
``after`` (--after seconds). Every request is a small completion (4 tokens); a request fails on anything but a 200
whose JSON has ``choices`` (a refused connection, a 5xx, a timeout). Each client waits --interval seconds after an
answer: the load must not starve the converge it runs beside on a small machine. Bounded by --max-requests and --limit seconds
in all (COMMAND is killed at the limit). The API key comes from the environment (IGH_API_KEY), never argv.
Prints one JSON object: per phase the requests, the failures, p50/p99 in ms; the command's exit status; the
first failures. Stdlib only (the controller's Python).
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000.0, 1)


class Load(object):
    def __init__(self, args):
        self.args = args
        self.phase = "before"
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.results = {"before": [], "during": [], "after": []}
        self.failures = []
        self.sent = 0
        headers = {"Content-Type": "application/json"}
        if os.environ.get("IGH_API_KEY"):
            headers["Authorization"] = "Bearer " + os.environ["IGH_API_KEY"]
        self.headers = headers
        self.body = json.dumps({"model": args.model, "prompt": "The gateway", "max_tokens": 4,
                                "temperature": 0}).encode()

    def one(self):
        request = urllib.request.Request(self.args.url, data=self.body, headers=self.headers, method="POST")
        start = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=self.args.timeout) as resp:
                ok = resp.status == 200 and "choices" in json.loads(resp.read().decode())
                error = None if ok else "status %d" % resp.status
        except urllib.error.HTTPError as exc:
            ok, error = False, "HTTP %d: %s" % (exc.code, exc.read()[:200].decode("utf-8", "replace"))
        except Exception as exc:  # noqa: BLE001 - every failure counts, whatever its kind
            ok, error = False, "%s: %s" % (type(exc).__name__, exc)
        return ok, time.monotonic() - start, error

    def worker(self):
        while not self.stop.is_set():
            with self.lock:
                if self.sent >= self.args.max_requests:
                    return
                self.sent += 1
                phase = self.phase
            ok, latency, error = self.one()
            with self.lock:
                self.results[phase].append((ok, latency))
                if not ok and len(self.failures) < 20:
                    self.failures.append({"phase": phase, "error": error, "at": round(time.time(), 1)})
            self.stop.wait(self.args.interval)

    def summary(self):
        out = {}
        for phase, rows in self.results.items():
            latencies = [lat for ok, lat in rows if ok]
            out[phase] = {"requests": len(rows), "failed": sum(1 for row in rows if not row[0]),
                          "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99)}
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--before", type=float, default=15)
    parser.add_argument("--after", type=float, default=5)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--max-requests", type=int, default=5000)
    parser.add_argument("--limit", type=float, default=900)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("a command to run under load is required after --")

    load = Load(args)
    deadline = time.monotonic() + args.limit
    threads = [threading.Thread(target=load.worker, daemon=True) for index in range(args.concurrency)]
    for thread in threads:
        thread.start()
    time.sleep(args.before)
    with load.lock:
        load.phase = "during"
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=sys.stderr, stderr=sys.stderr)
    try:
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed at the limit"
    duration = round(time.monotonic() - started, 1)
    with load.lock:
        load.phase = "after"
    time.sleep(args.after)
    load.stop.set()
    for thread in threads:
        thread.join(args.timeout + 5)
    summary = load.summary()
    print(json.dumps({"phases": summary, "failed": sum(p["failed"] for p in summary.values()),
                      "requests": sum(p["requests"] for p in summary.values()), "command_rc": rc,
                      "command_seconds": duration, "concurrency": args.concurrency, "interval": args.interval, "failures": load.failures}))


if __name__ == "__main__":
    main()
