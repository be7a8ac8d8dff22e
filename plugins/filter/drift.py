# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift check's filters: the drift_schedule role's command line (module_utils/_drift/cli.py), and one inference
host's findings at the gateway (module_utils/_drift/gateway.py).

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter); the whole drift check,
piece by piece, is in docs/drift.md.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def drift_check_argv(settings):
    """scripts/drift_check.py's argv of a mapping of drift_schedule settings (drift_check_argv's keywords)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import DriftCheckCliError
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import drift_check_argv as _argv
    if not isinstance(settings, dict):
        raise AnsibleFilterError("drift_check_argv: expected a mapping of drift_schedule settings, got %r" % (settings,))
    try:
        return _argv(**settings)
    except TypeError as exc:
        raise AnsibleFilterError("drift_check_argv: %s" % exc)
    except DriftCheckCliError as exc:
        raise AnsibleFilterError(str(exc))


def gateway_drift_findings(plan, host, gateway, config_text, results):
    """The findings of ``host`` at ``gateway``: the backend plan, the gateway's haproxy.cfg, the probes' results."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift import gateway as _gateway
    if not isinstance(results, list):
        raise AnsibleFilterError("gateway_drift_findings: expected the registered gateway_server results (a list), "
                                 "got %r" % (results,))
    try:
        return _gateway.gateway_findings(host, gateway, plan, config_text, _gateway.probes_of(results))
    except _gateway.GatewayDriftError as exc:
        raise AnsibleFilterError("gateway_drift_findings: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"drift_check_argv": drift_check_argv, "gateway_drift_findings": gateway_drift_findings}
