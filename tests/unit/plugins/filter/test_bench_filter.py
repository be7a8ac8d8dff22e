# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The benchmark filters (plugins/filter/bench.py) as the serving_benchmark role calls them: the endpoint with the
baseline's drop-in, the report's document and table (module_utils/_bench decides; its tests are in _bench/)."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.bench import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._bench import endpoint, report

FILTERS = FilterModule().filters()
RECORD = {"unit": "vllm-tiny.service", "url": "http://127.0.0.1:30000/v1", "served_model_name": "tiny-qwen3",
          "model": "/root/models/tiny-qwen3", "venv": "/root/ml-env.generations/g"}
FIGURES = {"tok_s_c1": 270.25, "tok_s_cN": 1106.4, "concurrency": 4, "mean_acceptance_length": 4.0}
RECORDS = [{"key": "k1", "time": "2026-12-05T07:00:00Z", "generation": "g", "drafter_fingerprint": "d" * 64,
            "unit_hash": "u" * 64, "verdict": "first", "figures": FIGURES}]


def test_the_endpoint_names_the_baseline_dropin_of_its_unit():
    got = FILTERS["bench_endpoint"](RECORD, "/etc/vllm/tiny.env")
    assert got == dict(endpoint.endpoint(RECORD, "/etc/vllm/tiny.env"),
                       dropin="/run/systemd/system/vllm-tiny.service.d/50-inference-gpu-host-baseline.conf")


@pytest.mark.parametrize("source, message", [
    (dict(RECORD, unit="vllm-tiny"), r"^bench_endpoint: unit 'vllm-tiny': expected a systemd service name"),
    ({"unit": "u.service"}, "^bench_endpoint: the served instance's url, "),
    ("nope", "^bench_endpoint: expected the vllm_service record"),
])
def test_a_bad_endpoint_names_the_filter(source, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["bench_endpoint"](source, "/e")


def test_the_report_is_the_document_and_the_table():
    got = FILTERS["bench_report"](RECORDS, "h", "tiny")
    assert got == {"document": report.document(RECORDS, "h", "tiny"), "table": report.table(RECORDS, "h / tiny")}
    titled = FILTERS["bench_report"](RECORDS, "h", "tiny", None, None, title="h / tiny (/tmp/r)")
    assert titled["table"].splitlines()[0] == "h / tiny (/tmp/r)"
    assert titled["table"].splitlines()[1:] == got["table"].splitlines()[1:]
    with pytest.raises(AnsibleFilterError, match="^bench_report: "):
        FILTERS["bench_report"]({"not": "a list"}, "h", "tiny")


def test_the_api_key_needs_the_file_text():
    assert FILTERS["bench_api_key"]("HF_HOME=/h\nVLLM_API_KEY='sk 1'\n") == "sk 1"
    with pytest.raises(AnsibleFilterError, match="^bench_api_key: expected the environment file's text, got NoneType"):
        FILTERS["bench_api_key"](None)
