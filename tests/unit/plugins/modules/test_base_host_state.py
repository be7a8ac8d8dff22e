# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""base_host_state run for real as a subprocess, on this machine's dpkg and a scratch directory."""

import os

import _module_runner  # noqa: E402  pylint: disable=wrong-import-position


def _args(tmp_path, **over):
    args = {"packages": ["dpkg", "no-such-package-igh"], "ca_dir": str(tmp_path / "ca"),
            "record": str(tmp_path / "base.fact"), "user": "root", "group": "root",
            "paths": [str(tmp_path), str(tmp_path / "missing")]}
    args.update(over)
    return args


def test_reads_the_host(tmp_path):
    (tmp_path / "ca").mkdir()
    (tmp_path / "ca" / "a.crt").write_text("x")
    (tmp_path / "ca" / "ignored.pem").write_text("x")
    (tmp_path / "base.fact").write_text('{"version": 1, "packages": []}')
    result = _module_runner.run_module("base_host_state", tmp_path, _args(tmp_path), check=True, check_rc=True)
    assert not result.get("changed")
    assert result["packages"]["dpkg"] is True
    assert result["packages"]["no-such-package-igh"] is False
    assert "python3-apt" in result["packages"]
    assert list(result["ca_files"]) == ["a.crt"]
    assert result["ca_files"]["a.crt"]["sha256"] == "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    assert result["record"] == {"version": 1, "packages": []}
    assert result["paths"][str(tmp_path)]["isdir"] is True
    assert result["paths"][str(tmp_path / "missing")] == {"exists": False}
    assert result["user"]["exists"] and result["user"]["home"] == "/root" or os.getuid() != 0
    assert result["group"]["exists"]
    assert isinstance(result["shm_mib"], int)


def test_broken_record_is_a_warning(tmp_path):
    (tmp_path / "base.fact").write_text("{")
    result = _module_runner.run_module("base_host_state", tmp_path, _args(tmp_path), check_rc=True)
    assert result["record"] is None
    # ansible-core 2.19 returns each warning as a structured summary; older ones as a string.
    assert "not JSON" in repr(result.get("warnings")), result


def test_bad_options_fail_naming_them(tmp_path):
    for over, needle in (({"ca_dir": "relative"}, "ca_dir must be an absolute path"),
                         ({"paths": ["rel/x"]}, "paths must be absolute"),
                         ({"packages": ["-rf"]}, "packages must be Debian package names")):
        result = _module_runner.run_module("base_host_state", tmp_path, _args(tmp_path, **over), check_rc=True)
        assert result["failed"] and needle in result["msg"], result


def test_gpus_read_as_nvidia_gpu_info_reads_them(tmp_path):
    # One round trip for base: the same facts nvidia_gpu_info returns with its defaults (this machine has no GPU).
    result = _module_runner.run_module("base_host_state", tmp_path, _args(tmp_path, gpus=True), check=True, check_rc=True)
    alone = _module_runner.run_module("nvidia_gpu_info", tmp_path, {}, check=True, check_rc=True)
    for key in ("gpu_count", "gpus", "reason", "driver_version", "nvidia_smi_path"):
        assert result["gpu_info"][key] == alone[key], key
    assert "gpu_info" not in _module_runner.run_module("base_host_state", tmp_path, _args(tmp_path), check_rc=True)
