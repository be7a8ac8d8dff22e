# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The benchmark subsystem's filters: each names its module_utils/_bench function (plugin_utils/_filters.py).

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "bench_endpoint": to("_bench.endpoint", "served_endpoint", "EndpointError"),
            "bench_report": to("_bench.report", "report", "ReportError"),
            "bench_speedup": to("_bench.baseline", "speedup", "BaselineError"),
            "bench_api_key": to("_bench.run", "env_file_api_key", "BenchError"),
            "bench_drift_info": to("_bench.report", "drift_info", "ReportError"),
        })
