# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# THE one home of GPU facts: nvidia-smi is parsed here once, and
# python_env (flash-attn gate), vllm_service (tensor-parallel size) and lxc_gpu
# (which devices, which majors) all read these functions through modules.
#
# Formats and where they come from (see tests/unit/plugins/module_utils/data/README.md):
# * ``nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total
#   --format=csv,noheader,nounits`` prints one line per GPU, ", "-separated; captured
#   on the H200 host: ``0, NVIDIA H200, GPU-35975a73-..., 9.0, 580.159.04, 143771``.
# * plain ``nvidia-smi`` prints a header ``| NVIDIA-SMI 580.159.04  Driver Version:
#   580.159.04  CUDA Version: 13.0 |``; ``nvidia-smi --version`` prints
#   ``CUDA Version        : 13.0``; both are read by parse_smi_header().
# * failures (message, exit code): no driver loaded: "NVIDIA-SMI has failed because it
#   couldn't communicate with the NVIDIA driver..." (9 = NVML_ERROR_DRIVER_NOT_LOADED);
#   "Failed to initialize NVML: Driver/library version mismatch" + "NVML library
#   version: 535.161" (18, anderskm/gputil#55); "No devices were found" (6, captured);
#   "Failed to initialize NVML: No supported GPUs were found" (255).
# * /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX [Open ]Kernel Module[ for
#   x86_64]  580.159.04  ..." (captured, open module; both spellings are in the wild).
# * /proc/devices: "<major> <name>" under "Character devices:" / "Block devices:";
#   several names share a major (195 nvidia, 195 nvidiactl), and the nvidia-uvm and
#   nvidia-caps majors are dynamic (238/241 on the H200 host, 234-511 in the wild).
#
# Public API (stdlib only; every failure a GpuFactsError):
# * parse_compute_capability(text) -> (major, minor)
# * parse_query_gpu(text) -> [gpu dict]
# * parse_smi_header(text) -> {smi_version, driver_version, cuda_version}
# * parse_cuda_version(text) -> "13.0" | None
# * classify_failure(output, rc) -> {kind, reason, nvml_library_version} | None
# * failure_reason(kind, output="", nvml_library_version=None, kernel_module_version=None, path=None) -> str
# * parse_kernel_module_version(text) -> "580.159.04"
# * parse_gpu_information(text) -> {model, uuid, bus_location, device_minor}
# * parse_proc_devices(text) -> {"character": [(major, name)], "block": [(major, name)]}
# * read_gpu_facts(module, nvidia_smi_path=None, kernel_module_version_path=...) -> gpu_facts() of this host
# * gpu_info(module) -> (result, failure message or None): the whole nvidia_gpu_info module
# * nvidia_char_majors(proc_devices) -> {name: major} for every "nvidia*" character device
# * char_major_registered(proc_devices, major) -> bool
# * gpu_facts(query_output, query_rc, smi_output=None, smi_rc=None,
#             kernel_module_text=None, nvidia_smi_path=None) -> the nvidia_gpu_info result
# * flash_attn_gate(gpus, flash_attn_major) -> {ok, status, skipped, message, ...}
# * tensor_parallel_check(gpus_or_count, tensor_parallel_size) -> {ok, status, skipped, message, ...}

import os
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import read_text
from ansible_collections.inference.gpu_host.plugins.module_utils._common.inputs import path_option_error

QUERY_FIELDS = ("index", "name", "uuid", "compute_cap", "driver_version", "memory.total")
QUERY_ARGS = ("--query-gpu=%s" % ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits")

# Minimum compute capability per flash-attn major: flash-attn 2 supports Ampere and
# newer (SM 8.0+), flash-attn 3 and 4 (FlashAttention-3 / the CuTe-DSL flash-attn-4)
# need Hopper or newer (SM 9.0+).
FLASH_ATTN_MIN_CC = {2: (8, 0), 3: (9, 0), 4: (9, 0)}

# nvidia-smi exit codes are NVML return codes (nvmlReturn_t).
RC_NOT_FOUND = 6            # NVML_ERROR_NOT_FOUND: "No devices were found"
RC_DRIVER_NOT_LOADED = 9    # NVML_ERROR_DRIVER_NOT_LOADED
RC_LIB_NOT_FOUND = 12       # NVML_ERROR_LIBRARY_NOT_FOUND
RC_MISMATCH = 18            # NVML_ERROR_LIB_RM_VERSION_MISMATCH

_NA_VALUES = ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]")

