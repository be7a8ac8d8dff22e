# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_wait_ready module's work: wait until a vLLM server serves, prove it, or say why it failed.

wait_ready(module) is the one entry point (the module's main() calls it). The HTTP requests are
probe.py's, the root cause log.py's, the captured layers captured_layers.py's, the unit's state and
journal _common/systemd.py's; this file holds the wait itself: the option checks, when to stop
waiting (the unit stopped or restarted, the process exited, the timeout) and the failure message.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import os
import stat
import time

from ansible_collections.inference.gpu_host.plugins.module_utils._common.network import PORT_RANGE, port_number
from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text
from ansible_collections.inference.gpu_host.plugins.module_utils._common.systemd import (
    MAX_JOURNAL_LINES, SystemdError, UnitJournal, check_unit_name)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    MAX_RELEVANT_LINES, VllmLogError, failure_message, find_root_cause, journal_root_cause, open_log_file)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import (
    API_KEY, Http, captured_layers, check_host, served, smoke, spec_counters, spec_decode)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import probe_url

__all__ = ["UNIT_PROPERTIES", "WaitFailed", "check_params", "wait_ready"]

# The unit's state the wait reads (returned as unit_state): whether it still runs, and the same start.
UNIT_PROPERTIES = ("ActiveState", "SubState", "Result", "InvocationID", "NRestarts", "MainPID",
                   "ExecMainStartTimestamp", "ExecMainStatus", "LoadState")
_ALIVE_STATES = ("active", "activating", "reloading")


def check_params(p):
    """Every problem with the options, each naming the option and what is expected ([] when none)."""
    errors = []

    def need(ok, text):
        if not ok:
            errors.append(text)

    host_error = check_host(p["host"])
    need(host_error is None, host_error)
    # The module's one port check (the range is _common/network.py's); probe_url below then finds it good.
    need(port_number(p["port"]) is not None, "port must be from %d to %d, got %d" % (PORT_RANGE + (p["port"],)))
    need(p["served_model_name"].strip() != "",
         "served_model_name must be the model name the server serves (its --served-model-name), got an empty string")
    if p["unit"]:
        try:
            check_unit_name(p["unit"])
        except SystemdError as e:
            errors.append(str(e))
        need(p["pid"] is None, "pid is only for a server run without a unit; with unit=%s give no pid"
             % safe_text(p["unit"], 300))
        need(p["log_path"] is None, "log_path is only read without a unit (with a unit its journal is read); "
             "give unit or log_path, not both")
    need(p["pid"] is None or p["pid"] >= 1, "pid must be a process id (>= 1), got %s" % p["pid"])
    if p["log_path"] is not None:
        errors.extend(_log_path_errors(p["log_path"]))
    need(p["timeout"] >= 1, "timeout must be a number of seconds >= 1, got %d" % p["timeout"])
    need(math.isfinite(p["poll_interval"]) and 0 < p["poll_interval"] <= 3600,
         "poll_interval must be a number of seconds above 0 and at most 3600, got %s" % p["poll_interval"])
    for name in ("request_timeout", "smoke_timeout", "smoke_max_tokens"):
        need(p[name] >= 1, "%s must be >= 1, got %d" % (name, p[name]))
    need(not p["smoke"] or p["smoke_prompt"] != "", "smoke_prompt must not be empty when smoke is true")
    need(1 <= p["journal_lines"] <= MAX_JOURNAL_LINES,
         "journal_lines must be from 1 to %d, got %d" % (MAX_JOURNAL_LINES, p["journal_lines"]))
    need(3 <= p["max_lines"] <= MAX_RELEVANT_LINES,
         "max_lines must be from 3 to %d, got %d" % (MAX_RELEVANT_LINES, p["max_lines"]))
    need(p["drafter_dir"] is None or (p["speculative"] and os.path.isabs(p["drafter_dir"])),
         "drafter_dir must be an absolute path (the drafter's directory) and needs speculative: true, got %r"
         % (safe_text(p["drafter_dir"] or "", 300),))
    # A bearer token goes into an HTTP header: a newline or a space there would be a broken (or injected) header.
    need(p["api_key"] is None or bool(API_KEY.match(p["api_key"])),
         "api_key must be the server's --api-key: printable ASCII without spaces or line breaks")
    return errors


def _log_path_errors(path):
    # The log may appear only once the server writes to it; what is there must be a log file, though.
    shown = safe_text(path, 500)
    if not os.path.isabs(path):
        return ["log_path must be an absolute path to the server's log file, got the relative path %s" % shown]
    try:
        st = os.stat(path)
    except OSError:
        return []
    if stat.S_ISDIR(st.st_mode):
        return ["log_path: %s is a directory; expected the server's log file" % shown]
    if not stat.S_ISREG(st.st_mode):
        return ["log_path: %s is not a regular file (a device, pipe or socket); expected the server's log file" % shown]
    return []


