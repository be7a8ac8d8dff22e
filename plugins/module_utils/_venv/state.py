# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `python_env` role's state of a host, read in one module call, and whether a run has work left.

``read_generations`` and ``read_state`` run on the host (modules venv_generation and python_env_host_state):
the venv link and its generations, the installer, the Python, the wanted generation's lock files, the venv
against its lock (exactly), flash_attn's owners, the installed vLLM and the role's record.
``decide`` runs on the controller (filter python_env_plan): a run whose host already is what the variables ask
for has nothing left to do, so it skips every install, check and write (docs/generations.md). It says
``settled`` only when every step would change nothing; anything it cannot tell leaves the steps to run.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import errno
import json
import os

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import path_state, read_record, read_text
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    COMPLETE_FILE, FAILED_FILE, STATE_SUBDIR, GenerationError, adopted_name, check_venv, generation_name, generations_dir,
    in_use_generations, plan, requirement_lines, scan)
# The venv's packages, flash_attn's owners and the installed vLLM are read on the host only (read_state imports
# them): the python_env_plan filter, which imports this file in each task's worker on the controller, does not
# compile them (BENCHMARKS.md, issue 37).

# How the role makes its directories (venv.yml says the same).
ROLE_DIR = {"owner": "root", "group": "root", "mode": "0755"}


class PythonEnvStateError(ValueError):
    """Bad input or a host state the role cannot work with (the message names it)."""


# ---------------------------------------------------------------- host side

def pyvenv_version(venv):
    """The Python version a venv was made with, from its pyvenv.cfg (uv: version_info, venv: version)."""
    for line in read_text(os.path.join(venv, "pyvenv.cfg")).splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("version_info", "version"):
            return value.strip()
    return ""


def layout(venv_dir):
    """("absent" | "link" | "dir" | "other", the link's resolved target)."""
    try:
        os.lstat(venv_dir)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return "absent", ""
        raise
    if os.path.islink(venv_dir):
        return "link", os.path.realpath(venv_dir)
    if os.path.isdir(venv_dir):
        return "dir", ""
    return "other", ""


def list_generations(gens):
    """The marked generations of ``gens`` (venv_generations.scan; a symlinked ``gens`` is refused)."""
    return scan(gens)["generations"]


def free_bytes(path):
    while path and not os.path.isdir(path):
        path = os.path.dirname(path)
    st = os.statvfs(path or "/")
    return st.f_bavail * st.f_frsize


def cmdlines():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                yield [a.decode("utf-8", "replace") for a in handle.read(8192).split(b"\0")[:2]]
        except (IOError, OSError):
            continue


def failed_record(wanted_dir):
    """A generation's failed.json (written when its server failed readiness) as a dict, or None."""
    text = read_text(os.path.join(wanted_dir, STATE_SUBDIR, FAILED_FILE))
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = {}
    return record if isinstance(record, dict) else {}


def read_generations(venv_dir, requirements, python_version, keep, free_gib, retry_failed):
    """What venv_generations.plan decides for this host, plus wanted, in_use, failed_record, layout and target.

    Raises GenerationError (bad settings, a venv_dir that is neither a link nor a directory) or OSError.
    """
    gens = generations_dir(venv_dir)
    wanted = generation_name(requirements, python_version)
    # First: a symlinked generations directory is refused before anything is read through it.
    entries = scan(gens)
    found, target = layout(venv_dir)
    adopt_as, not_a_venv = "", []
    if found == "dir":
        not_a_venv = check_venv(venv_dir)
        if not not_a_venv:
            adopt_as = adopted_name(read_text(os.path.join(venv_dir, STATE_SUBDIR, "expected.txt")),
                                    pyvenv_version(venv_dir), os.stat(venv_dir).st_mtime)
    wanted_dir = os.path.join(gens, wanted)
    in_use = in_use_generations(gens, cmdlines())
    failed = failed_record(wanted_dir)
    decided = plan(venv_dir, found, target, entries["generations"], wanted, keep, free_bytes(gens), free_gib,
                   adopt_as=adopt_as, wanted_complete=os.path.isfile(os.path.join(wanted_dir, STATE_SUBDIR, COMPLETE_FILE)),
                   wanted_failed=failed, retry_failed=retry_failed, in_use=in_use, not_a_venv=not_a_venv)
    return dict(decided, wanted=wanted, in_use=in_use, failed_record=failed, layout=found, target=target,
                ignored=entries["ignored"])


