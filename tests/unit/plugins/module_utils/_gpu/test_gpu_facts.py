# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""gpu_facts on real and reconstructed nvidia-smi outputs (see data/README.md for which is which)."""

import os

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import (
    QUERY_ARGS,
    GpuFactsError,
    char_major_registered,
    classify_failure,
    flash_attn_gate,
    gpu_facts,
    nvidia_char_majors,
    parse_compute_capability,
    parse_cuda_version,
    parse_gpu_information,
    parse_kernel_module_version,
    parse_proc_devices,
    parse_query_gpu,
    parse_smi_header,
    tensor_parallel_check,
)

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")  # shared: module_utils/data


def read(*parts):
    with open(os.path.join(DATA, *parts)) as handle:
        return handle.read()


def smi(name):
    return read("nvidia_smi", name)


def test_query_args_are_the_documented_command():
    assert QUERY_ARGS == ("--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total",
                          "--format=csv,noheader,nounits")


# --- parsing the query output -------------------------------------------------------------

def test_h200_captured_query():
    assert parse_query_gpu(smi("h200.query.txt")) == [{
        "index": 0,
        "name": "NVIDIA H200",
        "uuid": "GPU-35975a73-7769-4d54-c326-097dbcf602f8",
        "compute_capability": "9.0",
        "compute_capability_major": 9,
        "compute_capability_minor": 0,
        "driver_version": "580.159.04",
        "memory_total_mib": 143771,
    }]


@pytest.mark.parametrize("name, count, cc, major, minor, memory, model", [
    ("a6000x2.query.txt", 2, "8.6", 8, 6, 49140, "NVIDIA RTX A6000"),
    ("h100.query.txt", 1, "9.0", 9, 0, 81559, "NVIDIA H100 80GB HBM3"),
    ("h200.query.txt", 1, "9.0", 9, 0, 143771, "NVIDIA H200"),
    ("b200.query.txt", 2, "10.0", 10, 0, 183359, "NVIDIA B200"),
])
def test_compute_capability_as_numbers(name, count, cc, major, minor, memory, model):
    gpus = parse_query_gpu(smi(name))
    assert len(gpus) == count
    assert [g["index"] for g in gpus] == list(range(count))
    for gpu in gpus:
        assert gpu["name"] == model
        assert gpu["compute_capability"] == cc
        assert (gpu["compute_capability_major"], gpu["compute_capability_minor"]) == (major, minor)
        assert isinstance(gpu["compute_capability_major"], int) and isinstance(gpu["compute_capability_minor"], int)
        assert gpu["memory_total_mib"] == memory


def test_b200_compares_above_hopper_numerically():
    # "10.0" < "9.0" as strings; the tuple is what gates compare.
    gpu = parse_query_gpu(smi("b200.query.txt"))[0]
    assert (gpu["compute_capability_major"], gpu["compute_capability_minor"]) > (9, 0)


def test_na_fields_become_none():
    gpu = parse_query_gpu(smi("na_fields.query.txt"))[0]
    assert gpu["compute_capability"] is None
    assert gpu["compute_capability_major"] is None
    assert gpu["memory_total_mib"] is None


def test_units_suffix_tolerated_but_header_line_refused():
    lines = smi("h200.query_with_header.txt").splitlines()
    assert parse_query_gpu(lines[1])[0]["memory_total_mib"] == 143771
    with pytest.raises(GpuFactsError, match=r"line 1: expected a GPU index"):
        parse_query_gpu("\n".join(lines))


@pytest.mark.parametrize("text, match", [
    ("0, NVIDIA H200, GPU-x, 9.0, 580.159.04", r"expected 6 comma-separated fields .* got 5"),
    ("0, NVIDIA H200, GPU-x, nine, 580.159.04, 143771", r"compute_cap: expected a compute capability like '8.6'"),
    ("0, NVIDIA H200, GPU-x, 9.0, 580.159.04, lots", r"memory.total in MiB"),
])
def test_malformed_query_lines_name_the_problem(text, match):
    with pytest.raises(GpuFactsError, match=match):
        parse_query_gpu(text)


@pytest.mark.parametrize("text, expected", [("8.6", (8, 6)), ("10.0", (10, 0)), (" 9.0 ", (9, 0)), ("12.1", (12, 1))])
def test_parse_compute_capability(text, expected):
    assert parse_compute_capability(text) == expected


@pytest.mark.parametrize("text", ["", "9", "9.0.1", "sm_90", None])
def test_parse_compute_capability_rejects(text):
    with pytest.raises(GpuFactsError):
        parse_compute_capability(text)


# --- header: driver and CUDA versions -----------------------------------------------------

@pytest.mark.parametrize("name, smi_version, driver, cuda", [
    ("h200.smi.txt", "580.159.04", "580.159.04", "13.0"),
    ("h200.version.txt", "580.159.04", "580.159.04", "13.0"),
    ("a6000x2.smi.txt", "550.127.05", "550.127.05", "12.4"),
    ("h100.smi.txt", "535.129.03", "535.129.03", "12.2"),
    ("b200.smi.txt", "570.133.20", "570.133.20", "12.8"),
    ("cuda_na.smi.txt", "580.159.04", "580.159.04", None),
])
def test_smi_header(name, smi_version, driver, cuda):
    assert parse_smi_header(smi(name)) == {"smi_version": smi_version, "driver_version": driver, "cuda_version": cuda}


