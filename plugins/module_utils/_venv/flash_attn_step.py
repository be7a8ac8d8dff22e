# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The flash_attn_guard module's work: the guard (flash_attn_guard.py), what a conflict means for the installed
vLLM and the compiled extension's ABI check (flash_attn_abi.py), put into the module's result and messages."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_abi import (
    ABI_PROBE, abi_verdict, vllm_impact)
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_guard import (
    FlashAttnGuardError, guard)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError


class _Failed(Exception):
    """Ends the step with a failed result."""

    def __init__(self, result):
        Exception.__init__(self, result.get("msg", ""))
        self.result = result


def _owners_text(view):
    lines = ["%s %s (%d files under flash_attn/)" % (o["name"], o["version"], o["files"]) for o in view["owners"]]
    lines += ["leftover %s" % path for path in view["leftovers"]]
    lines.append("state: %s" % view["state"])
    return "\n".join(lines) + "\n"


def _result(outcome, message, impact, diff):
    before, after = outcome["before"], outcome["after"]
    result = dict(
        changed=outcome["changed"], state=before["state"], state_after=after["state"], owners=before["owners"],
        owners_after=after["owners"], leftovers=before["leftovers"], rotary_owner=before["rotary_owner"],
        damaged=before["damaged"], problems=before["problems"], actions=outcome["actions"],
        site_packages=before["site_packages"], other_locations=before["other_locations"], msg=message,
        vllm_impact=impact)
    if diff:
        result["diff"] = dict(before=_owners_text(before), after=_owners_text(after),
                              before_header=before["site_packages"], after_header=after["site_packages"])
    return result


def _with_impact(message, impact):
    return "%s. Installed: %s" % (message.rstrip("."), impact["sentence"]) if impact["sentence"] else message


def _message(venv, outcome, impact, check_mode):
    before, after = outcome["before"], outcome["after"]
    if outcome["actions"]:
        return "%s %d action(s); flash_attn in venv %s: %s -> %s" % (
            "would take" if check_mode else "took", len(outcome["actions"]), venv, before["state"], after["state"])
    if before["state"] == "conflict":
        return _with_impact("flash_attn in venv %s is in conflict (policy report): %s"
                            % (venv, "; ".join(before["problems"])), impact)
    if before["state"] == "ok":
        rotary = before["rotary_owner"]
        return "flash_attn in venv %s is owned by %s %s alone, with flash_attn/ops/triton/rotary.py" % (
            venv, rotary["name"], rotary["version"])
    return "venv %s has no flash_attn package (vLLM runs without it)" % venv


def _abi_check(run_command, python, after, warnings):
    """Load flash-attn 2's compiled extension with the venv's torch: the verdict (a mismatch fails the caller)."""
    owner = after["rotary_owner"] or {}
    label = "%s %s" % (owner.get("name", "flash-attn"), owner.get("version", "?"))
    # -s: no user site-packages; cwd /: nothing in the working directory shadows the venv's packages.
    rc, out, err = run_command([python, "-s", "-c", ABI_PROBE], cwd="/", errors="replace")
    try:
        verdict = abi_verdict(out, label)
    except ValueError as exc:
        raise _Failed({"msg": "abi_check: %s (rc %s): %s; stderr: %s" % (python, rc, exc, err[-1000:])})
    if verdict["state"] == "unloadable":
        warnings.append(verdict["message"])
    return verdict


def _guard(params, check_mode, diff, impact):
    """guard() with the module's options; a refusal becomes a failed result (with the guard's view when it has one)."""
    try:
        return guard(params["venv"], params["policy"], params["expected_major"], check_mode)
    except FlashAttnGuardError as exc:
        if exc.result is None:
            raise _Failed({"msg": str(exc)})
        raise _Failed(_result(exc.result, _with_impact(str(exc), impact), impact, diff))


def guard_step(params, check_mode, diff, run_command):
    """The flash_attn_guard module's work, from its parameters: {"failed", "result", "warnings"}.

    run_command: AnsibleModule.run_command's shape (runs the venv's Python for the ABI check).
    """
    venv, warnings = params["venv"], []
    python = os.path.join(venv, "bin", "python")
    try:
        if params["abi_check"] and not os.path.exists(python):
            raise _Failed({"msg": "abi_check: venv must be the venv directory with bin/python, but %s does not exist"
                                  % python})
        try:
            impact = vllm_impact(params["vllm_version"], params["vllm_distribution"])
        except VllmVersionError as exc:
            raise _Failed({"msg": "vllm_version: %s" % exc})
        outcome = _guard(params, check_mode, diff, impact)
        after = outcome["after"]
        result = _result(outcome, _message(venv, outcome, impact, check_mode), impact, diff)
        if params["abi_check"] and after["state"] == "ok" and not (check_mode and outcome["actions"]):
            result["abi"] = _abi_check(run_command, python, after, warnings)
            if result["abi"]["state"] == "mismatch":
                result["msg"] = result["abi"]["message"]
                raise _Failed(result)
    except _Failed as failed:
        return {"failed": True, "result": failed.result, "warnings": warnings}
    if after["damaged"]:
        warnings.append("flash_attn in venv %s: %d file(s) of %s are missing or differ from its RECORD (e.g. %s); "
                        "reinstall it" % (venv, len(after["damaged"]), after["damaged"][0]["owner"],
                                          after["damaged"][0]["path"]))
    if after["other_locations"]:
        warnings.append("flash_attn also found through .pth files of venv %s, not managed here: %s"
                        % (venv, ", ".join(after["other_locations"])))
    return {"failed": False, "result": result, "warnings": warnings}
