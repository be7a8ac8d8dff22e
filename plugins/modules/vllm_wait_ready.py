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
  - Polls C(GET /health) and C(GET /v1/models) until the model is listed, then sends one completion (temperature 0),
    because C(/health) answering 200 is not readiness (C(docs/vllm-failures.md)).
  - Stops at once when the O(unit) is no longer active, or restarted (its C(InvocationID) or C(NRestarts) changed);
    without a unit, when the process O(pid) has exited.
  - With O(speculative), returns the acceptance from C(/metrics); with O(drafter_dir), compares the layers vLLM logged
    as captured with those the drafter was trained on, and fails on a mismatch.
  - "On failure, fails with C(<unit> failed: <root cause> — hint: <hint>), read from this invocation's journal (or
    O(log_path)) as M(inference.gpu_host.vllm_failure_cause) reads it."
  - Each request is bounded as a whole in time and size (C(docs/bad-input.md)); anything else on the port is a poll
    that is not ready. Every option is checked before anything is requested.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host._vllm_log
attributes:
  check_mode:
    details: Nothing is requested; returns what it would check and C(skipped=true).
options:
  host:
    description:
      - Address the server listens on, no scheme, port or path; C(0.0.0.0) and empty are reached on C(127.0.0.1),
        C(::) on C(::1).
    type: str
    default: 127.0.0.1
  port:
    description: The server's port.
    type: int
    required: true
  served_model_name:
    description: The model name C(/v1/models) must list.
    type: str
    required: true
  unit:
    description: The systemd unit running the server; empty disables the systemd checks. Not with O(pid) or O(log_path).
    type: str
    default: ""
  pid:
    description: Without a unit, stop waiting when this process has exited.
    type: int
  log_path:
    description: Without a unit, the server's log file (absolute) to read the root cause from; it may not exist yet.
    type: path
  timeout:
    description: Seconds to wait for readiness.
    type: int
    default: 900
  poll_interval:
    description: Seconds between polls, above 0 and at most 3600.
    type: float
    default: 2.0
  request_timeout:
    description: Seconds each C(/health), C(/v1/models) or C(/metrics) request may take as a whole.
    type: int
    default: 10
  smoke:
    description: Send one completion after readiness.
    type: bool
    default: true
  smoke_prompt:
    description: The prompt of that completion.
    type: str
    default: "The capital of France is"
  smoke_max_tokens:
    description: Tokens to generate in that completion.
    type: int
    default: 8
  smoke_timeout:
    description: Seconds the completion may take.
    type: int
    default: 300
  speculative:
    description: Speculative decoding is on; read its acceptance counters from C(/metrics).
    type: bool
    default: false
  drafter_dir:
    description:
      - The drafter's directory (absolute), whose C(config.json) M(inference.gpu_host.dflash_drafter_config) wrote; the
        layers this start logged as captured are compared with its trained ids + 1. Only with O(speculative).
    type: path
  api_key:
    description: The server's API key, sent as a bearer token.
    type: str
seealso:
  - module: inference.gpu_host.vllm_failure_cause
"""

EXAMPLES = r"""
- name: Wait for the DFlash server and record acceptance
  inference.gpu_host.vllm_wait_ready:
    unit: vllm-qwen36-27b.service
    port: 30000
    served_model_name: Qwen3.6-27B
    speculative: true
    drafter_dir: /root/models/Qwen3.6-27B-DFlash
    timeout: 1800
  register: vllm_ready
"""

RETURN = r"""
ready:
  description: Whether the server became ready (and, with O(smoke), answered the completion).
  returned: always
  type: bool
  sample: true
reason:
  description: >-
    On failure, why waiting stopped - C(unit_stopped), C(unit_restarted), C(process_exited), C(timeout),
    C(smoke_failed), C(metrics_failed), C(captured_layers_mismatch).
  returned: on failure
  type: str
skipped:
  description: True in check mode.
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
  description: Seconds until ready (or the failure).
  returned: when not in check mode
  type: float
models:
  description: The model ids C(/v1/models) listed.
  returned: when the server answered C(/v1/models)
  type: list
  elements: str
smoke:
  description: The completion - C(latency), C(completion_tokens), C(text).
  returned: when O(smoke) and the server became ready
  type: dict
spec_decode:
  description: >-
    The C(/metrics) counters since the server started - C(num_draft_tokens), C(num_accepted_tokens), C(num_drafts),
    C(acceptance_rate), C(mean_acceptance_length) (null before any draft).
  returned: when O(speculative) and the server became ready
  type: dict
captured_layers:
  description: >-
    C(verdict) (C(match), C(mismatch), C(unverified)), C(captured), C(expected) (trained ids + 1), C(trained_ids),
    C(runner), C(line), C(reason) on a mismatch, C(message).
  returned: when O(drafter_dir) is set and the server became ready
  type: dict
  sample: {verdict: match, captured: [2, 6], expected: [2, 6], trained_ids: [1, 5], runner: v2}
unit_state:
  description: The unit's systemd properties at the end (ActiveState, SubState, InvocationID, NRestarts ...).
  returned: when O(unit) is set
  type: dict
invocation_id:
  description: The unit's InvocationID when the wait began.
  returned: when O(unit) is set
  type: str
root_cause:
  description: On failure, what M(inference.gpu_host.vllm_failure_cause) returns for the log.
  returned: on failure
  type: dict
journal_unavailable:
  description: On failure with O(unit) and no root cause, why the journal could not give one.
  returned: on failure, when the journal is unavailable
  type: str
relevant_lines:
  description: On failure, the log lines that show the cause.
  returned: on failure
  type: list
  elements: str
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