def _pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            # "pid (comm) S ...": a zombie (Z) or dead (X) process has exited.
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (IOError, OSError, IndexError):
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


class WaitFailed(Exception):
    """The wait failed: ``msg`` for fail_json, ``result`` the rest of the module's result."""

    def __init__(self, msg, result):
        Exception.__init__(self, msg)
        self.msg = msg
        self.result = result


class Waiter(object):
    """One wait of vllm_wait_ready, through the module (its params, run_command, get_bin_path, warn)."""

    def __init__(self, module, url):
        self.module = module
        self.p = module.params
        self.url = url
        self.http = Http(self.url, self.p["api_key"])
        self.result = dict(changed=False, ready=False, url=self.url)
        self.start = time.time()
        self.journal = UnitJournal(module, self.p["unit"]) if self.p["unit"] else None
        self.initial = None
        self.counters_before = None

    def state(self):
        return self.journal.state(UNIT_PROPERTIES)

    def stopped_reason(self):
        """Why waiting is pointless now, or None."""
        if self.p["unit"]:
            st = self.state()
            self.result["unit_state"] = st
            if st.get("ActiveState") not in _ALIVE_STATES or st.get("SubState") == "auto-restart":
                return "unit_stopped", "the unit is %s/%s" % (st.get("ActiveState"), st.get("SubState"))
            if (st.get("InvocationID") != self.initial.get("InvocationID")
                    or st.get("NRestarts") != self.initial.get("NRestarts")):
                return "unit_restarted", "the unit restarted (NRestarts %s -> %s)" % (
                    self.initial.get("NRestarts"), st.get("NRestarts"))
        elif self.p["pid"] and not _pid_alive(self.p["pid"]):
            return "process_exited", "process %d exited" % self.p["pid"]
        return None

    def fail(self, reason, detail):
        self.result["elapsed"] = round(time.time() - self.start, 1)
        self.result["reason"] = reason
        label = self.p["unit"] or "vLLM at %s" % self.url
        cause, read_error = None, None
        try:
            cause = self.read_cause()
        except (VllmLogError, SystemdError, IOError, OSError) as e:
            read_error = safe_text(str(e), 1000)
        if cause and cause.get("found"):
            msg = failure_message(label, cause)
            self.result["root_cause"] = dict((k, v) for k, v in cause.items() if k != "relevant_lines")
            self.result["relevant_lines"] = cause["relevant_lines"]
            msg += " (%s; waited %.1fs)" % (detail, self.result["elapsed"])
        else:
            msg = "%s failed: %s; waited %.1fs; %s" % (label, detail, self.result["elapsed"],
                                                       self.no_cause(cause, read_error))
            self.result["relevant_lines"] = (cause or {}).get("relevant_lines", [])
        raise WaitFailed(msg, self.result)

    def no_cause(self, cause, read_error):
        """Why no root cause is given: a journal that is unavailable (journalctl failed, journald stopped: then
        an empty journal is no evidence), a log that could not be read, or a log without one."""
        if self.p["unit"]:
            try:
                unavailable = self.journal.unavailable(read_error)
            except (VllmLogError, SystemdError, IOError, OSError) as e:
                unavailable = read_error or safe_text(str(e), 1000)
            if unavailable:
                self.result["journal_unavailable"] = unavailable
                return "the journal is unavailable (%s), so no root cause could be read" % unavailable
        if read_error:
            return "the log could not be read: %s" % read_error
        if cause is None:
            return "no log was read (give unit or log_path for the root cause)"
        if not cause.get("lines_read"):
            return "its log has no line of this run, so no root cause could be read"
        return "no root cause found in its log"

    def read_cause(self):
        """The root cause in the unit's journal (the invocation waited for) or in log_path; None without either."""
        if self.p["unit"]:
            # The invocation that was waited for: after a restart, the one that failed.
            inv = (self.initial or {}).get("InvocationID") or None
            return journal_root_cause(self.journal, inv, None, self.p["journal_lines"], self.p["max_lines"])[0]
        if not self.p["log_path"]:
            return None
        with open_log_file(self.p["log_path"], "log_path") as log:
            return find_root_cause(log, self.p["max_lines"])

    def wait_ready(self):
        deadline = self.start + self.p["timeout"]
        # Every request of the wait ends by its end, whatever request_timeout allows (a trickling server too).
        self.http.deadline = time.monotonic() + self.p["timeout"]
        last = "no answer yet"
        while True:
            stop = self.stopped_reason()
            if stop:
                self.fail(stop[0], stop[1] + " before it was ready (last poll: %s)" % last)
            ok, found = served(self.http, self.p["served_model_name"], self.p["request_timeout"])
            if ok:
                self.http.deadline = None
                self.result["models"] = found
                self.result["ready"] = True
                self.result["elapsed"] = round(time.time() - self.start, 1)
                return
            last = found
            if time.time() + self.p["poll_interval"] > deadline:
                self.fail("timeout", "not ready within %ds (last poll: %s)" % (self.p["timeout"], last))
            time.sleep(self.p["poll_interval"])

    def smoke(self):
        if self.p["speculative"]:
            # The counters before the completion: after it none may be lower (counters fall only on a restart).
            self.counters_before = spec_counters(self.http, self.p["request_timeout"])
        result, status, error = smoke(self.http, self.p["served_model_name"], self.p["smoke_prompt"],
                                      self.p["smoke_max_tokens"], self.p["smoke_timeout"])
        if error:
            self.result["ready"] = False
            if status != 200:
                self._settle()
            self.fail("smoke_failed", error)
        self.result["smoke"] = result

    def check_captured_layers(self):
        """The captured layers of this start against the drafter's trained ids: fail on a mismatch, warn when unknown."""
        if self.p["unit"]:
            inv = (self.initial or {}).get("InvocationID") or None

            def open_log():
                return self.journal.open(inv, None, self.p["journal_lines"], newest=False)[0]
        elif self.p["log_path"]:
            def open_log():
                return open_log_file(self.p["log_path"], "log_path")
        else:
            self.module.warn("drafter_dir: without unit or log_path there is no log to read the captured layers from")
            return
        verdict, warning = captured_layers(open_log, self.p["drafter_dir"])
        self.result["captured_layers"] = verdict
        if verdict["verdict"] == "mismatch":
            self.result["reason"] = "captured_layers_mismatch"
            label = self.p["unit"] or "vLLM at %s" % self.url
            raise WaitFailed("%s serves, but %s" % (label, verdict["message"]), self.result)
        if warning:
            self.module.warn(warning)

    def _settle(self):
        # A worker killed by the request takes the unit down a moment later; let its last lines reach the journal.
        if not self.p["unit"] and not self.p["pid"]:
            return
        end = time.time() + 15
        while time.time() < end and self.stopped_reason() is None:
            time.sleep(1)

    def metrics(self):
        spec, error = spec_decode(self.http, self.p["request_timeout"], self.counters_before)
        if error:
            self.result["ready"] = False  # counters that cannot be read are no proof it serves
            self.fail("metrics_failed", error)
        self.result["spec_decode"] = spec

    def run(self):
        """Wait, then the smoke completion, the spec-decode counters and the captured layers as asked."""
        if self.p["unit"]:
            self.initial = self.state()
            self.result["invocation_id"] = self.initial.get("InvocationID")
        self.wait_ready()
        if self.p["smoke"]:
            self.smoke()
        if self.p["speculative"]:
            self.metrics()
        if self.p["drafter_dir"]:
            self.check_captured_layers()
        return self.result