def read_state(venv_dir, requirements, lock, python, python_version, keep, free_gib, retry_failed,
               keep_packages=(), flash_attn=False, record=None, state_subdir=STATE_SUBDIR, uv=None, uv_version="",
               uv_cache_dir=None, expected=None):
    """Everything the role reads on a run with nothing to change. Read-only.

    python_version: the version ``python`` printed (the module runs it); uv_version the first word after
    ``uv`` that ``uv --version`` printed ("" when uv is not used or absent). expected: expected.txt as the
    role writes it (rendered on the controller); its requirement lines are compared.
    """
    gen = read_generations(venv_dir, requirements, python_version, keep, free_gib, retry_failed)
    wanted_dir = gen["wanted_dir"]
    state_dir = os.path.join(wanted_dir, state_subdir)
    out = {
        "python": python, "python_version": python_version, "uv": uv or "", "uv_version": uv_version,
        "generation": gen,
        "paths": {"uv_cache_dir": path_state(uv_cache_dir) if uv_cache_dir else {"exists": False},
                  "generations_dir": path_state(gen["generations_dir"]), "state_dir": path_state(state_dir)},
        "venv_python": os.path.exists(os.path.join(wanted_dir, "bin", "python")),
        "complete": os.path.isfile(os.path.join(state_dir, COMPLETE_FILE)),
        # The copy task writes the controller's file as it is; the file lookup drops trailing whitespace.
        "lock_same": read_text(os.path.join(state_dir, "lock.txt"), 1 << 24).rstrip() == lock.rstrip(),
        "expected_same": requirement_lines(read_text(os.path.join(state_dir, "expected.txt"), 1 << 24))
        == requirement_lines(requirements if expected is None else expected),
        "venv": {"in_sync": False}, "flash_attn": {"state": "unknown"}, "vllm": {"installed": False},
        "record": None, "record_warning": None, "record_prev": False,
    }
    if record:
        out["record"], out["record_warning"] = read_record(record)
        # A rollback copy left by a run stopped between python_env's switch and vllm_service (change.yml removes it).
        out["record_prev"] = os.path.lexists(record + ".prev")
    if not out["venv_python"] or not out["expected_same"]:
        return out
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_guard import (
        FlashAttnGuardError, inspect_venv)
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import VenvLockError, compare
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.installed import describe_installed
    try:
        found = compare(wanted_dir, os.path.join(state_dir, "expected.txt"), exact=True, keep=keep_packages)
        out["venv"] = {"in_sync": bool(found["in_sync"]),
                       "missing": [m["name"] for m in found["missing"]],
                       "mismatched": [m["name"] for m in found["differing"]],
                       "unexpected": [m["name"] for m in found["unexpected"]]}
    except VenvLockError as exc:
        out["venv"] = {"in_sync": False, "error": str(exc)}
    if flash_attn:
        try:
            seen = inspect_venv(wanted_dir, 2).as_dict()
            version = [o.get("version", "") for o in seen.get("owners", []) if o.get("name") == "flash-attn"]
            out["flash_attn"] = {"state": seen.get("state"), "version": version[0] if version else "",
                                 "damaged": len(seen.get("damaged") or [])}
        except FlashAttnGuardError as exc:
            out["flash_attn"] = {"state": "unreadable", "error": str(exc)}
    out["vllm"] = describe_installed(wanted_dir)
    return out


PYTHON_VERSION = "import platform; print(platform.python_version())"


