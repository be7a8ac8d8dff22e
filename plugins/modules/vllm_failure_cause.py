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
  - Reads the systemd journal of ONE unit for its current (or last) invocation only (by its C(InvocationID), else
    since the unit's start), or a given log file, or log text.
  - Returns the exception that actually killed the server, even when a worker or EngineCore child printed it,
    skipping generic wrappers such as C(Engine core initialization failed. See root cause above); known causes
    (a missing C(flash_attn.ops), out of memory, no GPU, port in use, a misspelt flag ...) come with a hint.
  - Read-only. It never fails because a cause was found; it fails only when the log cannot be read, or when an
    option is not what it expects (the message names the option and what was expected).
  - With O(unit), when no cause is found and journald is not running, RV(journal_unavailable) says why.
  - Logs of any size and encoding are read line by line; what is returned is capped and valid UTF-8
    (C(docs/bad-input.md)), and RV(truncated) says whether anything was shortened.
author:
  - inference.gpu_host contributors (!UNKNOWN)
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
    description:
      - The systemd unit whose journal to read, for example C(vllm@tiny.service).
      - Exactly one of O(unit), O(path), O(text) is required.
      - A systemd unit name (letters, digits and C(:_.@-), not starting with C(-)).
    type: str
  invocation_id:
    description:
      - Read this invocation of O(unit) (32 hex digits) instead of the current/last one, for example the
        one recorded before a rollback restarted the unit.
      - Only with O(unit).
    type: str
  since:
    description:
      - With O(unit) and no invocation id known to systemd, read the journal from this time
        (any C(journalctl --since) value). Defaults to the unit's C(ExecMainStartTimestamp).
      - Only with O(unit).
    type: str
  path:
    description:
      - A log file to read instead of the journal (vLLM's stdout/stderr, or a saved journal with or
        without journald's C(Mon DD HH:MM:SS host unit[pid]:) prefix).
      - An absolute path to a regular file (symbolic links are followed); a relative path, a missing file, a
        directory, a device, pipe or socket is refused with an error naming O(path).
    type: path
  text:
    description:
      - Log text to read instead of the journal.
    type: str
notes:
  - The same extractor (C(plugins/module_utils/_vllm/log.py)) is used by M(inference.gpu_host.vllm_wait_ready).
  - See C(docs/vllm-failures.md) in the collection for how vLLM fails and how the cause is found.
seealso:
  - module: inference.gpu_host.vllm_wait_ready
"""

EXAMPLES = r"""
- name: Why did the server fail?
  inference.gpu_host.vllm_failure_cause:
    unit: vllm@tiny.service
  register: why

- name: Fail with the cause and its hint
  ansible.builtin.fail:
    msg: "{{ why.message }}"
  when: why.found

- name: Read a foreground run's log file
  inference.gpu_host.vllm_failure_cause:
    path: /var/log/vllm/serve.log
"""

RETURN = r"""
found:
  description: Whether a failure was recognised in the log.
  returned: always
  type: bool
  sample: true
cause:
  description:
    - The root cause's message (the C(Value error) text for a pydantic ValidationError, C(what()) for a C++
      abort); at most 2000 characters.
  returned: always
  type: str
  sample: "No module named 'flash_attn.ops'"
exception_type:
  description: >-
    The exception type (C(ValueError), C(std::runtime_error), C(argparse error (api_server.py)),
    C(signal 9/KILL) ...).
  returned: always
  type: str
  sample: ModuleNotFoundError
hint:
  description: What to do about a known cause; null when the cause is not a known one.
  returned: always
  type: str
  sample: >-
    flash-attn-4 or a leftover flash_attn directory shadows flash-attn 2; run the python_env role's flash-attn
    guard (policy remove)
hint_id:
  description: >-
    Identifier of the known cause (e.g. C(flash_attn_ops), C(memory_utilization_too_high)); null when unknown.
  returned: always
  type: str
  sample: flash_attn_ops
process:
  description: >-
    The vLLM child that printed the cause (C(Worker), C(EngineCore), C(EngineCore_DP0), C(APIServer) ...);
    null for the main process.
  returned: always
  type: str
  sample: EngineCore
pid:
  description: That process's pid as printed in the log.
  returned: always
  type: int
  sample: 4242
wrapper_only:
  description: True when only generic wrappers were found (the child's own output was not in the log read).
  returned: always
  type: bool
  sample: false
relevant_lines:
  description:
    - The lines that show the cause (the traceback's first line and tail, bounded by O(max_lines)); with no cause
      found, the log's last lines.
    - "Each at most 2000 characters, plus C([... cut: the line has N bytes]) when the line was longer."
  returned: always
  type: list
  elements: str
truncated:
  description: Whether anything returned was shortened (lines of the traceback left out, a line or the cause cut).
  returned: always
  type: bool
  sample: false
relevant_lines_left_out:
  description: How many lines of the traceback RV(relevant_lines) leaves out (then its second line says so).
  returned: always
  type: int
  sample: 0
lines_read:
  description: How many log lines were read.
  returned: always
  type: int
  sample: 169
lines_cut:
  description: How many of the lines read were longer than 2000 characters and were cut while reading.
  returned: always
  type: int
  sample: 0
message:
  description:
    - "One line, C(<unit> failed: <cause> — hint: <hint>); at most 5000 characters."
    - "With no cause: C(<unit>: no root cause found in its log (see relevant_lines)), or C(<unit>: the journal is
      unavailable (<why>), so no root cause could be read) (see RV(journal_unavailable))."
  returned: always
  type: str
source:
  description: What was read (which unit and invocation, or which file).
  returned: always
  type: str
  sample: "journal of vllm@tiny.service, invocation 0f6b1c..."
invocation_id:
  description: The invocation read, when a unit's journal was read by invocation id.
  returned: when O(unit) is given
  type: str
journal_unavailable:
  description:
    - With O(unit) and no cause found, why the journal could not give one (C(systemd-journald.service) is not
      running, so nothing the unit printed was kept); RV(message) then says C(the journal is unavailable (...))
      as M(inference.gpu_host.vllm_wait_ready) does, rather than "no root cause found in its log".
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
