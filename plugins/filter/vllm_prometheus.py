# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The Prometheus target of a served instance (module_utils/_vllm/prometheus.py) as a Jinja filter.

Documented in vllm_prometheus_target.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def vllm_prometheus_target(settings):
    """{"errors": [...], "instance", "address", "labels", "file_sd", "target_file", "rules_file"}."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.prometheus import prometheus_target
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError("vllm_prometheus_target: expected a dict of settings, got %s" % type(settings).__name__)
    try:
        return prometheus_target(plain(settings))
    except ValueError as exc:
        raise AnsibleFilterError("vllm_prometheus_target: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"vllm_prometheus_target": vllm_prometheus_target}
