"""site.yml with the local inventory, end to end: the stand-in for ct129 serves."""
import json


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
