# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""nvidia_gpu_info run for real as a subprocess, with a small executable `nvidia-smi` first on
PATH that prints a captured or reconstructed output and exits with nvidia-smi's exit code."""

import os
import shutil

import pytest
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
SMI_DATA = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "nvidia_smi")
SYSTEM_PATH = "/usr/bin:/bin"

FAKE_SMI = """#!/bin/sh
# Stand-in for nvidia-smi: prints a recorded output and exits with the recorded code.
echo "$*" >> '{log}'
case " $* " in
  *" --query-gpu="*) cat '{query}'; exit {query_rc} ;;
  *) cat '{plain}'; exit {plain_rc} ;;
esac
"""


def fake_smi(tmp_path, query, query_rc=0, plain="h200.smi.txt", plain_rc=0):
    """Write bin/nvidia-smi into tmp_path; returns (bin dir, invocation log path)."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "smi.log"
    script = bindir / "nvidia-smi"
    script.write_text(FAKE_SMI.format(log=log, query=os.path.join(SMI_DATA, query), query_rc=query_rc,
                                      plain=os.path.join(SMI_DATA, plain), plain_rc=plain_rc))
    script.chmod(0o755)
    return str(bindir), log


def run_module(tmp_path, args, path=SYSTEM_PATH, check_mode=False):
    module_args = dict(args)
    module_args.setdefault("kernel_module_version_path", str(tmp_path / "no-such-version-file"))
    return _module_runner.run_module("nvidia_gpu_info", tmp_path, module_args, check=check_mode, env={"PATH": path},
                                     args_name="args.json")


def test_h200_captured(tmp_path):
    bindir, log = fake_smi(tmp_path, "h200.query.txt")
    result = run_module(tmp_path, {"kernel_module_version_path": os.path.join(SMI_DATA, "h200.proc_version.txt")},
                        path=bindir + ":" + SYSTEM_PATH)
    assert result["changed"] is False and not result.get("failed")
    assert result["gpus"] == [{
        "index": 0, "name": "NVIDIA H200", "uuid": "GPU-35975a73-7769-4d54-c326-097dbcf602f8",
        "compute_capability": "9.0", "compute_capability_major": 9, "compute_capability_minor": 0,
        "driver_version": "580.159.04", "memory_total_mib": 143771,
    }]
    assert result["gpu_count"] == 1
    assert result["driver_version"] == "580.159.04"
    assert result["cuda_version"] == "13.0"
    assert result["kernel_module_version"] == "580.159.04"
    assert result["reason"] == "" and result["failure"] == ""
    assert result["nvidia_smi_path"] == os.path.join(bindir, "nvidia-smi")
    calls = log.read_text().splitlines()
    assert calls[0] == "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv,noheader,nounits"
    assert calls[1] == ""                                  # plain nvidia-smi, for the CUDA version


def test_a6000_pair_with_gates(tmp_path):
    bindir, _log = fake_smi(tmp_path, "a6000x2.query.txt", plain="a6000x2.smi.txt")
    result = run_module(tmp_path, {"flash_attn_major": 4, "tensor_parallel_size": 2}, path=bindir + ":" + SYSTEM_PATH)
    assert result["gpu_count"] == 2 and result["cuda_version"] == "12.4"
    assert [g["compute_capability"] for g in result["gpus"]] == ["8.6", "8.6"]
    assert [g["compute_capability_minor"] for g in result["gpus"]] == [6, 6]
    gate = result["flash_attn_gate"]
    assert gate["ok"] is False and gate["status"] == "refused"
    assert "GPU 0 (NVIDIA RTX A6000, compute capability 8.6)" in gate["message"]
    assert result["tensor_parallel"]["ok"] is True


@pytest.mark.parametrize("query, plain, major, tp, gate_ok, tp_ok", [
    ("h100.query.txt", "h100.smi.txt", 4, 2, True, False),
    ("b200.query.txt", "b200.smi.txt", 4, 2, True, True),
    ("a6000x2.query.txt", "a6000x2.smi.txt", 2, 4, True, False),
])
def test_gates(tmp_path, query, plain, major, tp, gate_ok, tp_ok):
    bindir, _log = fake_smi(tmp_path, query, plain=plain)
    result = run_module(tmp_path, {"flash_attn_major": major, "tensor_parallel_size": tp}, path=bindir + ":" + SYSTEM_PATH)
    assert result["flash_attn_gate"]["ok"] is gate_ok
    assert result["tensor_parallel"]["ok"] is tp_ok


@pytest.mark.parametrize("out, rc, failure, needle", [
    ("no_driver.out", 9, "no_driver", "could not communicate with the NVIDIA driver"),
    ("no_devices.out", 6, "no_devices", "found no GPU"),
    ("no_supported_gpus.out", 255, "no_devices", "found no GPU"),
    ("no_compute_cap.out", 2, "no_compute_cap", "too old to report the compute_cap"),
])
def test_failures_are_reasons_not_crashes(tmp_path, out, rc, failure, needle):
    bindir, log = fake_smi(tmp_path, out, query_rc=rc, plain=out, plain_rc=rc)
    result = run_module(tmp_path, {"flash_attn_major": 2}, path=bindir + ":" + SYSTEM_PATH)
    assert not result.get("failed"), result
    assert result["gpus"] == [] and result["gpu_count"] == 0
    assert result["failure"] == failure and needle in result["reason"]
    assert result["flash_attn_gate"]["status"] == "skipped"
    assert len(log.read_text().splitlines()) == 1          # no second run after a failed query


def test_mismatch_reports_both_versions(tmp_path):
    bindir, _log = fake_smi(tmp_path, "mismatch.out", query_rc=18, plain="mismatch.out", plain_rc=18)
    result = run_module(tmp_path, {"kernel_module_version_path": os.path.join(SMI_DATA, "mismatch.proc_version.txt")},
                        path=bindir + ":" + SYSTEM_PATH)
    assert result["failure"] == "mismatch"
    assert result["kernel_module_version"] == "535.183.01" and result["nvml_library_version"] == "535.161"
    assert "kernel module is 535.183.01" in result["reason"] and "NVML library is 535.161" in result["reason"]


def test_explicit_path_missing(tmp_path):
    missing = str(tmp_path / "opt" / "nvidia-smi")
    result = run_module(tmp_path, {"nvidia_smi_path": missing, "tensor_parallel_size": 1})
    assert not result.get("failed")
    assert result["gpus"] == [] and result["failure"] == "not_found"
    assert result["reason"].startswith("nvidia-smi was not found at %s" % missing)
    assert result["nvidia_smi_path"] is None
    assert result["tensor_parallel"]["status"] == "skipped"


def test_explicit_path_used(tmp_path):
    bindir, _log = fake_smi(tmp_path, "b200.query.txt", plain="b200.smi.txt")
    result = run_module(tmp_path, {"nvidia_smi_path": os.path.join(bindir, "nvidia-smi")})
    assert result["gpu_count"] == 2 and result["cuda_version"] == "12.8"
    assert result["gpus"][1]["compute_capability_major"] == 10


@pytest.mark.skipif(shutil.which("nvidia-smi", path="/usr/bin:/bin:/usr/local/bin:/usr/sbin") is not None,
                    reason="this machine has a real nvidia-smi in a default directory")
def test_no_nvidia_smi_on_path(tmp_path):
    result = run_module(tmp_path, {})
    assert not result.get("failed")
    assert result["gpus"] == [] and result["reason"].startswith("nvidia-smi was not found on PATH")


def test_check_mode_runs_the_same(tmp_path):
    bindir, _log = fake_smi(tmp_path, "h200.query.txt")
    result = run_module(tmp_path, {}, path=bindir + ":" + SYSTEM_PATH, check_mode=True)
    assert result["changed"] is False and result["gpu_count"] == 1


def test_bad_option_fails_cleanly(tmp_path):
    result = run_module(tmp_path, {"flash_attn_major": 5})
    assert result["failed"] is True and "flash_attn_major" in result["msg"]


def test_bad_tensor_parallel_size_fails_with_the_message(tmp_path):
    bindir, _log = fake_smi(tmp_path, "h200.query.txt")
    result = run_module(tmp_path, {"tensor_parallel_size": 0}, path=bindir + ":" + SYSTEM_PATH)
    assert result["failed"] is True
    assert result["msg"] == "tensor_parallel_size: expected a positive integer, got 0"
