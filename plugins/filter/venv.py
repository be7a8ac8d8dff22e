# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The venv subsystem's filters (python_env role): each names its module_utils/_venv function
(plugin_utils/_filters.py).

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "python_env_plan": to("_venv.state", "decide", "PythonEnvStateError"),
            "flash_attn_gate": to("_venv.flash_attn_choice", "gpu_gate", "FlashAttnChoiceError"),
            "vllm_version_table": to("_venv.flash_attn_choice", "release", "FlashAttnChoiceError", plain=True),
            "python_env_input_problems": to("_venv.inputs", "checked_input_problems", "PythonEnvInputsError"),
        })