def test_cuda_version_absent():
    assert parse_cuda_version(smi("no_driver.out")) is None
    assert parse_cuda_version("") is None


# --- failures -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, rc, kind, nvml", [
    ("no_driver.out", 9, "no_driver", None),
    ("mismatch.out", 18, "mismatch", "535.161"),
    ("mismatch_without_library_line.out", 18, "mismatch", None),
    ("no_devices.out", 6, "no_devices", None),
    ("no_supported_gpus.out", 255, "no_devices", None),
    ("no_compute_cap.out", 2, "no_compute_cap", None),
    ("bad_field_captured.out", 2, "failed", None),
])
def test_classify_failure(name, rc, kind, nvml):
    failure = classify_failure(smi(name), rc)
    assert failure["kind"] == kind
    assert failure["nvml_library_version"] == nvml
    assert failure["reason"]


def test_success_is_not_a_failure():
    assert classify_failure(smi("h200.query.txt"), 0) is None


def test_mismatch_reason_names_both_versions():
    facts = gpu_facts(smi("mismatch.out"), 18, kernel_module_text=smi("mismatch.proc_version.txt"))
    assert facts["gpus"] == [] and facts["gpu_count"] == 0
    assert facts["failure"] == "mismatch"
    assert facts["kernel_module_version"] == "535.183.01"
    assert facts["nvml_library_version"] == "535.161"
    assert "kernel module is 535.183.01" in facts["reason"]
    assert "NVML library is 535.161" in facts["reason"]


def test_mismatch_without_versions_says_unknown():
    facts = gpu_facts(smi("mismatch_without_library_line.out"), 18)
    assert "kernel module is unknown" in facts["reason"] and "NVML library is unknown" in facts["reason"]


@pytest.mark.parametrize("name, rc, needle", [
    ("no_driver.out", 9, "could not communicate with the NVIDIA driver"),
    ("no_devices.out", 6, "found no GPU"),
    ("no_supported_gpus.out", 255, "found no GPU"),
    ("no_compute_cap.out", 2, "too old to report the compute_cap"),
])
def test_failures_give_an_empty_list_and_a_reason(name, rc, needle):
    facts = gpu_facts(smi(name), rc)
    assert facts["gpus"] == [] and facts["gpu_count"] == 0
    assert needle in facts["reason"]


def test_not_found():
    facts = gpu_facts(None, None, nvidia_smi_path="/opt/nowhere/nvidia-smi")
    assert facts["failure"] == "not_found"
    assert facts["reason"].startswith("nvidia-smi was not found at /opt/nowhere/nvidia-smi")
    assert gpu_facts(None, None)["reason"].startswith("nvidia-smi was not found on PATH")


def test_garbage_output_is_a_reason_not_a_crash():
    facts = gpu_facts("something unexpected\n", 0)
    assert facts["failure"] == "failed"
    assert "could not read nvidia-smi's output" in facts["reason"]


def test_empty_success_means_no_devices():
    facts = gpu_facts("", 0)
    assert facts["failure"] == "no_devices" and facts["gpu_count"] == 0


def test_h200_facts_whole():
    facts = gpu_facts(smi("h200.query.txt"), 0, smi("h200.smi.txt"), 0, smi("h200.proc_version.txt"))
    assert facts["gpu_count"] == 1
    assert facts["driver_version"] == "580.159.04"
    assert facts["cuda_version"] == "13.0"
    assert facts["kernel_module_version"] == "580.159.04"
    assert facts["reason"] == "" and facts["failure"] == ""


def test_failed_plain_run_leaves_cuda_unknown():
    facts = gpu_facts(smi("a6000x2.query.txt"), 0, smi("no_driver.out"), 9)
    assert facts["gpu_count"] == 2 and facts["cuda_version"] is None
    assert facts["driver_version"] == "550.127.05"


# --- /proc files ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, version", [
    ("h200.proc_version.txt", "580.159.04"),          # captured, open kernel module
    ("a6000x2.proc_version.txt", "550.127.05"),       # proprietary spelling
    ("mismatch.proc_version.txt", "535.183.01"),
])
def test_kernel_module_version(name, version):
    assert parse_kernel_module_version(smi(name)) == version


def test_kernel_module_version_garbage():
    with pytest.raises(GpuFactsError, match=r"/proc/driver/nvidia/version: expected a line 'NVRM version"):
        parse_kernel_module_version("hello\n")


def test_gpu_information_captured():
    info = parse_gpu_information(smi("h200.gpu_information.txt"))
    assert info == {"model": "NVIDIA H200", "uuid": "GPU-35975a73-7769-4d54-c326-097dbcf602f8",
                    "bus_location": "0000:00:06.0", "device_minor": 0}
    with pytest.raises(GpuFactsError, match="Device Minor"):
        parse_gpu_information("Model: x\n")


