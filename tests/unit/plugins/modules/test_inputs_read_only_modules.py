# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_venv_lock, nvidia_gpu_info and vllm_version_info check their own inputs, run for real."""

import json
import os

import pytest

import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
SMI_DATA = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "nvidia_smi")
URL = "file:///srv/wheels/local_wheel-1.0-py3-none-any.whl"


def run(module, workdir, args, env=None):
    return _module_runner.run_module(module, workdir, args, env=env, check_rc=True)


def assert_refused(result, *parts):
    assert result.get("failed") is True, result
    assert not result.get("changed")
    for part in parts:
        assert part in result["msg"], result["msg"]


def make_venv(tmp_path, dists):
    """lib/python3.11/site-packages with one dist-info per (name, version, direct_url.json bytes or None)."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for name, version, direct_url in dists:
        info = site / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
        if direct_url is not None:
            (info / "direct_url.json").write_bytes(direct_url)
    return str(tmp_path / "venv"), str(site)


# -------------------------------------------------------- python_venv_lock ---

def test_venv_lock_binary_lock_file(tmp_path):
    venv, _site = make_venv(tmp_path, [("six", "1.17.0", None)])
    lock = tmp_path / "lock.txt"
    lock.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00\xb7")
    result = run("python_venv_lock", tmp_path, {"venv": venv, "lock": str(lock)})
    assert_refused(result, "lock file %s is not UTF-8 text" % lock)


def test_venv_lock_control_characters(tmp_path):
    venv, _site = make_venv(tmp_path, [("six", "1.17.0", None)])
    lock = tmp_path / "lock.txt"
    lock.write_bytes(b"six==1.17.0\x00\x00\n")
    assert_refused(run("python_venv_lock", tmp_path, {"venv": venv, "lock": str(lock)}),
                   "%s line 1: control character U+0000" % lock)


def test_venv_lock_direct_url_list_is_a_warning_not_a_crash(tmp_path):
    venv, site = make_venv(tmp_path, [("local-wheel", "1.0", json.dumps([{"url": URL}]).encode())])
    lock = tmp_path / "lock.txt"
    lock.write_text("local-wheel @ %s\n" % URL)
    result = run("python_venv_lock", tmp_path, {"venv": venv, "lock": str(lock)})
    assert not result.get("failed") and result["changed"] is False
    assert result["in_sync"] is False
    path = os.path.join(site, "local_wheel-1.0.dist-info", "direct_url.json")
    # ansible-core 2.19 returns each warning as a structure holding the text
    assert any(path in json.dumps(w) and "ignored, expected a JSON object" in json.dumps(w) for w in result["warnings"])


@pytest.mark.parametrize("option", ["venv", "lock"])
def test_venv_lock_relative_paths(tmp_path, option):
    venv, _site = make_venv(tmp_path, [])
    lock = tmp_path / "lock.txt"
    lock.write_text("")
    args = {"venv": venv, "lock": str(lock)}
    args[option] = os.path.basename(args[option])
    assert_refused(run("python_venv_lock", tmp_path, args), "%s must be an absolute path" % option)


# --------------------------------------------------------- nvidia_gpu_info ---

def fake_smi(tmp_path):
    """bin/nvidia-smi printing a captured H200 answer, logging each call."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "smi.log"
    script = bindir / "nvidia-smi"
    query, plain = os.path.join(SMI_DATA, "h200.query.txt"), os.path.join(SMI_DATA, "h200.smi.txt")
    script.write_text("#!/bin/sh\necho \"$*\" >> '%s'\n"
                      "case \" $* \" in *\" --query-gpu=\"*) cat '%s' ;; *) cat '%s' ;; esac\n" % (log, query, plain))
    script.chmod(0o755)
    return str(script), log


@pytest.mark.parametrize("option", ["nvidia_smi_path", "kernel_module_version_path"])
def test_gpu_info_relative_paths(tmp_path, option):
    smi, log = fake_smi(tmp_path)
    result = run("nvidia_gpu_info", tmp_path, {"nvidia_smi_path": smi, option: "nvidia-smi"})
    assert_refused(result, "%s must be an absolute path, got 'nvidia-smi'" % option)
    assert not log.exists()  # refused before nvidia-smi ran


def test_gpu_info_tensor_parallel_size_checked_before_running(tmp_path):
    smi, log = fake_smi(tmp_path)
    result = run("nvidia_gpu_info", tmp_path, {"nvidia_smi_path": smi, "tensor_parallel_size": -3})
    assert_refused(result, "tensor_parallel_size: expected a positive integer, got -3")
    assert not log.exists()


@pytest.mark.parametrize("kind", ["binary", "fifo", "huge"])
def test_gpu_info_odd_kernel_version_file_is_ignored(tmp_path, kind):
    smi, _log = fake_smi(tmp_path)
    path = str(tmp_path / "version")
    if kind == "binary":
        with open(path, "wb") as handle:
            handle.write(b"\xff\xfe\x00NVRM version: \xff\n")
    elif kind == "fifo":
        os.mkfifo(path)  # reading it would block forever
    else:
        with open(path, "wb") as handle:
            handle.truncate(1 << 30)  # sparse 1 GiB of zeros: read only its first 64 KiB
    result = run("nvidia_gpu_info", tmp_path, {"nvidia_smi_path": smi, "kernel_module_version_path": path})
    assert not result.get("failed"), result
    assert result["kernel_module_version"] is None and result["gpu_count"] == 1


# -------------------------------------------------------- vllm_version_info ---

@pytest.mark.parametrize("args,expected", [
    ({"venv": "venv"}, "venv must be an absolute path, got 'venv'"),
    ({"version": "0." + "1" * 5000}, "version must be a vLLM version such as '0.20.1' (at most 128"),
    ({"version": "0.22.0\n"}, "version must be a vLLM version"),
    ({"version": "0.25.0", "layer_types": ["sliding"]}, "layer_types"),
])
def test_version_info_bad_options(tmp_path, args, expected):
    assert_refused(run("vllm_version_info", tmp_path, args), expected)


def test_version_info_unreadable_installed_version(tmp_path):
    info = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: vllm\nVersion: 0." + "1" * 5000 + "\n")
    result = run("vllm_version_info", tmp_path, {"venv": str(tmp_path / "venv")})
    assert_refused(result, "venv %s: cannot read the installed vLLM's version" % (tmp_path / "venv"))


def test_version_info_still_describes_a_good_pin(tmp_path):
    result = run("vllm_version_info", tmp_path, {"version": "0.25.0",
                                                 "layer_types": ["sliding_attention", "full_attention"]})
    assert not result.get("failed") and result["behaviour"]["sliding_window"] == "all_sliding_only"
