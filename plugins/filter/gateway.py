# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The gateway subsystem's filters: backends from the inventory and haproxy.cfg, a host's servers at the gateway
(module_utils/_gateway/config.py), through plugin_utils/_filters.py.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "gateway_plan": to("_gateway.config", "gateway_plan", "GatewayError"),
            "gateway_memberships": to("_gateway.config", "memberships", "GatewayError"),
        })