def _host_state_problem(params):
    """The message for the first bad path option of python_env_host_state, or None."""
    for option in ("venv_dir", "record"):
        if not os.path.isabs(params[option]):
            return "%s must be an absolute path, got %r" % (option, params[option])
    if os.path.isabs(params["state_subdir"]) or ".." in params["state_subdir"].split("/"):
        return "state_subdir must be a path inside the generation, got %r" % (params["state_subdir"],)
    for option in ("uv", "uv_cache_dir"):
        if params[option] and not os.path.isabs(params[option]):
            return "%s must be an absolute path or empty, got %r" % (option, params[option])
    return None


def _versions(params, run_command):
    """(the Python's version, uv's version or ""), from running them; PythonEnvStateError when Python does not run."""
    try:
        rc, out, err = run_command([params["python"], "-c", PYTHON_VERSION], handle_exceptions=False)
    except OSError as exc:
        rc, out, err = None, "", str(exc)
    if rc != 0 or not out.strip():
        raise PythonEnvStateError("python_env_python=%s does not run (rc %s): %s"
                                  % (params["python"], rc, (err or out)[-500:]))
    uv_version = ""
    if params["uv"] and os.path.exists(params["uv"]):
        rc, out_uv, _err = run_command([params["uv"], "--version"])
        words = out_uv.split()
        uv_version = words[1] if rc == 0 and len(words) > 1 else ""
    return out.strip(), uv_version


# python_env_host_state's options (the module and host_state's python_env read validate against this one spec).
ARGUMENT_SPEC = dict(
    venv_dir=dict(type="path", required=True),
    requirements=dict(type="str", required=True),
    lock=dict(type="str", required=True, no_log=False),
    expected=dict(type="str"),
    python=dict(type="str", required=True),
    state_subdir=dict(type="str", default=".inference-gpu-host"),
    uv=dict(type="str", default=""),
    uv_cache_dir=dict(type="str", default=""),
    keep=dict(type="int", default=2),
    free_gib=dict(type="float", default=12),
    retry_failed=dict(type="bool", default=False),
    keep_packages=dict(type="list", elements="str", default=[], no_log=False),
    flash_attn=dict(type="bool", default=False),
    record=dict(type="path", required=True),
)


def host_state_step(params, run_command):
    """The python_env_host_state module's work, from its parameters: {"failed", "result", "warnings"}.

    run_command: AnsibleModule.run_command's shape (runs the Python and uv for their versions). Read-only.
    """
    p = params
    try:
        problem = _host_state_problem(p)
        if problem:
            raise PythonEnvStateError(problem)
        python_version, uv_version = _versions(p, run_command)
        state = read_state(p["venv_dir"].rstrip("/"), p["requirements"], p["lock"], p["python"], python_version,
                           p["keep"], p["free_gib"], p["retry_failed"], keep_packages=p["keep_packages"],
                           flash_attn=p["flash_attn"], record=p["record"], uv=p["uv"], uv_version=uv_version,
                           uv_cache_dir=p["uv_cache_dir"] or None, state_subdir=p["state_subdir"],
                           expected=p["expected"])
    except (PythonEnvStateError, GenerationError) as exc:
        return {"failed": True, "result": {"msg": str(exc)}, "warnings": []}
    except OSError as exc:
        return {"failed": True, "result": {"msg": "reading %s and its generations: %s" % (p["venv_dir"], exc)},
                "warnings": []}
    warning = state.pop("record_warning", None)
    return {"failed": False, "result": dict(state, changed=False), "warnings": [warning] if warning else []}


def module_result(module):
    """What python_env_host_state returns (and host_state's python_env read): the state, or module.fail_json."""
    outcome = host_state_step(module.params, module.run_command)
    for warning in outcome["warnings"]:
        module.warn(warning)
    if outcome["failed"]:
        module.fail_json(**outcome["result"])
    return outcome["result"]


# ---------------------------------------------------------------- controller side

def _dir_ok(state):
    return bool(state and state.get("exists") and state.get("isdir")
                and all(state.get(k) == v for k, v in ROLE_DIR.items()))


