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
  - Reads the drafter directory's owner, group and mode, a stat of the installed weights (size and mtime, never
    their bytes), the record of the last placement (parsed, with its SHA-256, owner, group and mode), the
    local facts file (SHA-256, owner, group, mode), whether the target's C(config.json) and the drafter's
    C(config.json) exist, a stat of a source file on the host, and which rollback copies (C(.prev)) exist.
  - With O(config), also whether M(inference.gpu_host.dflash_drafter_config) given these options would change
    C(config.json) (content, owner, group or mode), and the result it would return - the same derivation from
    the same safetensors header and target config, without writing anything. Where it cannot tell (the module
    would fail, a symbolic mode) it says so, and the role runs the module. Where it can, the role writes the
    C(config.json) it derived (the module is not run), so the warnings the module would give are given here.
  - The drafter role hands the result to the P(inference.gpu_host.drafter_plan#filter) filter, which names the work
    left (C(docs/architecture.md), the rule of the house).
  - Read-only. Bad options fail with a message naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  dest_dir:
    description: Absolute path of the drafter directory.
    type: path
    required: true
  weights:
    description: Absolute path of the installed weights (C(model.safetensors)).
    type: path
    required: true
  record:
    description:
      - Absolute path of the record of the last placement (JSON).
      - Read only when it is a regular file, at most 16 MiB and 64 levels of JSON (a FIFO or a device there is
        never read, so it cannot block); otherwise the record is null and a warning names the file.
    type: path
    required: true
  facts:
    description: Absolute path of the role's local facts file.
    type: path
    required: true
  target_config:
    description: Absolute path of the target model's C(config.json).
    type: path
    required: true
  source:
    description: Absolute path of the source weights on the host (a C(host) source), to stat.
    type: path
  config:
    description:
      - The options of M(inference.gpu_host.dflash_drafter_config) except C(drafter) (the role's
        C(module_defaults) for it); checked and converted as that module does. O(weights) is the drafter.
      - When not given, RV(config) says nothing was decided.
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
  description: "exists, isdir, isreg, size, mtime, uid, gid, owner, group, mode (octal string) of O(dest_dir)."
  type: dict
  returned: always
weights:
  description: The same for O(weights) (not followed when a link, as M(ansible.builtin.stat) by default).
  type: dict
  returned: always
source:
  description: The same for O(source), null without it.
  type: dict
  returned: always
record:
  description: The record of the last placement, null when absent or unreadable (a warning says why).
  type: dict
  returned: always
record_file:
  description: The stat of O(record), with C(sha256) for a regular file.
  type: dict
  returned: always
facts:
  description: The stat of O(facts), with C(sha256) for a regular file.
  type: dict
  returned: always
target_config_exists:
  description: Whether O(target_config) exists.
  type: bool
  returned: always
config_json_exists:
  description: Whether the C(dest) of O(config) exists (false without O(config)).
  type: bool
  returned: always
prev_copies:
  description:
    - The rollback copies C(<config.json>.prev) (the C(dest) of O(config)) and C(<facts>.prev) that exist as
      regular files. The drafter role keeps them for vllm_service, which removes them once the new server is
      ready; a run stopped in between leaves them, and the next run that does not rewrite C(config.json)
      removes them.
    - A link, directory or other file of that name is not listed (the role removes nothing else); a warning
      names it.
  type: list
  elements: str
  returned: always
config:
  description:
    - C(decided) (whether it could tell), C(changed) (config.json would change), C(reason) (why it could not
      tell), C(result) (what M(inference.gpu_host.dflash_drafter_config) would return, C(changed) included).
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
