# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The benchmark subsystem's filters: the served instance's endpoint (module_utils/_bench/endpoint.py) and the
controller's report of recorded benchmarks (module_utils/_bench/report.py). Plumbing only.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def bench_endpoint(source, env_file):
    """What the benchmark needs of the served instance, from the vllm_service record or a gate endpoint."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.endpoint import EndpointError, endpoint
    try:
        return endpoint(source, env_file)
    except EndpointError as exc:
        raise AnsibleFilterError(str(exc))


def bench_table(records, title=""):
    """vllm_benchmark's records as a text table."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.report import ReportError, table
    try:
        return table(records, title)
    except ReportError as exc:
        raise AnsibleFilterError(str(exc))


def bench_report(records, host, instance):
    """vllm_benchmark's records as the JSON report document."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.report import ReportError, document
    try:
        return document(records, host, instance)
    except ReportError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"bench_endpoint": bench_endpoint, "bench_table": bench_table, "bench_report": bench_report}
