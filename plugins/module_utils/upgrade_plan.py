# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What moving a host from the installed vLLM to the one a new lock pins would change, before it changes.

Everything comes from the versions table (vllm_versions.py), the new lock and the drafter's config.json record;
nothing here reads the host. Public API:

* upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
  venv_bytes=None, free_bytes=None, unit=None, lock_name="the new lock") -> dict (see its docstring)
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils import dflash, venv_lock, vllm_versions

__all__ = ["UpgradePlanError", "upgrade_plan", "COMPARED"]

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


class UpgradePlanError(ValueError):
    """The inputs cannot make a plan (a lock without the vLLM pin, a bad version)."""


def _pins(lock_text, lock_name):
    try:
        reqs = venv_lock.parse_lock_text(lock_text, lock_name)
    except venv_lock.VenvLockError as exc:
        raise UpgradePlanError(str(exc))
    return dict((r["name"], r["version"]) for r in reqs if r["version"])


def _ids(config, new_version, policy):
    record = dflash.recorded_ids_state(config)
    if record is None:
        return None
    trained = record.get("dflash_target_layer_ids")
    written_now = (config.get("dflash_config") or {}).get("target_layer_ids")
    layers = config.get("num_target_layers")
    try:
        after = dflash.apply_layer_id_policy(trained, layers, new_version, policy) \
            if record.get("format", dflash.FORMAT_DFLASH) == dflash.FORMAT_DFLASH else {"ids": written_now}
        logged = vllm_versions.logged_layers(after["ids"], new_version)
    except (dflash.DflashConfigError, vllm_versions.VllmVersionError) as exc:
        return {"trained": trained, "written_now": written_now, "written_after": None, "problem": str(exc)}
    return {"trained": trained, "written_now": written_now, "written_after": after["ids"], "captured_after": logged,
            "rewritten": after["ids"] != written_now, "problem": None}


def upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
                 venv_bytes=None, free_bytes=None, unit=None, lock_name="the new lock"):
    """The plan of moving from vLLM ``installed`` (a version, or None when the venv has none) to ``lock_text``'s.

    ``drafter_config``: the drafter's parsed config.json (None when absent); ``venv_bytes``: the serving venv's
    size (the new one needs about as much); ``free_bytes``: free space where it will be built; ``unit``: the
    service that restarts.
    Returns {"installed", "target", "distribution", "changes" [{key, what, from, to}], "entry_point" {from, to},
    "ids" (None without a drafter record), "known_problems", "restarts", "disk" {venv_bytes, free_bytes, needed_bytes,
    enough}, "summary" [lines]}.
    """
    pins = _pins(lock_text, lock_name)
    target = pins.get(distribution)
    if not target:
        raise UpgradePlanError("%s pins no %s==X.Y.Z: it is not a lock for this distribution" % (lock_name, distribution))
    try:
        new = vllm_versions.behaviour(target)
        old = vllm_versions.behaviour(installed) if installed else None
        layer_types = drafter_config.get("layer_types") if isinstance(drafter_config, dict) else None
        problems = vllm_versions.known_problems(target, distribution, layer_types)
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
    summary += ["known problem (%s): %s" % (p["severity"], p["message"]) for p in problems]
    if restarts:
        summary.append("restarts: %s" % ", ".join(restarts))
    if needed is not None:
        summary.append("disk: the new venv needs about %.1f GB%s" % (
            needed / 1e9, "" if free_bytes is None else ", %.1f GB free (%s)" % (
                free_bytes / 1e9, "enough" if disk["enough"] else "NOT enough")))
    return {"installed": installed, "target": target, "distribution": distribution, "changes": changes,
            "entry_point": {"from": entry_old, "to": entry_new}, "ids": ids, "known_problems": problems,
            "restarts": restarts, "disk": disk, "summary": summary}
