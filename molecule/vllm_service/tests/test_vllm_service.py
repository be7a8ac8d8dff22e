"""testinfra checks of the vllm_service role: real vLLM (CPU build) under real systemd."""
import json

UNIT = "vllm-tiny.service"


def _main_pid(host):
    return int(host.check_output("systemctl show -p MainPID --value %s" % UNIT))


def test_service_running_and_enabled(host):
    svc = host.service(UNIT)
    assert svc.is_running
    assert svc.is_enabled


def test_socket_listening(host):
    assert host.socket("tcp://127.0.0.1:30000").is_listening


def test_unit_properties(host):
    props = host.service(UNIT).systemd_properties
    assert props["KillMode"] == "control-group"
    assert props["Restart"] == "on-failure"
    assert props["StartLimitBurst"] == "3"
    assert props["LimitNOFILE"] == "1048576"


def test_speculative_config_survives_systemd_quoting(host):
    """The running process's argv parses back to the same speculative config dict."""
    raw = host.file("/proc/%d/cmdline" % _main_pid(host)).content
    argv = raw.decode().split("\0")
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "model": "/root/models/tiny-qwen3-dflash", "num_speculative_tokens": 3}


def test_env_file_private(host):
    env = host.file("/etc/vllm/tiny.env")
    assert env.mode == 0o600 and env.user == "root"


def test_unit_verifies(host):
    assert host.run("systemd-analyze verify /etc/systemd/system/%s" % UNIT).rc == 0


def test_dflash_drafter_loaded(host):
    log = host.check_output("journalctl -u %s --no-pager -o cat" % UNIT)
    assert "DFlashDraftModel" in log
    # vLLM 0.32 adds the +1: DFlash ids [1, 5] -> auxiliary layers (2, 6)
    assert "Using auxiliary layers from speculative config: (2, 6)" in log


def test_completion(host):
    out = host.check_output(
        "curl -s http://127.0.0.1:30000/v1/completions -H 'Content-Type: application/json' "
        "-d '{\"model\": \"tiny-qwen3\", \"prompt\": \"hello\", \"max_tokens\": 4}'")
    assert json.loads(out)["choices"]


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/inference_vllm_service_tiny.fact").content_string)
    assert facts["url"] == "http://127.0.0.1:30000/v1"
