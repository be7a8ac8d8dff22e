# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Action plugin of drafter_host_state: the read runs on the host as the host_state module (plugins/action/host_state.py,
module_utils/_host/host_state.py: one module payload per run for every role's read and the run lock)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.action.host_state import ActionModule as HostStateAction


class ActionModule(HostStateAction):
    READ = "drafter"
    LOCKS = ()