_CC_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_HEADER_SMI_RE = re.compile(r"NVIDIA-SMI(?: version)?\s*:?\s*(\d+(?:\.\d+)+)")
_HEADER_DRIVER_RE = re.compile(r"Driver Version\s*:\s*(\d+(?:\.\d+)+)", re.IGNORECASE)
_HEADER_CUDA_RE = re.compile(r"CUDA Version\s*:\s*(\d+(?:\.\d+)+|N/A|Not Found)", re.IGNORECASE)
_NVML_LIB_RE = re.compile(r"NVML library version:\s*(\d+(?:\.\d+)+)")
_KMOD_RE = re.compile(r"NVRM version:.*?Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)")
_DEV_LINE_RE = re.compile(r"^\s*(\d+)\s+(\S.*?)\s*$")


class GpuFactsError(ValueError):
    """A GPU fact could not be read; the message names the input and what was expected."""


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse_compute_capability(text, source="compute_cap"):
    """'8.6' -> (8, 6). Raises GpuFactsError for anything else."""
    match = _CC_RE.match(text or "")
    if not match:
        raise GpuFactsError("%s: expected a compute capability like '8.6' or '10.0', got %r" % (source, text))
    return int(match.group(1)), int(match.group(2))


def _na(value):
    return value.strip() in _NA_VALUES


def parse_query_gpu(text, source="nvidia-smi --query-gpu output"):
    """Parse the csv,noheader,nounits output of QUERY_FIELDS into GPU dicts.

    Each GPU: index (int), name, uuid, compute_capability ("8.6", or None when
    nvidia-smi says [N/A]), compute_capability_major / _minor (ints or None),
    driver_version, memory_total_mib (int or None).
    """
    gpus = []
    for lineno, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(QUERY_FIELDS):
            raise GpuFactsError(
                "%s line %d: expected %d comma-separated fields (%s), got %d: %r"
                % (source, lineno, len(QUERY_FIELDS), ",".join(QUERY_FIELDS), len(fields), line))
        index, name, uuid, cc_text, driver, memory = fields
        if not index.isdigit():
            raise GpuFactsError("%s line %d: expected a GPU index (integer) first, got %r" % (source, lineno, index))
        if _na(cc_text):
            cc_major = cc_minor = cc = None
        else:
            cc_major, cc_minor = parse_compute_capability(cc_text, "%s line %d compute_cap" % (source, lineno))
            cc = "%d.%d" % (cc_major, cc_minor)
        if _na(memory):
            memory_mib = None
        else:
            # nounits prints a bare MiB count; tolerate a " MiB" suffix (csv without nounits).
            mem = memory.split()[0] if memory.split() else memory
            if not mem.isdigit():
                raise GpuFactsError("%s line %d: expected memory.total in MiB (integer), got %r" % (source, lineno, memory))
            memory_mib = int(mem)
        gpus.append({
            "index": int(index),
            "name": name,
            "uuid": uuid,
            "compute_capability": cc,
            "compute_capability_major": cc_major,
            "compute_capability_minor": cc_minor,
            "driver_version": None if _na(driver) else driver,
            "memory_total_mib": memory_mib,
        })
    return gpus


def parse_cuda_version(text):
    """CUDA version from plain nvidia-smi or nvidia-smi --version; None if absent or 'N/A'."""
    match = _HEADER_CUDA_RE.search(text or "")
    if not match or not match.group(1)[0].isdigit():
        return None
    return match.group(1)


def parse_smi_header(text):
    """{smi_version, driver_version, cuda_version} from plain nvidia-smi (or --version) output."""
    smi = _HEADER_SMI_RE.search(text or "")
    driver = _HEADER_DRIVER_RE.search(text or "")
    return {
        "smi_version": smi.group(1) if smi else None,
        "driver_version": driver.group(1) if driver else None,
        "cuda_version": parse_cuda_version(text),
    }


def classify_failure(output, rc):
    """Recognise a failed nvidia-smi run. None when rc is 0 and nothing failed.

    Returns {kind, reason, nvml_library_version}; kind is one of no_driver,
    mismatch, no_devices, library_not_found, no_compute_cap, failed.
    """
    text = output or ""
    nvml = _NVML_LIB_RE.search(text)
    nvml_version = nvml.group(1) if nvml else None
    if "Driver/library version mismatch" in text or rc == RC_MISMATCH:
        kind = "mismatch"
    elif "couldn't communicate with the NVIDIA driver" in text or rc == RC_DRIVER_NOT_LOADED:
        kind = "no_driver"
    elif ("No devices were found" in text or "No supported GPUs were found" in text
          or rc == RC_NOT_FOUND):
        kind = "no_devices"
    elif "NVML Shared Library Not Found" in text or rc == RC_LIB_NOT_FOUND:
        kind = "library_not_found"
    elif re.search(r'Field "compute_cap" is not a valid field', text):
        kind = "no_compute_cap"
    elif rc:
        kind = "failed"
    else:
        return None
    return {"kind": kind, "reason": failure_reason(kind, text, nvml_version, rc=rc), "nvml_library_version": nvml_version}