def wanted_record(state, wanted):
    """The record (local fact) a run writes when it switches nothing: wanted's fields, the generation's, and
    the previous generation the current record names."""
    gen = state.get("generation") or {}
    before = state.get("record") or {}
    record = dict(wanted.get("record") or {})
    record.update(generation=gen.get("wanted", ""), generation_dir=gen.get("wanted_dir", ""),
                  previous_generation_dir=before.get("previous_generation_dir", "") if isinstance(before, dict) else "")
    return record


def decide(state, wanted):
    """{"settled": bool, "reasons": [what is left to do], "flash_attn": why flash-attn 2 is or is not installed}.

    state: the result of python_env_host_state; wanted: installer ("uv" | "pip"), uv_version,
    flash_attn (bool: flash-attn 2 installed), flash_attn_guard (bool: the guard runs where it is not),
    flash_attn_reason (flash_attn_choice.choose's sentence, returned as "flash_attn"), flash_attn_version,
    record (the fields the role records, without the generation's).
    """
    if not isinstance(state, dict) or "generation" not in state:
        raise PythonEnvStateError("python_env_plan: expected the result of python_env_host_state, got %.80r" % (state,))
    if not isinstance(wanted, dict):
        raise PythonEnvStateError("python_env_plan: wanted must be a mapping, got %.80r" % (wanted,))
    gen = state["generation"]
    reasons = []

    def need(cond, why):
        if cond:
            reasons.append(why)

    if wanted.get("installer", "uv") == "uv":
        need(state.get("uv_version") != wanted.get("uv_version"),
             "uv %s wanted, found %s" % (wanted.get("uv_version"), state.get("uv_version") or "none"))
        need(not _dir_ok(state["paths"].get("uv_cache_dir")), "the uv cache directory")
    need(gen.get("adopt"), "adopt the plain venv at %s" % gen.get("wanted_dir"))
    need(gen.get("build"), "build generation %s" % gen.get("wanted"))
    need(gen.get("switch"), "switch to generation %s" % gen.get("wanted"))
    need(gen.get("refuse"), "a generation that failed readiness before")
    need(gen.get("retry"), "retry a generation that failed readiness before")
    need(bool(gen.get("prune")), "prune %s" % ", ".join(gen.get("prune") or []))
    need(not _dir_ok(state["paths"].get("generations_dir")), "the generations directory")
    need(not _dir_ok(state["paths"].get("state_dir")), "the generation's state directory")
    need(not state.get("venv_python"), "the venv's Python")
    need(not state.get("complete"), "the generation is not marked complete")
    need(not state.get("lock_same"), "the placed lock differs")
    need(not state.get("expected_same"), "the expected package set differs")
    venv = state.get("venv") or {}
    need(not venv.get("in_sync"), "the venv differs from its lock: %s" % ", ".join(
        venv.get("missing", []) + venv.get("mismatched", []) + venv.get("unexpected", [])) or venv.get("error", ""))
    fa = state.get("flash_attn") or {}
    if wanted.get("flash_attn"):
        need(fa.get("state") != "ok" or fa.get("version") != wanted.get("flash_attn_version") or fa.get("damaged"),
             "flash_attn is %s %s (damaged files: %s)" % (fa.get("state"), fa.get("version", ""), fa.get("damaged", 0)))
    elif wanted.get("flash_attn_guard"):
        # flash-attn 2 not installed here: only what the guard refuses or removes (flash-attn-4, leftovers) is work.
        need(fa.get("state") not in ("absent", "ok"), "flash_attn is %s: the flash-attn guard checks that nothing "
                                                      "else owns it (flash-attn 2 is not installed)" % fa.get("state"))
    need(not (state.get("vllm") or {}).get("installed"), "no vLLM readable in the venv")
    need(state.get("record") != wanted_record(state, wanted), "the record of what the venv holds")
    return {"settled": not reasons, "reasons": reasons, "flash_attn": wanted.get("flash_attn_reason") or ""}
