# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The gateway subsystem's filters: backends from the inventory, haproxy.cfg, a host's servers at the gateway
(module_utils/_gateway/config.py). Plumbing only.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _config():
    from ansible_collections.inference.gpu_host.plugins.module_utils._gateway import config
    return config


def gateway_backends(models, groups, hostvars):
    """Per served model: frontend port, backend, health-check key and servers, from the inventory groups."""
    config = _config()
    try:
        return config.backend_plan(models, groups, hostvars)
    except config.GatewayError as exc:
        raise AnsibleFilterError(str(exc))


def gateway_config(plan, settings):
    """haproxy.cfg for gateway_backends' plan and the role's settings."""
    config = _config()
    try:
        return config.render_config(plan, settings)
    except config.GatewayError as exc:
        raise AnsibleFilterError(str(exc))


def gateway_memberships(models, groups, host):
    """The (backend, server) pairs of one inventory host at the gateway."""
    config = _config()
    try:
        return config.memberships(models, groups, host)
    except config.GatewayError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"gateway_backends": gateway_backends, "gateway_config": gateway_config,
                "gateway_memberships": gateway_memberships}