def failure_reason(kind, output="", nvml_library_version=None, kernel_module_version=None, path=None, rc=None):
    """One sentence a person can act on, for a failure kind of classify_failure (or 'not_found')."""
    said = _first_line(output)
    said = " (nvidia-smi said: %r)" % said if said else ""
    if kind == "not_found":
        where = "at %s" % path if path else "on PATH"
        return ("nvidia-smi was not found %s: no NVIDIA userspace driver is installed on this host "
                "(or nvidia_smi_path points elsewhere)" % where)
    if kind == "no_driver":
        return ("nvidia-smi could not communicate with the NVIDIA driver: the nvidia kernel module is not "
                "loaded or not built for the running kernel%s" % said)
    if kind == "mismatch":
        return ("NVIDIA driver/library version mismatch: the kernel module is %s (/proc/driver/nvidia/version) "
                "but the userspace NVML library is %s; install the userspace driver that matches the kernel "
                "module (in an LXC container: without the kernel module), or reboot the node into the new "
                "module" % (kernel_module_version or "unknown", nvml_library_version or "unknown"))
    if kind == "no_devices":
        return ("the NVIDIA driver is loaded but nvidia-smi found no GPU%s; in an LXC container check that the "
                "/dev/nvidiaN nodes are passed through and allowed by the devices cgroup" % said)
    if kind == "library_not_found":
        return "nvidia-smi could not load the NVML library (libnvidia-ml.so)%s" % said
    if kind == "no_compute_cap":
        return ("this nvidia-smi is too old to report the compute_cap query field%s; upgrade the NVIDIA "
                "driver" % said)
    return "nvidia-smi failed%s%s" % (" with exit code %s" % rc if rc is not None else "", said)


def parse_kernel_module_version(text, source="/proc/driver/nvidia/version"):
    """'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ...' -> '580.159.04'."""
    match = _KMOD_RE.search(text or "")
    if not match:
        raise GpuFactsError("%s: expected a line 'NVRM version: NVIDIA UNIX ... Kernel Module  <version>', got %r"
                            % (source, _first_line(text)))
    return match.group(1)


def parse_gpu_information(text, source="/proc/driver/nvidia/gpus/<bus>/information"):
    """One GPU's information file -> {model, uuid, bus_location, device_minor (int)}."""
    fields = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if "Device Minor" not in fields or not fields["Device Minor"].isdigit():
        raise GpuFactsError("%s: expected a 'Device Minor: <n>' line" % source)
    return {
        "model": fields.get("Model"),
        "uuid": fields.get("GPU UUID"),
        "bus_location": fields.get("Bus Location"),
        "device_minor": int(fields["Device Minor"]),
    }


