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


def bench_table(records, title="", speedup=None):
    """vllm_benchmark's records as a text table."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.report import ReportError, table
    try:
        return table(records, title, speedup)
    except ReportError as exc:
        raise AnsibleFilterError(str(exc))


def bench_report(records, host, instance, speedup=None, baseline=None):
    """vllm_benchmark's records as the JSON report document."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.report import ReportError, document
    try:
        return document(records, host, instance, speedup, baseline)
    except ReportError as exc:
        raise AnsibleFilterError(str(exc))


def bench_speedup(record, baseline):
    """The speculative record against the baseline record ("DFlash: N x the plain target"), or None."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.baseline import speedup
    return speedup(record, baseline)


def bench_api_key(env_text):
    """VLLM_API_KEY of the unit's environment file's text ('' when it sets none)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.run import api_key_from_env_file
    if not isinstance(env_text, str):
        raise AnsibleFilterError("bench_api_key: expected the environment file's text, got %s"
                                 % type(env_text).__name__)
    return api_key_from_env_file(env_text)


def bench_dropin_path(unit):
    """The baseline's runtime drop-in of the unit (module_utils/_bench/baseline.py)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.baseline import BaselineError, dropin_path
    try:
        return dropin_path(unit)
    except BaselineError as exc:
        raise AnsibleFilterError(str(exc))


def bench_drift_info(last_text, baseline_text="", live=None):
    """The drift check's information on the recorded benchmark and the live acceptance (not a finding)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._bench.report import drift_info
    return drift_info(last_text, baseline_text, live)


class FilterModule(object):
    def filters(self):
        return {"bench_endpoint": bench_endpoint, "bench_table": bench_table, "bench_report": bench_report,
                "bench_speedup": bench_speedup, "bench_api_key": bench_api_key, "bench_drift_info": bench_drift_info,
                "bench_dropin_path": bench_dropin_path}
