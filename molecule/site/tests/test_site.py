"""site.yml with the local inventory, end to end: the stand-in for ct129 serves."""
import json
import shlex
import time


def test_vllm_serves_a_completion(host):
    assert host.service("vllm-tiny.service").is_running
    assert host.socket("tcp://127.0.0.1:30000").is_listening
    out = host.check_output(
        "curl -s http://127.0.0.1:30000/v1/completions -H 'Content-Type: application/json' "
        "-d '{\"model\": \"tiny-qwen3\", \"prompt\": \"hello\", \"max_tokens\": 4}'")
    assert json.loads(out)["choices"]


def test_drafter_config_from_headers(host):
    cfg = json.loads(host.file("/root/models/tiny-qwen3-dflash/config.json").content_string)
    assert cfg["dflash_config"]["target_layer_ids"] == [1, 5]


def test_local_facts_record_the_host(host):
    for name in ("inference_python_env", "inference_drafter", "inference_vllm_service_tiny"):
        assert host.file("/etc/ansible/facts.d/%s.fact" % name).is_file, name


# Monitoring: prepare.yml runs Debian's Prometheus on the host (its own monitoring host);
# the vllm_service role wrote the file_sd target and the rules it reads.
def prometheus(host, path, **params):
    """One Prometheus API answer, polled until it holds data (scrapes every 5 s)."""
    args = " ".join("--data-urlencode %s" % shlex.quote("%s=%s" % kv) for kv in params.items())
    for _attempt in range(30):
        answer = json.loads(host.check_output("curl -sf --get http://127.0.0.1:9090/api/v1/%s %s" % (path, args)))
        assert answer["status"] == "success", answer
        data = answer["data"]
        if data.get("result") or data.get("groups"):
            return data
        time.sleep(2)
    raise AssertionError("no data from Prometheus for %s %s" % (path, params))


def test_prometheus_scrapes_the_vllm_target(host):
    target = json.loads(host.file("/etc/prometheus/file_sd/vllm/ct129-local-site-tiny.json").content_string)
    assert target[0]["targets"] == ["127.0.0.1:30000"]
    [up] = prometheus(host, "query", query='up{job="vllm"}')["result"]
    assert up["value"][1] == "1", up
    assert up["metric"] == {"__name__": "up", "job": "vllm", "instance": "ct129-local-site:30000",
                            "vllm_instance": "tiny", "served_model_name": "tiny-qwen3", "vllm_version": "0.32.0"}


def test_prometheus_shows_the_dflash_counters(host):
    # The smoke completion (and the test above) ran through DFlash: drafts were proposed.
    query = 'vllm:spec_decode_num_draft_tokens_total{instance="ct129-local-site:30000"}'
    result = prometheus(host, "query", query=query)["result"]
    assert result and all(float(s["value"][1]) > 0 for s in result), result
    assert {s["metric"]["model_name"] for s in result} == {"tiny-qwen3"}
    # The restart alert's metric: the API server's process collector.
    assert prometheus(host, "query", query='process_start_time_seconds{job="vllm"}')["result"]


def test_prometheus_loaded_the_rules(host):
    groups = prometheus(host, "rules")["groups"]
    [group] = [g for g in groups if g["name"] == "vllm ct129-local-site:30000"]
    assert [r["name"] for r in group["rules"]] == [
        "instance:vllm_spec_decode_draft_tokens:rate", "instance:vllm_spec_decode_acceptance:ratio",
        "VllmDown", "VllmRestartLoop", "VllmSpecDecodeAcceptanceCollapsed"]
    assert {r["health"] for r in group["rules"]} == {"ok"}, group
    assert host.file(group["file"]).content_string.startswith("# Ansible managed")
