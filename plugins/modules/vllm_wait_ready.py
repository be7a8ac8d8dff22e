#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_wait_ready
short_description: Wait until a vLLM server is ready, prove it with a completion, or fail with the root cause
version_added: "0.1.0"
description:
  - Polls C(GET /health) until it answers 200 and C(GET /v1/models) lists O(served_model_name), up to O(timeout)
    seconds.
  - Stops waiting at once when the systemd O(unit) is no longer active or activating, or when its
    C(InvocationID) or C(NRestarts) changed since the wait began (a crash loop); or, without a unit,
    when the process O(pid) has exited.
  - Then sends one completion (C(POST /v1/completions), O(smoke_max_tokens) tokens, temperature 0) and records
    its latency, because C(/health) answering 200 is not readiness; a server can pass it and die on its first request.
  - With O(speculative), reads C(/metrics) for C(vllm:spec_decode_num_accepted_tokens_total) and
    C(vllm:spec_decode_num_draft_tokens_total) and returns the acceptance rate.
  - "A counter that is NaN, infinite, negative or not a number, a series given twice, more accepted than draft
    tokens, or a counter lower after the smoke completion than before it fails with C(not ready: metrics
    unreadable: <the line>) (reason C(metrics_failed))."
  - With O(drafter_dir), reads the captured-layers line of this start of the server (V1 or V2 model runner) and
    compares it with the layers the drafter was trained on (its C(config.json) record); a mismatch fails with both
    lists and the reason. Without such a line or record it warns and returns RV(captured_layers).
  - "On failure, fails with C(<unit> failed: <root cause> — hint: <hint>), the root cause read from the unit's
    journal for this invocation (or from O(log_path)) by the same extractor, with the same caps, as
    M(inference.gpu_host.vllm_failure_cause), and returns the relevant log lines."
  - Connects only to O(host) (default the loopback address), over plain HTTP, with a small HTTP/1.1 client whose
    every request is bounded as a whole, from the connect to the last byte (a server that sends a byte at a time
    included), by O(request_timeout) (O(smoke_timeout) for the completion) and, while waiting, by what is left of
    O(timeout). An answer is at most 8 MiB (a JSON answer 1 MiB and 64 levels deep), its status line and each
    header line at most 8 KiB, at most 100 headers; anything else on the port (no HTTP, garbage, too large, too
    slow) is a poll that is not ready, with the reason, never a traceback.
  - When no root cause can be read because the unit's journal is unavailable (C(journalctl) fails, or
    C(systemd-journald.service) is not running, so nothing the unit printed was kept), the message says so and
    RV(journal_unavailable) says why, rather than "no root cause found in its log".
  - Every option is checked before anything is requested; a bad one fails with a message naming it and what
    was expected.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: In check mode nothing is requested; the module reports what it would check and returns C(skipped=true).
