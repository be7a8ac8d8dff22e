# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vLLM subsystem's filters: each names its function in module_utils/_vllm/ or _stack/upgrade_plan.py, which
decides (plugin_utils/_filters.py).

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            # serve.py
            "vllm_restart_result": to("_vllm.serve", "restart_result", "VllmServeError", plain=True),
            # unit.py; the type is part of the systemd quoting check (no plain copy)
            "vllm_unit_values": to("_vllm.unit", "render", "VllmUnitError", plain=True),
            "vllm_unit_inputs": to("_vllm.unit", "unit_inputs", "VllmUnitError", plain=True),
            "systemd_exec": to("_vllm.unit", "systemd_exec", "VllmUnitError"),
            # The host read is large and a few of its keys are read: not copied into plain containers first.
            "vllm_service_host_check": to("_vllm.host_requirements", "host_check", "HostRequirementsError"),
            "vllm_service_plan": to("_vllm.service_plan", "plan", "VllmServicePlanError"),
            "vllm_upgrade_plan": to("_stack.upgrade_plan", "playbook_plan", "UpgradePlanError", plain=True),
            "vllm_prometheus_target": to("_vllm.prometheus", "checked_target", "ValueError", plain=True),
        })