def parse_proc_devices(text, source="/proc/devices"):
    """/proc/devices -> {"character": [(major, name)], "block": [(major, name)]}, in file order."""
    result = {"character": [], "block": []}
    section = None
    for lineno, line in enumerate((text or "").splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "Character devices:":
            section = "character"
            continue
        if stripped == "Block devices:":
            section = "block"
            continue
        match = _DEV_LINE_RE.match(line)
        if section is None or not match:
            raise GpuFactsError("%s line %d: expected 'Character devices:', 'Block devices:' or '<major> <name>', "
                                "got %r" % (source, lineno, line))
        result[section].append((int(match.group(1)), match.group(2)))
    if not result["character"]:
        raise GpuFactsError("%s: no 'Character devices:' section with entries" % source)
    return result


def nvidia_char_majors(proc_devices):
    """{name: major} for every character device whose name starts with 'nvidia'."""
    majors = {}
    for major, name in proc_devices["character"]:
        if name.startswith("nvidia"):
            majors.setdefault(name, major)
    return majors


def nvidia_char_devices(text, source="/proc/devices"):
    """The NVIDIA character device names of a /proc/devices ``text``, in file order (lxc_state.node_devices)."""
    return list(nvidia_char_majors(parse_proc_devices(text, source)))


def char_major_registered(proc_devices, major):
    return any(m == major for m, _name in proc_devices["character"])


def gpu_facts(query_output, query_rc, smi_output=None, smi_rc=None, kernel_module_text=None, nvidia_smi_path=None):
    """Everything nvidia_gpu_info returns, from captured outputs.

    query_rc None means nvidia-smi was not found (query_output is then ignored).
    Never raises for a host without NVIDIA: that is an empty ``gpus`` and a ``reason``.
    """
    kernel_module_version = None
    if kernel_module_text:
        try:
            kernel_module_version = parse_kernel_module_version(kernel_module_text)
        except GpuFactsError:
            kernel_module_version = None
    facts = {
        "gpus": [],
        "gpu_count": 0,
        "driver_version": None,
        "cuda_version": None,
        "kernel_module_version": kernel_module_version,
        "nvml_library_version": None,
        "failure": "",
        "reason": "",
    }
    if query_rc is None:
        facts["failure"] = "not_found"
        facts["reason"] = failure_reason("not_found", path=nvidia_smi_path)
        return facts
    header = parse_smi_header(smi_output or "") if smi_output and not smi_rc else None
    failure = classify_failure(query_output, query_rc)
    if failure is None:
        try:
            gpus = parse_query_gpu(query_output)
        except GpuFactsError as exc:
            failure = {"kind": "failed", "reason": "could not read nvidia-smi's output: %s" % exc,
                       "nvml_library_version": None}
            gpus = []
    else:
        gpus = []
    if failure:
        facts["failure"] = failure["kind"]
        facts["nvml_library_version"] = failure["nvml_library_version"]
        if failure["kind"] == "mismatch":
            facts["reason"] = failure_reason("mismatch", query_output, failure["nvml_library_version"], kernel_module_version)
        else:
            facts["reason"] = failure["reason"]
        return facts
    facts["gpus"] = gpus
    facts["gpu_count"] = len(gpus)
    facts["driver_version"] = (gpus[0]["driver_version"] if gpus else None) or (header or {}).get("driver_version")
    facts["cuda_version"] = (header or {}).get("cuda_version")
    if not gpus:
        facts["failure"] = "no_devices"
        facts["reason"] = failure_reason("no_devices")
    return facts


def run_nvidia_smi(run_command, smi):
    """(query_output, query_rc, smi_output, smi_rc) of ``smi`` run as gpu_facts() reads it, through a module's
    run_command; all None when ``smi`` is None. The plain ``nvidia-smi`` table only after a query that worked.
    Plain text in the C locale: the parsers read English messages."""
    query_out = query_rc = smi_out = smi_rc = None
    if smi:
        env = dict(LC_ALL="C", LANG="C")
        query_rc, query_out, query_err = run_command([smi] + list(QUERY_ARGS), environ_update=env)
        query_out = (query_out or "") + (query_err or "")
        if query_rc == 0:
            smi_rc, smi_out, _smi_err = run_command([smi], environ_update=env)
    return query_out, query_rc, smi_out, smi_rc


MAX_VERSION_FILE_SIZE = 64 * 1024  # /proc/driver/nvidia/version is one or two lines
KERNEL_MODULE_VERSION_PATH = "/proc/driver/nvidia/version"


def read_gpu_facts(module, nvidia_smi_path=None, kernel_module_version_path=KERNEL_MODULE_VERSION_PATH):
    """gpu_facts() of this host, through a module (its get_bin_path and run_command): what
    nvidia_gpu_info returns, also read by base_host_state so that base needs one round trip.
    ``nvidia_smi_path`` given and not executable reads as nvidia-smi not found."""
    if nvidia_smi_path:
        found = nvidia_smi_path if os.path.isfile(nvidia_smi_path) and os.access(nvidia_smi_path, os.X_OK) else None
    else:
        found = module.get_bin_path("nvidia-smi", opt_dirs=["/usr/bin", "/usr/local/bin", "/usr/sbin"])
    query_out, query_rc, smi_out, smi_rc = run_nvidia_smi(module.run_command, found)
    facts = gpu_facts(query_out, query_rc, smi_out, smi_rc,
                      kernel_module_text=read_text(kernel_module_version_path, MAX_VERSION_FILE_SIZE) or None,
                      nvidia_smi_path=nvidia_smi_path)
    facts["nvidia_smi_path"] = found
    return facts


def gpu_info(module):
    """The nvidia_gpu_info module's run: (result, failure message or None).

    Options no host could satisfy fail before anything runs (result empty); a gate that cannot be computed
    fails with the facts read so far."""
    params = module.params
    error = path_option_error(params, ("nvidia_smi_path", "kernel_module_version_path"))
    tp = params["tensor_parallel_size"]
    if error is None and tp is not None and tp < 1:
        error = "tensor_parallel_size: expected a positive integer, got %r" % (tp,)
    if error:
        return {}, error
    facts = read_gpu_facts(module, params["nvidia_smi_path"], params["kernel_module_version_path"])
    try:
        if params["flash_attn_major"] is not None:
            facts["flash_attn_gate"] = flash_attn_gate(facts["gpus"], params["flash_attn_major"])
        if params["tensor_parallel_size"] is not None:
            facts["tensor_parallel"] = tensor_parallel_check(facts["gpus"], params["tensor_parallel_size"])
    except GpuFactsError as exc:
        return facts, str(exc)
    return facts, None


def _gpu_label(gpu):
    return "GPU %s (%s, compute capability %s)" % (gpu.get("index"), gpu.get("name"), gpu.get("compute_capability") or "unknown")


def flash_attn_gate(gpus, flash_attn_major):
    """May flash-attn <flash_attn_major> be installed for these GPUs?

    Returns {ok, status, skipped, message, flash_attn_major, min_compute_capability, refused}:
    status 'ok' (every GPU meets the minimum), 'refused' (message names each GPU that
    does not, with its compute capability) or 'skipped' (no GPU: nothing to check;
    ok is True, skipped True, so a GPU-less test host or a first check-mode run can
    proceed deliberately). A GPU whose compute capability is unknown is refused.
    """
    try:
        major = int(flash_attn_major)
    except (TypeError, ValueError):
        raise GpuFactsError("flash_attn_major: expected one of %s, got %r" % (sorted(FLASH_ATTN_MIN_CC), flash_attn_major))
    if major not in FLASH_ATTN_MIN_CC:
        raise GpuFactsError("flash_attn_major: expected one of %s, got %r" % (sorted(FLASH_ATTN_MIN_CC), flash_attn_major))
    need = FLASH_ATTN_MIN_CC[major]
    need_text = "%d.%d" % need
    result = {"flash_attn_major": major, "min_compute_capability": need_text, "refused": []}
    if not gpus:
        result.update(ok=True, status="skipped", skipped=True,
                      message="skipped: no GPU on this host, so the flash-attn %d gate (needs SM >= %s) was not checked"
                      % (major, need_text))
        return result
    refused = []
    for gpu in gpus:
        cc_major, cc_minor = gpu.get("compute_capability_major"), gpu.get("compute_capability_minor")
        if cc_major is None or cc_minor is None or (cc_major, cc_minor) < need:
            refused.append(gpu)
    if refused:
        result.update(ok=False, status="refused", skipped=False, refused=[
            {"index": g.get("index"), "name": g.get("name"), "compute_capability": g.get("compute_capability")}
            for g in refused])
        result["message"] = "flash-attn %d needs compute capability >= %s (SM %s), but %s %s below it" % (
            major, need_text, need_text.replace(".", ""), "; ".join(_gpu_label(g) for g in refused),
            "is" if len(refused) == 1 else "are")
        return result
    result.update(ok=True, status="ok", skipped=False,
                  message="flash-attn %d is supported: every GPU has compute capability >= %s (%s)"
                  % (major, need_text, ", ".join(_gpu_label(g) for g in gpus)))
    return result


def tensor_parallel_check(gpus_or_count, tensor_parallel_size):
    """Does tensor_parallel_size fit the GPUs? ok when 1 <= tp <= GPU count.

    Accepts a GPU list or a count. No GPU: status 'skipped' (ok True) as in flash_attn_gate.
    """
    count = gpus_or_count if isinstance(gpus_or_count, int) else len(gpus_or_count or [])
    if isinstance(tensor_parallel_size, bool):
        raise GpuFactsError("tensor_parallel_size: expected a positive integer, got %r" % (tensor_parallel_size,))
    try:
        tp = int(tensor_parallel_size)
    except (TypeError, ValueError):
        raise GpuFactsError("tensor_parallel_size: expected a positive integer, got %r" % (tensor_parallel_size,))
    if tp < 1:
        raise GpuFactsError("tensor_parallel_size: expected a positive integer, got %r" % (tensor_parallel_size,))
    result = {"tensor_parallel_size": tp, "gpu_count": count}
    if count == 0:
        result.update(ok=True, status="skipped", skipped=True,
                      message="skipped: no GPU on this host, so tensor_parallel_size %d was not checked" % tp)
    elif tp > count:
        result.update(ok=False, status="refused", skipped=False,
                      message="tensor_parallel_size %d needs %d GPUs, but this host has %d" % (tp, tp, count))
    else:
        result.update(ok=True, status="ok", skipped=False,
                      message="tensor_parallel_size %d fits the %d GPU%s of this host" % (tp, count, "" if count == 1 else "s"))
    return result
