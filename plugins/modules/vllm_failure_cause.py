#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_failure_cause
short_description: Find the root cause of a vLLM failure in a unit's journal or a log file
version_added: "0.1.0"
description:
  - Reads ONE unit's journal for its current (or last) invocation, a log file, or log text, and returns the exception
    that killed the server, even when a worker or EngineCore child printed it, skipping generic wrappers; known causes
    come with a hint (C(docs/vllm-failures.md)).
  - Read-only. Fails only when the log cannot be read or an option is bad (naming it), never because a cause was found.
  - Logs of any size and encoding are read line by line; what is returned is capped and valid UTF-8
    (C(docs/bad-input.md)).
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
  - inference.gpu_host._vllm_log
attributes:
  platform:
    details: Reading a unit's journal needs systemd; O(path) and O(text) work on any host.
options:
  unit:
    description: The systemd unit whose journal to read. Exactly one of O(unit), O(path), O(text).
    type: str
  invocation_id:
    description: With O(unit), read this invocation (32 hex digits) instead of the current or last one.
    type: str
  since:
    description: With O(unit) and no known invocation, read from this C(journalctl --since) time (default the unit's start).
    type: str
  path:
    description: A log file to read (absolute; vLLM's output, or a saved journal with or without journald's prefix).
    type: path
  text:
    description: Log text to read.
    type: str
seealso:
  - module: inference.gpu_host.vllm_wait_ready
"""

EXAMPLES = r"""
- name: Why did the server fail?
  inference.gpu_host.vllm_failure_cause:
    unit: vllm-tiny.service
  register: why

- name: Fail with the cause and its hint
  ansible.builtin.fail:
    msg: "{{ why.message }}"
  when: why.found
"""

RETURN = r"""
found:
  description: Whether a failure was recognised in the log.
  returned: always
  type: bool
  sample: true
cause:
  description: The root cause's message (at most 2000 characters).
  returned: always
  type: str
  sample: "No module named 'flash_attn.ops'"
exception_type:
  description: The exception type (C(ValueError), C(std::runtime_error), C(signal 9/KILL) ...).
  returned: always
  type: str
  sample: ModuleNotFoundError
hint:
  description: What to do about a known cause; null otherwise.
  returned: always
  type: str
hint_id:
  description: The known cause's identifier (C(flash_attn_ops), C(memory_utilization_too_high) ...); null otherwise.
  returned: always
  type: str
  sample: flash_attn_ops
process:
  description: The vLLM child that printed the cause (C(Worker), C(EngineCore), C(APIServer) ...); null for the main process.
  returned: always
  type: str
  sample: EngineCore
pid:
  description: That process's pid as printed.
  returned: always
  type: int
wrapper_only:
  description: Only generic wrappers were found (the child's own output was not in the log read).
  returned: always
  type: bool
relevant_lines:
  description: The lines that show the cause (at most O(max_lines), each cut at 2000 characters); else the log's last lines.
  returned: always
  type: list
  elements: str
truncated:
  description: Whether anything returned was shortened.
  returned: always
  type: bool
relevant_lines_left_out:
  description: How many traceback lines RV(relevant_lines) leaves out.
  returned: always
  type: int
lines_read:
  description: How many log lines were read.
  returned: always
  type: int
lines_cut:
  description: How many lines read were cut at 2000 characters.
  returned: always
  type: int
message:
  description: >-
    One line, C(<unit> failed: <cause> — hint: <hint>), else that no root cause was found or that the journal is
    unavailable; at most 5000 characters.
  returned: always
  type: str
source:
  description: What was read (unit and invocation, or file).
  returned: always
  type: str
invocation_id:
  description: The invocation read.
  returned: when O(unit) is given
  type: str
journal_unavailable:
  description: Why the journal could not give a cause (journald not running).
  returned: with O(unit), when no cause was found and the journal is unavailable
  type: str
  sample: systemd-journald.service is inactive/dead, so nothing the unit printed was kept
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import VllmLogError, failure_cause


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str"),
            invocation_id=dict(type="str"),
            since=dict(type="str"),
            path=dict(type="path"),
            text=dict(type="str"),
            journal_lines=dict(type="int", default=5000),
            max_lines=dict(type="int", default=40),
        ),
        required_one_of=[("unit", "path", "text")],
        mutually_exclusive=[("unit", "path", "text")],
        required_by={"invocation_id": "unit", "since": "unit"},
        supports_check_mode=True,
    )
    try:
        module.exit_json(**failure_cause(module))
    except VllmLogError as exc:
        module.fail_json(msg=str(exc), changed=False)


if __name__ == "__main__":
    main()
