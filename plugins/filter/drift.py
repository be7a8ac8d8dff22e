# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift check's filters: the drift_schedule role's command line (module_utils/_drift/cli.py), and one inference
host's findings at the gateway (module_utils/_drift/gateway.py), through plugin_utils/_filters.py.

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter); the whole drift check,
piece by piece, is in docs/drift.md.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "drift_check_argv": to("_drift.cli", "drift_check_argv_of", "DriftCheckCliError"),
            "gateway_drift_findings": to("_drift.gateway", "findings", "GatewayDriftError"),
        })