def _would_check(p, url):
    """Check mode: what would be requested, nothing requested."""
    would = [url + "/health", url + "/v1/models"]
    if p["smoke"]:
        would.append(url + "/v1/completions")
    if p["speculative"]:
        would.append(url + "/metrics")
    return dict(changed=False, skipped=True, ready=False, url=url, would_check=would,
                msg="check mode: would wait up to %ds for %s to serve %s" % (p["timeout"], url, p["served_model_name"]))


def wait_ready(module):
    """The vllm_wait_ready module: its result, or WaitFailed(msg, result).

    ``module``: an AnsibleModule with vllm_wait_ready's options (params, check_mode, run_command,
    get_bin_path, warn). Every option is checked first (check_params); then, in check mode, what would
    be requested; else the wait (Waiter.run).
    """
    p = module.params
    errors = check_params(p)
    if errors:
        raise WaitFailed("vllm_wait_ready: " + "; ".join(errors), dict(changed=False, ready=False))
    # The loopback choice (0.0.0.0 / empty -> 127.0.0.1, :: -> [::1]) is serve.py's, shared with the role.
    url = probe_url(p["host"], p["port"])
    if module.check_mode:
        return _would_check(p, url)
    waiter = Waiter(module, url)
    try:
        return waiter.run()
    except (VllmLogError, SystemdError) as e:
        raise WaitFailed(safe_text(str(e)), waiter.result)
