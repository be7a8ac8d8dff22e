# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The GPU subsystem's filters: the lxc_gpu role's bookkeeping (module_utils/_gpu/lxc_state.py; the node's NVIDIA
devices by facts.py, the one parser of /proc/devices), through plugin_utils/_filters.py.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "lxc_gpu_node_devices": to("_gpu.lxc_state", "node_devices", "LxcGpuStateError", plain=True),
            "lxc_gpu_driver_record": to("_gpu.lxc_state", "driver_record_by_vmid", "LxcGpuStateError", plain=True),
            "lxc_gpu_driver_fixed": to("_gpu.lxc_state", "fixed_driver_records", "LxcGpuStateError", plain=True),
            "lxc_gpu_restart_states": to("_gpu.lxc_state", "restart_states", "LxcGpuStateError", plain=True),
            "lxc_gpu_container_report": to("_gpu.lxc_state", "container_report_by_vmid", "LxcGpuStateError",
                                           plain=True),
        })