options:
  host:
    description:
      - Address the server listens on. A server listening on every address is reached on that family's
        loopback, C(0.0.0.0) and empty on C(127.0.0.1), C(::) on C(::1) (the vllm_service role chooses the same).
      - An IP address (IPv6 with or without brackets) or a host name; no scheme, port or path.
    type: str
    default: 127.0.0.1
  port:
    description: The server's port, 1 to 65535.
    type: int
    required: true
  served_model_name:
    description: The model name C(/v1/models) must list (vLLM's C(--served-model-name), else the model path).
    type: str
    required: true
  unit:
    description:
      - The systemd unit running the server. Empty disables the systemd checks (the wait then relies on
        O(pid) and O(timeout)).
      - A systemd unit name (letters, digits and C(:_.@-), not starting with C(-)); not together with O(pid) or
        O(log_path).
    type: str
    default: ""
  pid:
    description:
      - Without a unit (a server run in the foreground), stop waiting when this process has exited.
      - A process id, 1 or more.
    type: int
  log_path:
    description:
      - Without a unit, read the root cause from this log file (the server's stdout/stderr) on failure.
      - An absolute path. It may not exist yet when the wait begins; when it exists it must be a regular file
        (not a directory, device, pipe or socket).
    type: path
  timeout:
    description: Seconds to wait for readiness (a large model loads for minutes), 1 or more.
    type: int
    default: 900
  poll_interval:
    description: Seconds between polls, above 0 and at most 3600.
    type: float
    default: 2.0
  request_timeout:
    description:
      - Seconds each C(/health), C(/v1/models) or C(/metrics) request may take as a whole (connect, send, status,
        headers and body), 1 or more.
    type: int
    default: 10
  smoke:
    description: Send one completion after readiness.
    type: bool
    default: true
  smoke_prompt:
    description: The prompt of that completion; not empty when O(smoke) is true.
    type: str
    default: "The capital of France is"
  smoke_max_tokens:
    description: Tokens to generate in that completion, 1 or more.
    type: int
    default: 8
  smoke_timeout:
    description: Seconds the completion may take, 1 or more.
    type: int
    default: 300
  speculative:
    description: Speculative decoding is on; read its acceptance counters from C(/metrics).
    type: bool
    default: false
  drafter_dir:
    description:
      - The DFlash drafter's directory (the speculative config's C(model)), whose C(config.json) was written by
        M(inference.gpu_host.dflash_drafter_config). After readiness the captured layers vLLM logged for this start
        (the unit's current invocation, the first O(journal_lines) lines, or O(log_path)) are compared with
        the trained ids + 1, the capture points every vLLM with DFlash logs.
      - An absolute path. Only with O(speculative).
    type: path
  api_key:
    description: The server's C(--api-key), sent as a bearer token; printable ASCII without spaces or line breaks.
    type: str
  journal_lines:
    description: At most this many journal lines are read for the root cause, 1 to 1000000.
    type: int
    default: 5000
  max_lines:
    description: At most this many log lines are returned in RV(relevant_lines), 3 to 200.
    type: int
    default: 40
notes:
  - Uses only the Python standard library and C(ansible.module_utils.urls); no C(requests) on the managed node.
  - See C(docs/vllm-failures.md) in the collection for why C(/health) answering 200 is not readiness.
seealso:
  - module: inference.gpu_host.vllm_failure_cause
"""

EXAMPLES = r"""
- name: Wait for the DFlash server and record acceptance
  inference.gpu_host.vllm_wait_ready:
    unit: vllm@qwen36.service
    port: 30000
    served_model_name: qwen3.6-27b
    speculative: true
    timeout: 1800
  register: vllm_ready

- name: A foreground run without systemd (GPU host)
  inference.gpu_host.vllm_wait_ready:
    port: 8000
    served_model_name: tiny
    pid: "{{ serve.pid }}"
    log_path: /tmp/serve.log
"""

RETURN = r"""
ready:
  description: Whether the server became ready (and, with O(smoke), answered the completion).
  returned: always
  type: bool
  sample: true
skipped:
  description: True in check mode, where nothing is requested.
  returned: in check mode
  type: bool
would_check:
  description: In check mode, the URLs that would be requested.
  returned: in check mode
  type: list
  elements: str
url:
  description: The server's base URL.
  returned: always
  type: str
  sample: http://127.0.0.1:30000
elapsed:
  description: Seconds from the start of the wait until ready (or until the failure).
  returned: when not in check mode
  type: float
  sample: 48.2
models:
  description: The model ids C(/v1/models) listed.
  returned: when the server answered C(/v1/models)
  type: list
  elements: str
  sample: [tiny]
smoke:
  description: The completion sent after readiness.
  returned: when O(smoke) and the server became ready
  type: dict
  contains:
    latency:
      description: Seconds the completion took.
      type: float
    completion_tokens:
      description: Tokens generated, as the server reports.
      type: int
    text:
      description: The generated text.
      type: str
spec_decode:
  description: >-
    Speculative decoding counters from C(/metrics) (cumulative since the server started, the smoke completion
    included).
  returned: when O(speculative) and the server became ready
  type: dict
  contains:
    num_draft_tokens:
      description: C(vllm:spec_decode_num_draft_tokens_total), summed over engines.
      type: float
    num_accepted_tokens:
      description: C(vllm:spec_decode_num_accepted_tokens_total), summed over engines.
      type: float
    num_drafts:
      description: C(vllm:spec_decode_num_drafts_total), when exported.
      type: float
    acceptance_rate:
      description: num_accepted_tokens / num_draft_tokens; null before any draft.
      type: float
    mean_acceptance_length:
      description: 1 + num_accepted_tokens / num_drafts (tokens per step); null before any draft.
      type: float
unit_state:
  description: The unit's systemd properties at the end (ActiveState, SubState, InvocationID, NRestarts, MainPID ...).
  returned: when O(unit) is set
  type: dict
invocation_id:
  description: The unit's InvocationID when the wait began.
  returned: when O(unit) is set
  type: str
root_cause:
  description: >-
    On failure, the extractor's result (cause, exception_type, hint, hint_id, process, pid, wrapper_only, found,
    and its caps: truncated, relevant_lines_left_out, lines_read, lines_cut), as
    M(inference.gpu_host.vllm_failure_cause) returns them.
  returned: on failure
  type: dict
journal_unavailable:
  description: >-
    On failure with O(unit) and no root cause, why the journal could not give one (C(journalctl) failed, or
    C(systemd-journald.service) is not running).
  returned: on failure, when the journal is unavailable
  type: str
  sample: systemd-journald.service is inactive/dead, so nothing the unit printed was kept
relevant_lines:
  description: On failure, the log lines that show the cause (at most O(max_lines), each at most 2000 characters).
  returned: on failure
  type: list
  elements: str
captured_layers:
  description: >-
    With O(drafter_dir): C(verdict) (C(match), C(mismatch), C(unverified)), C(captured) (the layers vLLM logged),
    C(expected) (trained ids + 1), C(trained_ids), C(runner) (C(v1) or C(v2)), C(line), C(reason) (on a mismatch:
    C(ids_plus_one_twice), C(no_plus_one), C(target_defaults), C(count), C(started_with_other_ids), C(ids_differ),
    C(inconsistent)),
    C(message).
  returned: when O(drafter_dir) is set and the server became ready
  type: dict
  sample: {verdict: match, captured: [2, 6], expected: [2, 6], trained_ids: [1, 5], runner: v2}
reason:
  description: >-
    On failure, why waiting stopped (C(unit_stopped), C(unit_restarted), C(process_exited), C(timeout),
    C(smoke_failed), C(metrics_failed), C(captured_layers_mismatch)).
  returned: on failure
  type: str
"""

import math
import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import VllmServeError, probe_url
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    MAX_JOURNAL_LINES,
    MAX_RELEVANT_LINES,
    UnitJournal,
    VllmLogError,
    check_unit_name,
    failure_message,
    find_root_cause,
    open_log_file,
    safe_text,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import (
    API_KEY, SMOKE_PROMPT, Http, captured_layers, check_host, served, smoke, spec_counters, spec_decode)

_ALIVE_STATES = ("active", "activating", "reloading")


def base_url(host, port):
    # One home for the loopback choice (module_utils/_vllm/serve.py, shared with the role):
    # 0.0.0.0 / empty -> 127.0.0.1, :: -> [::1], any other address or name as it is.
    return probe_url(host, port)


def check_params(p):
    """Every problem with the options, each naming the option and what is expected ([] when none)."""
    errors = []

    def need(ok, text):
        if not ok:
            errors.append(text)

    host_error = check_host(p["host"])
    need(host_error is None, host_error)
    need(1 <= p["port"] <= 65535, "port must be from 1 to 65535, got %d" % p["port"])
    need(p["served_model_name"].strip() != "",
         "served_model_name must be the model name the server serves (its --served-model-name), got an empty string")
    if p["unit"]:
        try:
            check_unit_name(p["unit"])
        except VllmLogError as e:
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


class Waiter(object):
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.url = base_url(self.p["host"], self.p["port"])
        self.http = Http(self.url, self.p["api_key"])
        self.result = dict(changed=False, ready=False, url=self.url)
        self.start = time.time()
        self.journal = UnitJournal(module, self.p["unit"]) if self.p["unit"] else None
        self.initial = None
        self.counters_before = None

    def state(self):
        return self.journal.state()

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
        except (VllmLogError, IOError, OSError) as e:
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
        self.module.fail_json(msg=msg, **self.result)

    def no_cause(self, cause, read_error):
        """Why no root cause is given: a journal that is unavailable (journalctl failed, journald stopped: then
        an empty journal is no evidence), a log that could not be read, or a log without one."""
        if self.p["unit"]:
            try:
                unavailable = self.journal.unavailable(read_error)
            except (VllmLogError, IOError, OSError) as e:
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
            return self.journal.root_cause(inv, None, self.p["journal_lines"], self.p["max_lines"])[0]
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
            self.module.fail_json(msg="%s serves, but %s" % (label, verdict["message"]), **self.result)
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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", required=True),
            served_model_name=dict(type="str", required=True),
            unit=dict(type="str", default=""),
            pid=dict(type="int"),
            log_path=dict(type="path"),
            timeout=dict(type="int", default=900),
            poll_interval=dict(type="float", default=2.0),
            request_timeout=dict(type="int", default=10),
            smoke=dict(type="bool", default=True),
            smoke_prompt=dict(type="str", default=SMOKE_PROMPT),
            smoke_max_tokens=dict(type="int", default=8, no_log=False),
            smoke_timeout=dict(type="int", default=300),
            speculative=dict(type="bool", default=False),
            drafter_dir=dict(type="path"),
            api_key=dict(type="str", no_log=True),
            journal_lines=dict(type="int", default=5000),
            max_lines=dict(type="int", default=40),
        ),
        supports_check_mode=True,
    )
    p = module.params
    errors = check_params(p)
    if errors:
        module.fail_json(msg="vllm_wait_ready: " + "; ".join(errors), changed=False, ready=False)
    try:
        url = base_url(p["host"], p["port"])
    except VllmServeError as exc:
        module.fail_json(msg="vllm_wait_ready: %s" % exc, changed=False, ready=False)
    if module.check_mode:
        would = [url + "/health", url + "/v1/models"]
        if p["smoke"]:
            would.append(url + "/v1/completions")
        if p["speculative"]:
            would.append(url + "/metrics")
        module.exit_json(changed=False, skipped=True, ready=False, url=url, would_check=would,
                         msg="check mode: would wait up to %ds for %s to serve %s"
                         % (p["timeout"], url, p["served_model_name"]))

    waiter = Waiter(module)
    try:
        if p["unit"]:
            waiter.initial = waiter.state()
            waiter.result["invocation_id"] = waiter.initial.get("InvocationID")
        waiter.wait_ready()
        if p["smoke"]:
            waiter.smoke()
        if p["speculative"]:
            waiter.metrics()
        if p["drafter_dir"]:
            waiter.check_captured_layers()
    except VllmLogError as e:
        module.fail_json(msg=safe_text(str(e)), **waiter.result)
    module.exit_json(**waiter.result)


if __name__ == "__main__":
    main()
