# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: drafter_host_state
short_description: Read, in one call, the host state the drafter role manages
version_added: 0.2.0
description:
  - Reads the drafter directory, a stat of the installed weights (never their bytes), the last placement's record,
    the local facts file, whether the target's and the drafter's C(config.json) exist, a stat of a host source, and
    which rollback copies (C(.prev)) exist.
  - With O(config), also whether M(inference.gpu_host.dflash_drafter_config) with these options would change
    C(config.json), and what it would return (the same derivation, nothing written); where it can tell, the role writes
    that C(config.json) without running the module, so its warnings are given here.
  - The role hands the result to the P(inference.gpu_host.drafter_plan#filter) filter (C(docs/architecture.md)).
  - Read-only. Bad options fail naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  dest_dir:
    description: The drafter directory.
    type: path
    required: true
  weights:
    description: The installed weights (C(model.safetensors)).
    type: path
    required: true
  record:
    description: The last placement's record (JSON); unreadable reads as null, with a warning.
    type: path
    required: true
  facts:
    description: The role's local facts file.
    type: path
    required: true
  target_config:
    description: The target model's C(config.json).
    type: path
    required: true
  source:
    description: The source weights on the host (a C(host) source), to stat.
    type: path
  config:
    description:
      - The options of M(inference.gpu_host.dflash_drafter_config) except C(drafter) (O(weights)), checked as that
        module checks them; without it RV(config) decides nothing.
    type: dict
"""

EXAMPLES = r"""
- name: Read the host's state
  inference.gpu_host.drafter_host_state:
    dest_dir: /srv/models/drafter
    weights: /srv/models/drafter/model.safetensors
    record: /srv/models/drafter/.inference-gpu-host-source.json
    facts: /etc/ansible/facts.d/inference_drafter.fact
    target_config: /srv/models/target/config.json
    config:
      target: /srv/models/target
      dest: /srv/models/drafter/config.json
      vllm_version: "0.22.0"
  register: drafter_state
"""

RETURN = r"""
dest_dir:
  description: "exists, isdir, isreg, size, mtime, uid, gid, owner, group, mode of O(dest_dir)."
  type: dict
  returned: always
weights:
  description: The same for O(weights) (a link not followed).
  type: dict
  returned: always
source:
  description: The same for O(source), or null.
  type: dict
  returned: always
record:
  description: The last placement's record, null when absent or unreadable.
  type: dict
  returned: always
record_file:
  description: The stat of O(record), with C(sha256).
  type: dict
  returned: always
facts:
  description: The stat of O(facts), with C(sha256).
  type: dict
  returned: always
target_config_exists:
  description: Whether O(target_config) exists.
  type: bool
  returned: always
config_json_exists:
  description: Whether the C(dest) of O(config) exists.
  type: bool
  returned: always
prev_copies:
  description:
    - The rollback copies (C(config.json.prev), C(<facts>.prev)) that exist as regular files; vllm_service removes them
      once the new server is ready, else the next run that does not rewrite C(config.json) does.
  type: list
  elements: str
  returned: always
config:
  description: >-
    C(decided), C(changed) (config.json would change), C(reason) (why it could not tell), C(result) (what
    M(inference.gpu_host.dflash_drafter_config) would return).
  type: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.state import ARGUMENT_SPEC, module_result


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(**module_result(module))


if __name__ == "__main__":
    main()
