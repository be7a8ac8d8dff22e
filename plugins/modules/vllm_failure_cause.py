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
  - Reads the systemd journal of ONE unit for its current (or last) invocation only
    (C(systemctl show -p InvocationID --value UNIT), then C(journalctl -o cat _SYSTEMD_INVOCATION_ID=<id>));
    when the unit has no invocation id, falls back to C(journalctl -u UNIT --since <since or the unit's start time>).
  - Or reads a given log file, or log text.
  - Returns the exception that actually killed the server, even when a worker or EngineCore child printed it
    (C((Worker pid=N)), C((EngineCore pid=N)) ...), skipping generic wrappers such as
    C(Engine core initialization failed. See root cause above); pydantic validation errors give their
    C(Value error, ...) line; argparse errors, C++ aborts and systemd's exit status are recognised too.
  - Known causes come with a hint (missing module such as C(flash_attn.ops), out of memory,
    memory utilization above what the host has, batched tokens below max model len, no GPU, NCCL,
    unsupported attention configuration, port in use, weight shape mismatch, misspelt flag).
  - Read-only. It never fails because a cause was found; it fails only when the log cannot be read.
author:
  - inference.gpu_host contributors (!UNKNOWN)
attributes:
  check_mode:
    support: full
    description: Reads only, so it runs in check mode too and reports the same.
  diff_mode:
    support: none
    description: Nothing on the host changes, so there is nothing to diff.
  idempotent:
    support: full
    description: Read-only; running it again changes nothing.
options:
  unit:
    description:
      - The systemd unit whose journal to read, for example C(vllm@tiny.service).
      - Exactly one of O(unit), O(path), O(text) is required.
    type: str
  invocation_id:
    description:
      - Read this invocation of O(unit) (32 hex digits) instead of the current/last one, for example the
        one recorded before a rollback restarted the unit.
    type: str
  since:
    description:
      - With O(unit) and no invocation id known to systemd, read the journal from this time
        (any C(journalctl --since) value). Defaults to the unit's C(ExecMainStartTimestamp).
    type: str
  path:
    description:
      - A log file to read instead of the journal (vLLM's stdout/stderr, or a saved journal with or
        without journald's C(Mon DD HH:MM:SS host unit[pid]:) prefix).
    type: path
  text:
    description:
      - Log text to read instead of the journal.
    type: str
  journal_lines:
    description:
      - At most this many journal lines (the newest) are read.
    type: int
    default: 5000
  max_lines:
    description:
      - At most this many lines are returned in RV(relevant_lines).
    type: int
    default: 40
notes:
  - The same extractor (C(plugins/module_utils/vllm_log.py)) is used by M(inference.gpu_host.vllm_wait_ready).
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
  description: The root cause's message (the C(Value error) text for a pydantic ValidationError, C(what()) for a C++ abort).
  returned: always
  type: str
  sample: "No module named 'flash_attn.ops'"
exception_type:
  description: The exception type (C(ValueError), C(std::runtime_error), C(argparse error (api_server.py)), C(signal 9/KILL) ...).
  returned: always
  type: str
  sample: ModuleNotFoundError
hint:
  description: What to do about a known cause; null when the cause is not a known one.
  returned: always
  type: str
  sample: "flash-attn-4 or a leftover flash_attn directory shadows flash-attn 2; run the python_env role's flash-attn guard (policy remove)"
hint_id:
  description: Identifier of the known cause (e.g. C(flash_attn_ops), C(memory_utilization_too_high)); null when unknown.
  returned: always
  type: str
  sample: flash_attn_ops
process:
  description: The vLLM child that printed the cause (C(Worker), C(EngineCore), C(EngineCore_DP0), C(APIServer) ...); null for the main process.
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
  description: The lines that show the cause (the traceback's tail, bounded by O(max_lines)).
  returned: always
  type: list
  elements: str
message:
  description: "One line, C(<unit> failed: <cause> — hint: <hint>)."
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
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.inference.gpu_host.plugins.module_utils.vllm_log import (
    VllmLogError,
    failure_message,
    find_root_cause,
    read_unit_journal,
)


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
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False)
    label = p["unit"] or "vLLM"

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_COLORS": "0"})

    try:
        if p["unit"]:
            systemctl = module.get_bin_path("systemctl", required=True)
            journalctl = module.get_bin_path("journalctl", required=True)
            lines, info = read_unit_journal(run, p["unit"], p["invocation_id"], p["since"], p["journal_lines"],
                                            systemctl=systemctl, journalctl=journalctl)
            source = info["description"]
            result["invocation_id"] = info["invocation_id"]
        elif p["path"]:
            if not os.path.isfile(p["path"]):
                module.fail_json(msg="log file %s does not exist or is not a file" % p["path"], **result)
            with open(p["path"], "rb") as fh:
                lines = to_text(fh.read(), errors="surrogate_or_replace").splitlines()
            source = p["path"]
            label = os.path.basename(p["path"])
        else:
            lines, source = p["text"].splitlines(), "text"
        cause = find_root_cause(lines, max_lines=p["max_lines"])
    except VllmLogError as e:
        module.fail_json(msg=to_text(e), **result)
    except (IOError, OSError) as e:
        module.fail_json(msg="cannot read log file %s: %s" % (p["path"], to_text(e)), **result)

    result.update(cause)
    result["source"] = source
    result["message"] = failure_message(label, cause)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
