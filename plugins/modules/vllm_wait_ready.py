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
  - "Counters that do not add up fail with C(not ready: metrics unreadable: <the line>) (reason C(metrics_failed))."
  - With O(drafter_dir), reads the captured-layers line of this start of the server (V1 or V2 model runner) and
    compares it with the layers the drafter was trained on (its C(config.json) record); a mismatch fails with both
    lists and the reason. Without such a line or record it warns and returns RV(captured_layers).
  - "On failure, fails with C(<unit> failed: <root cause> — hint: <hint>), the root cause read from the unit's
    journal for this invocation (or from O(log_path)) by the same extractor, with the same caps, as
    M(inference.gpu_host.vllm_failure_cause), and returns the relevant log lines."
  - Connects only to O(host), over plain HTTP; each request is bounded as a whole by O(request_timeout)
    (O(smoke_timeout) for the completion) and what is left of O(timeout), and an answer in size (C(docs/bad-input.md));
    anything else on the port is a poll that is not ready, with the reason.
  - When the unit's journal is unavailable, the message says so and RV(journal_unavailable) says why.
  - Every option is checked before anything is requested; a bad one fails naming it.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host._vllm_log
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import SMOKE_PROMPT
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.wait_ready import WaitFailed, wait_ready


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
    try:
        module.exit_json(**wait_ready(module))
    except WaitFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)


if __name__ == "__main__":
    main()