def test_proc_devices_h200_captured():
    devices = parse_proc_devices(read("proc_devices", "h200.txt"))
    assert (195, "nvidia") in devices["character"] and (195, "nvidiactl") in devices["character"]
    majors = nvidia_char_majors(devices)
    assert majors["nvidia"] == 195 and majors["nvidiactl"] == 195
    assert majors["nvidia-uvm"] == 238 and majors["nvidia-caps"] == 241
    assert majors["nvidia-caps-imex-channels"] == 242
    # A name may appear under two majors (infiniband_verbs 231 and 244 there).
    assert [m for m, n in devices["character"] if n == "infiniband_verbs"] == [231, 244]
    assert (7, "loop") in devices["block"] and (7, "loop") not in devices["character"]
    assert char_major_registered(devices, 238) and not char_major_registered(devices, 259)


def test_proc_devices_without_nvidia():
    devices = parse_proc_devices(read("proc_devices", "test_host_no_nvidia.txt"))
    assert nvidia_char_majors(devices) == {}


def test_proc_devices_dynamic_majors_differ_between_hosts():
    h200 = nvidia_char_majors(parse_proc_devices(read("proc_devices", "h200.txt")))
    pve = nvidia_char_majors(parse_proc_devices(read("proc_devices", "pve_a6000.txt")))
    assert h200["nvidia"] == pve["nvidia"] == 195
    assert (h200["nvidia-uvm"], pve["nvidia-uvm"]) == (238, 509)


@pytest.mark.parametrize("text", ["", "195 nvidia\n", "Character devices:\n  x nvidia\n"])
def test_proc_devices_garbage(text):
    with pytest.raises(GpuFactsError, match="/proc/devices"):
        parse_proc_devices(text)


# --- the flash-attn gate ---------------------------------------------------------------------

def test_flash_attn_4_refused_on_a6000_naming_each_gpu():
    gate = flash_attn_gate(parse_query_gpu(smi("a6000x2.query.txt")), 4)
    assert gate["ok"] is False and gate["status"] == "refused" and gate["skipped"] is False
    assert "flash-attn 4 needs compute capability >= 9.0" in gate["message"]
    assert "GPU 0 (NVIDIA RTX A6000, compute capability 8.6)" in gate["message"]
    assert "GPU 1 (NVIDIA RTX A6000, compute capability 8.6)" in gate["message"]
    assert [r["index"] for r in gate["refused"]] == [0, 1]


@pytest.mark.parametrize("name, major", [
    ("a6000x2.query.txt", 2), ("h100.query.txt", 2), ("h100.query.txt", 4), ("h200.query.txt", 4),
    ("b200.query.txt", 4), ("b200.query.txt", 2), ("h200.query.txt", 3),
])
def test_flash_attn_allowed(name, major):
    gate = flash_attn_gate(parse_query_gpu(smi(name)), major)
    assert gate["ok"] is True and gate["status"] == "ok" and gate["refused"] == []


def test_flash_attn_mixed_host_names_only_the_old_gpu():
    gpus = parse_query_gpu(smi("h200.query.txt")) + [dict(parse_query_gpu(smi("a6000x2.query.txt"))[0], index=1)]
    gate = flash_attn_gate(gpus, "4")
    assert gate["status"] == "refused"
    assert "GPU 1 (NVIDIA RTX A6000, compute capability 8.6) is below it" in gate["message"]
    assert "H200" not in gate["message"]


def test_flash_attn_no_gpu_is_skipped():
    gate = flash_attn_gate([], 4)
    assert gate["status"] == "skipped" and gate["skipped"] is True and gate["ok"] is True
    assert gate["message"].startswith("skipped: no GPU")


def test_flash_attn_unknown_compute_capability_is_refused():
    gate = flash_attn_gate(parse_query_gpu(smi("na_fields.query.txt")), 2)
    assert gate["status"] == "refused" and "compute capability unknown" in gate["message"]


@pytest.mark.parametrize("major", [1, 5, "x", None])
def test_flash_attn_bad_major(major):
    with pytest.raises(GpuFactsError, match="flash_attn_major: expected one of"):
        flash_attn_gate([], major)


# --- tensor parallel ---------------------------------------------------------------------------

def test_tensor_parallel():
    gpus = parse_query_gpu(smi("a6000x2.query.txt"))
    assert tensor_parallel_check(gpus, 2)["ok"] is True
    assert tensor_parallel_check(gpus, 1)["status"] == "ok"
    refused = tensor_parallel_check(gpus, 4)
    assert refused["ok"] is False and refused["message"] == "tensor_parallel_size 4 needs 4 GPUs, but this host has 2"
    skipped = tensor_parallel_check([], 2)
    assert skipped["status"] == "skipped" and skipped["message"].startswith("skipped: no GPU")
    assert tensor_parallel_check(8, 8)["ok"] is True


@pytest.mark.parametrize("size", [0, -1, "two", None, True])
def test_tensor_parallel_bad_size(size):
    with pytest.raises(GpuFactsError, match="tensor_parallel_size: expected a positive integer"):
        tensor_parallel_check(2, size)
