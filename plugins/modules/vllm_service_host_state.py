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
  - Reads the venv link and the vLLM behind it (as M(inference.gpu_host.vllm_version_info)), the target's and the
    drafter's C(config.json), the GPUs (as M(inference.gpu_host.nvidia_gpu_info)), the service account and groups,
    the C(/dev/nvidia*) nodes, who listens on O(port), the unit's state, the O(files), the role's record, the target
    model's fingerprint and the rollback copies; with O(probe), asks the server once whether it serves.
  - The role hands the result to the P(inference.gpu_host.vllm_service_plan#filter) filter (C(docs/architecture.md)).
  - Read-only. Files are read bounded and never block (C(docs/bad-input.md)); a C(config.json) that cannot be read
    fails naming it, a record is a warning. Bad options fail naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  venv:
    description: The venv (or the link to its generation) the service runs.
    type: path
    required: true
  model:
    description: The target model's directory.
    type: path
    required: true
  drafter:
    description: The drafter's directory; not set without one.
    type: path
  model_patterns:
    description: File name patterns of the target model's files to fingerprint (top level).
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
    description: "Name: absolute path of each file or directory to read; the name C(record) is also read as the role's record."
    type: dict
    default: {}
  rollback_paths:
    description: Paths whose rollback copy C(<path>.prev) is looked for.
    type: list
    elements: path
    default: []
  cc:
    description: The C compiler the unit's environment names (C(CC)); unset, gcc or clang on its C(PATH).
    type: str
  probe:
    description: Ask the server on O(port) once whether it serves (only when the unit is active and something listens).
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
        description: The server's API key; empty for none.
        type: str
        default: ''
      smoke:
        description: Also send one completion of one token.
        type: bool
        default: false
      drafter_dir:
        description: The drafter's directory, to read the counters of C(/metrics) and check the captured layers.
        type: str
        default: ''
      timeout:
        description: Seconds each request may take as a whole, 1 to 300 (at most four requests).
        type: int
        default: 5
notes:
  - C(ss) (iproute2) and C(systemctl) must be there.
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
      record: /etc/ansible/facts.d/inference_vllm_service_default.fact
  register: vllm_service_state
"""

RETURN = r"""
venv:
  description: C(path), C(exists), C(islink), C(real) (what the link resolves to).
  type: dict
  returned: always
vllm:
  description: What M(inference.gpu_host.vllm_version_info) returns for the venv's real directory.
  type: dict
  returned: always
jit_toolchain:
  description: >-
    C(cc), C(python_h), C(python_h_wanted) and C(problem) (why CUDA vLLM's Triton warm-up would fail, or null).
  type: dict
  returned: always
target_config:
  description: The target's C(config.json), null when absent or unreadable.
  type: dict
  returned: always
drafter_config:
  description: The drafter's C(config.json), or null.
  type: dict
  returned: always
gpus:
  description: C(gpu_count), C(gpus) and C(reason), as M(inference.gpu_host.nvidia_gpu_info) returns them.
  type: dict
  returned: always
passwd:
  description: getent passwd's fields for O(user), null when absent.
  type: list
  elements: str
  returned: always
group_db:
  description: "getent group: {name: [password, gid, members]}."
  type: dict
  returned: always
devices:
  description: The C(/dev/nvidia*) entries (path, ischr, isdir, uid, gid, mode).
  type: list
  elements: dict
  returned: always
port:
  description: C(listener) (C(ss -Hltnp) for O(port), empty when free) and C(listener_cgroup).
  type: dict
  returned: always
unit:
  description: The unit's ControlGroup, InvocationID, ActiveState and UnitFileState.
  type: dict
  returned: always
files:
  description: "{name: {exists, isdir, owner, group, mode, sha256}} for O(files)."
  type: dict
  returned: always
record:
  description: The role's record, null when absent or unreadable.
  type: dict
  returned: always
model_fingerprint:
  description: A sha256 of the target model files' paths, sizes and mtimes.
  type: str
  returned: always
rollback_copies:
  description: The O(rollback_paths) that have a C(.prev) copy.
  type: list
  elements: str
  returned: always
probe:
  description:
    - C(ready), C(url), C(invocation_id), and as M(inference.gpu_host.vllm_wait_ready) returns them C(models),
      C(smoke), C(spec_decode), C(captured_layers); when not ready C(reason) and C(msg).
  type: dict
  returned: when O(probe) is set
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.service_state import ARGUMENT_SPEC, module_result


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**module_result(module))


if __name__ == "__main__":
    main()
