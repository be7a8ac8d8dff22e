# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What a run of the `vllm_service` role must change, decided on the controller (filter vllm_service_plan).

``plan`` compares the host's state (module vllm_service_host_state, service_state.py) with the files the role
renders on the controller and names only the work left, so that a run with nothing to change makes no other round
trip but the readiness probe. Where it cannot tell (a symbolic mode, an unknown unit state), it leaves the task to
run and the task decides.

Apart from service_state.py, whose host-side imports (the log reader, the probe, the DFlash rules, the versions
table) this file does not need: each task's worker process compiles a collection's module_utils again when a filter
imports it (BENCHMARKS.md, issue 28).

Public API (stdlib only): plan(state, wanted), file_changed, dir_changed, port_check, start_needed.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import sha256_text

_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_RUNNING = ("active", "activating")


class VllmServicePlanError(Exception):
    """The state or the wanted files are not what the role passes."""


def _mode_matches(have, want):
    want = str(want)
    if not _OCTAL_MODE.match(want) or not isinstance(have, str) or not _OCTAL_MODE.match(have):
        return False  # symbolic, or unknown: let the task decide
    return int(have, 8) == int(want, 8)


def file_changed(state, want):
    """Whether a copy of want["content"] with want's owner, group and mode would change the file."""
    if not isinstance(want, dict) or not isinstance(want.get("content"), str):
        raise VllmServicePlanError("vllm_service_plan: a file needs its content as a string, got %.80r"
                                   % (sorted(want) if isinstance(want, dict) else want,))
    state = state or {}
    return not (state.get("exists") and not state.get("isdir")
                and state.get("sha256") == sha256_text(want["content"])
                and state.get("owner") == str(want.get("owner", "root"))
                and state.get("group") == str(want.get("group", "root"))
                and _mode_matches(state.get("mode"), want.get("mode", "")))


def dir_changed(state, want):
    state = state or {}
    return not (state.get("exists") and state.get("isdir")
                and state.get("owner") == str(want.get("owner", "root"))
                and state.get("group") == str(want.get("group", "root"))
                and _mode_matches(state.get("mode"), want.get("mode", "")))


def port_check(state):
    """(ok, listener): the port is free, or its listener runs in the unit's control group."""
    port = state.get("port") or {}
    listener = (port.get("listener") or "").strip()
    cgroup = (state.get("unit") or {}).get("ControlGroup") or ""
    if not listener:
        return True, ""
    return bool(cgroup) and cgroup in (port.get("listener_cgroup") or ""), listener


def start_needed(state, enabled, pending):
    """Whether systemd_service (state=started, enabled=...) could change anything.

    Not when nothing is pending and the unit runs (or starts) and is enabled as wanted; an
    unknown UnitFileState (static, linked, ...) leaves it to the module.
    """
    unit = state.get("unit") or {}
    want = "enabled" if enabled else "disabled"
    return bool(pending) or unit.get("ActiveState") not in _RUNNING or unit.get("UnitFileState") != want


FILES = ("unit", "env", "record")
DIRS = ("env_dir",)


def plan(state, wanted):
    """What a run must do, from the host's state (module) and the files the role renders.

    wanted: any of unit, env, record ({content, owner, group, mode}), env_dir ({owner, group,
    mode}), enabled (vllm_service_enabled), rollback ({enabled: vllm_service_rollback, and
    serve.rollback_items' other arguments}: what a rollback of this run puts back, "rollback_items").
    Only the keys given are decided; the result names no content (the environment file's secrets stay
    on the controller).
    """
    if not isinstance(state, dict) or "files" not in state or "unit" not in state:
        raise VllmServicePlanError("vllm_service_plan: expected the result of "
                                   "inference.gpu_host.vllm_service_host_state, got %.80r" % (state,))
    if not isinstance(wanted, dict):
        raise VllmServicePlanError("vllm_service_plan: wanted must be a mapping, got %.80r" % (wanted,))
    files = state["files"] or {}
    out = {}
    for key in FILES:
        if key in wanted:
            out[key + "_changed"] = file_changed(files.get(key), wanted[key])
    for key in DIRS:
        if key in wanted:
            out[key + "_changed"] = dir_changed(files.get(key), wanted[key])
    out["pending"] = bool(out.get("unit_changed") or out.get("env_changed"))
    if "enabled" in wanted:
        out["start_needed"] = start_needed(state, wanted["enabled"], out["pending"])
    out["port_ok"], out["listener"] = port_check(state)
    out["rollback_copies"] = list(state.get("rollback_copies") or [])
    if "rollback" in wanted:
        out["rollback_items"] = rollback_items(out["pending"], wanted["rollback"])
    return out


def rollback_items(pending, rollback):
    """serve.rollback_items of a run whose unit or environment changes (``pending``) with rollback enabled, from the
    plan's ``rollback`` mapping (enabled, unit_path, env_path, generation, files, serving_dir)."""
    # Imported here: the record's plan (no rollback) stays as light as it was.
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import serve
    if not isinstance(rollback, dict) or "enabled" not in rollback:
        raise VllmServicePlanError("vllm_service_plan: rollback must be a mapping with enabled, got %.80r" % (rollback,))
    items = plain(rollback)
    enabled = items.pop("enabled")
    try:
        return serve.rollback_items(bool(pending) and enabled, **items)
    except serve.VllmServeError as exc:
        raise VllmServicePlanError("vllm_service_plan: %s" % exc)
