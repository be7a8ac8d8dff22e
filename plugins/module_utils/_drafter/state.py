# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `drafter` role's state of a host, read in one module call, and what a run must change.

``read_host`` runs on the host (module drafter_host_state): the drafter directory, the weights
(a stat, never their bytes), the record of the last placement, the local facts, the target's
config.json, a host source, and whether dflash_drafter_config would change config.json (the
module's own derive-and-compare, derive.derive, without writing).
``plan`` runs on the controller (filter drafter_plan): it compares that with what the role's
variables ask for and names only the work left, so that a run with nothing to change makes
no other round trip. It skips a task only where the task itself would change nothing; when it
cannot tell (a symbolic mode, a derivation error the module will report), the task runs.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import json
import os
import pwd
import re
import stat

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import place_reason
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import read_record as _read_record
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import sha256_text, stat_path

RECORD_FILE = {"mode": "0644"}   # the placement record: drafter_owner/drafter_group, mode 0644
FACTS_FILE = {"owner": "root", "group": "root", "mode": "0644"}
DIR_MODE = "0755"
_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")


class DrafterStateError(Exception):
    """Bad input, with a message naming the variable and what was expected."""


def render_json(data):
    """Ansible's to_nice_json (indent 4, sorted keys, ASCII) plus the newline the role's copies add."""
    return json.dumps(data, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=True) + "\n"


# ---------------------------------------------------------------- host side

def read_record(path):
    """(record, warning): the last placement's record (a dict) or None when absent or unreadable, and why not."""
    return _read_record(path, "the weights are placed again")


def prev_copies(paths):
    """(copies, warnings): the rollback copies ``<path>.prev`` of ``paths`` that are regular files (not followed).

    The role keeps them (config.json and the local facts record) for vllm_service, which removes them once
    the new server is ready; a run stopped between the two leaves them behind. Only a regular file is
    reported, so the role removes nothing else: a link, a directory or a FIFO of that name is not the role's
    copy and is left alone, with a warning naming it.
    """
    copies, warnings = [], []
    for path in paths:
        if not path:
            continue
        copy = path + ".prev"
        try:
            mode = os.lstat(copy).st_mode
        except OSError:
            continue
        if copy in copies:
            continue
        if stat.S_ISREG(mode):
            copies.append(copy)
        else:
            warnings.append("%s is not a regular file, so it is not the drafter role's rollback copy: left alone"
                            % copy)
    return copies, warnings


def _id_matches(have_id, have_name, want, lookup):
    if want is None:
        return True
    want = str(want)
    if want.isdigit():
        return have_id == int(want)
    try:
        return have_id == lookup(want)[2]
    except KeyError:
        return have_name == want


def mode_matches(have, want):
    """Whether a file's octal mode string is ``want``; False when ``want`` is symbolic (the task decides)."""
    if want is None:
        return True
    if isinstance(want, int) and not isinstance(want, bool):
        return int(have, 8) == want
    want = str(want)
    if not _OCTAL_MODE.match(want):
        return False
    return int(have, 8) == int(want, 8)


def attrs_match(state, owner, group, mode):
    """Owner, group and mode of a stat_path() result against what a task sets (None: not set)."""
    return bool(state and state.get("exists")
                and _id_matches(state["uid"], state["owner"], owner, pwd.getpwnam)
                and _id_matches(state["gid"], state["group"], group, grp.getgrnam)
                and mode_matches(state["mode"], mode))


def _undecided(reason):
    return {"decided": False, "changed": None, "reason": reason, "result": None, "warnings": []}


def _derive():
    # The host side's (config_state, the state read): the controller's plan imports this file in a task's worker
    # process, where a collection's module_utils is compiled again, and needs neither the derivation nor the DFlash
    # rules (BENCHMARKS.md, issue 28).
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive
    return derive


def config_state(params, check_mode):
    """Whether dflash_drafter_config with these (validated) options would change config.json, and its result.

    ``params``: the module's options, ``drafter`` included. The module's own derive-and-compare
    (derive.derive), without writing. Returns decided, changed, result (what the module returns: config,
    format, derived, ids, profile, vllm, note, messages), warnings, and reason (why not decided: where the
    module would fail, or a symbolic mode; the module then runs and says it itself).
    """
    if not os.path.exists(params["drafter"]):
        return _undecided("no weights at %s" % params["drafter"])
    derive = _derive()
    try:
        found = derive.derive(params, check_mode)
    except derive.DestError as exc:
        return _undecided("dest %s is not a config.json the module replaces: %s" % (params["dest"], exc))
    except (derive.DrafterConfigError, IOError, OSError, ValueError) as exc:
        return _undecided(str(exc))
    dest = params["dest"]
    changed = found["before"] != found["text"].encode("utf-8")
    if not changed:
        mode = params["mode"]
        if mode is not None and not isinstance(mode, int) and not _OCTAL_MODE.match(str(mode)):
            return _undecided("mode %s is symbolic: the module decides" % mode)
        state = stat_path(dest)
        if not state.get("isreg"):
            return _undecided("dest %s is not a regular file" % dest)
        changed = not attrs_match(state, params["owner"], params["group"], mode)
    output = dict(found["result"], changed=changed)
    return {"decided": True, "changed": changed, "reason": None, "result": output, "warnings": output["messages"]}


def validate_config_options(options, drafter):
    """(params, problem): the options converted as the module's argument_spec would, or why they are not valid."""
    result = ArgumentSpecValidator(_derive().config_spec()).validate(dict(options or {}, drafter=drafter))
    if result.error_messages:
        return None, "; ".join(result.error_messages)
    return result.validated_parameters, None


HOST_PATHS = ("dest_dir", "weights", "record", "facts", "target_config", "source")


def _config_read(options, weights, check_mode, warnings):
    """(config, config_json_exists): the state read's ``config`` key, and whether dest exists."""
    if options is None:
        return {"decided": False, "changed": None, "reason": "no config options given", "result": None}, False
    params, problem = validate_config_options(options, weights)
    if problem:
        return {"decided": False, "changed": None, "reason": problem, "result": None}, False
    # In check mode as the module's own call: a pinned vLLM the venv does not have yet is a warning then.
    config = config_state(params, check_mode)
    if config["decided"]:
        # The module, which the role does not run where the read decided, would have said these.
        warnings.extend(config["warnings"])
    config.pop("warnings", None)
    return config, os.path.lexists(params["dest"])


# drafter_host_state's options (the module and host_state's drafter read validate against this one spec).
ARGUMENT_SPEC = dict(
    dest_dir=dict(type="path", required=True),
    weights=dict(type="path", required=True),
    record=dict(type="path", required=True),
    facts=dict(type="path", required=True),
    target_config=dict(type="path", required=True),
    source=dict(type="path"),
    config=dict(type="dict"),
)


def read_host(params, check_mode):
    """(result, warnings): drafter_host_state's job, from its options (see the module's RETURN)."""
    for option in HOST_PATHS:
        if params[option] is not None and not os.path.isabs(params[option]):
            raise DrafterStateError("%s must be an absolute path, got %r" % (option, params[option]))
    warnings = []
    record, warning = read_record(params["record"])
    if warning:
        warnings.append(warning)
    config, config_json = _config_read(params["config"], params["weights"], check_mode, warnings)
    # The rollback copies the role keeps of config.json and of the local facts (configure.yml).
    dest = (params["config"] or {}).get("dest")
    copies, copy_warnings = prev_copies([dest if isinstance(dest, str) and os.path.isabs(dest) else None,
                                         params["facts"]])
    warnings.extend(copy_warnings)
    result = dict(
        prev_copies=copies,
        dest_dir=stat_path(params["dest_dir"]),
        weights=stat_path(params["weights"]),
        source=stat_path(params["source"]) if params["source"] else None,
        record=record,
        record_file=stat_path(params["record"], content=True),
        facts=stat_path(params["facts"], content=True),
        target_config_exists=os.path.lexists(params["target_config"]),
        config_json_exists=config_json,
        config=config,
    )
    return result, warnings


def module_result(module):
    """What drafter_host_state returns (and host_state's drafter read): read_host's result, or module.fail_json."""
    try:
        result, warnings = read_host(module.params, module.check_mode)
    except DrafterStateError as exc:
        module.fail_json(msg=str(exc))
    for message in warnings:
        module.warn(message)
    return dict(result, changed=False)


# ---------------------------------------------------------------- controller side

def wanted_source(wanted, source_stat):
    """The record's view of the source (type, source, sha256, and the source file's size and mtime when known)."""
    kind = wanted["source_type"]
    if kind in ("host", "controller"):
        source = wanted["source_path"]
    elif kind == "url":
        source = wanted["source_url"]
    else:
        source = "%s@%s:%s" % (wanted["hf_repo_id"], wanted["hf_revision"], wanted["hf_filename"])
    out = {"type": kind, "source": source, "sha256": wanted["sha256"]}
    if kind in ("host", "controller") and source_stat and source_stat.get("exists"):
        out["size"] = source_stat["size"]
        out["mtime"] = source_stat["mtime"]
    return out


def local_facts(wanted, result):
    """The local fact the role writes (its one shape), from dflash_drafter_config's result; None if it cannot tell.

    ``wanted``: the role's wanted state (drafter_plan's); ``result``: what the module returned or would return.
    """
    config = result.get("config") or {}
    if "block_size" not in config:
        return None
    vllm = result.get("vllm")
    return {
        "dir": wanted["dest_dir"],
        "source": wanted_source(wanted, None)["source"],
        "sha256": wanted["sha256"],
        "dflash_target_layer_ids": result["dflash_target_layer_ids"],
        "target_layer_ids": result["target_layer_ids"],
        "written_for_vllm": vllm.get("version", "") if isinstance(vllm, dict) else "",
        "layer_id_policy": wanted["layer_id_policy"],
        "block_size": config["block_size"],
    }


def _render_config(config):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import render_config
    return render_config(config)


def _file_differs(state, text, owner, group, mode):
    return not (state and state.get("isreg") and state.get("sha256") == sha256_text(text)
                and attrs_match(state, owner, group, mode))


WANTED_KEYS = ("source_type", "source_path", "source_url", "hf_repo_id", "hf_revision", "hf_filename", "sha256",
               "dest_dir", "owner", "group", "layer_id_policy", "check_mode", "config_json", "facts_file")


def _check_wanted(wanted, who):
    if not isinstance(wanted, dict):
        raise DrafterStateError("%s: wanted must be a mapping, got %.80r" % (who, wanted))
    missing = [k for k in WANTED_KEYS if k not in wanted]
    if missing:
        raise DrafterStateError("%s wanted state: missing %s" % (who, ", ".join(missing)))


def _check_plan_inputs(state, wanted):
    if not isinstance(state, dict) or "weights" not in state or "config" not in state:
        raise DrafterStateError("drafter_plan: expected the result of inference.gpu_host.drafter_host_state, "
                                "got %.80r" % (state,))
    _check_wanted(wanted, "drafter_plan")
    if wanted["source_type"] not in ("host", "controller", "url", "huggingface"):
        raise DrafterStateError("drafter_source_type must be one of host, controller, url, huggingface, got %r"
                                % (wanted["source_type"],))


def _config_plan(state, wanted, place, weights_there, check):
    """config.json, its rollback copies and the local facts: what the run writes of them.

    Where the state read decided (and no new weights are placed), it derived config.json already: the plan
    carries that result and its text (config_text, what the role writes), so nothing is derived again.
    """
    cfg = state["config"] or {}
    decided = bool(cfg.get("decided")) and not place
    changed = bool(cfg.get("changed")) if decided else None
    rollback_files = []
    if decided and changed and not check:
        rollback_files = [path for path, present in ((wanted["config_json"], state.get("config_json_exists")),
                                                     (wanted["facts_file"], (state.get("facts") or {}).get("exists")))
                          if present]
    facts = None
    facts_write = True
    if decided and not changed:
        facts = local_facts(wanted, cfg["result"])
        if facts is not None:
            facts_write = _file_differs(state.get("facts"), render_json(facts), FACTS_FILE["owner"],
                                        FACTS_FILE["group"], FACTS_FILE["mode"])
    return {
        "config_decided": decided,
        "config_probe": weights_there and not decided and not check,
        "config_write": bool(weights_there and (not decided or changed)),
        "config_result": cfg.get("result") if decided else None,
        "config_text": _render_config(cfg["result"]["config"]) if decided and changed else None,
        "rollback_files": rollback_files,
        "facts": facts,
        "facts_write": facts_write,
        # Rollback copies left by a run stopped before vllm_service removed them: stale once this run does not
        # rewrite config.json (its rollback then puts back nothing of the drafter's: rollback_files is empty).
        "stale_rollback_copies": list(state.get("prev_copies") or []) if decided and not changed else [],
    }


def plan(state, wanted, source_stat=None):
    """What a run must do, from the host's state (drafter_host_state) and the role's wanted state.

    ``source_stat``: the source file's stat (a host source: the probe's; a controller source: read on the
    controller). Returns wanted (the source as recorded), record (the last placement's), place_reason,
    dir_changed, weights_there, placement_record (+ _changed), config_decided, config_probe (run the
    module in check mode after a placement), config_write, config_result and config_text (when decided),
    rollback_files (when decided), facts (+ facts_write), noop, and stale_rollback_copies (the ``.prev``
    copies to remove: those the state read found, on a run that does not rewrite config.json).
    """
    _check_plan_inputs(state, wanted)
    check = bool(wanted["check_mode"])
    if wanted["source_type"] == "host":
        source_stat = state.get("source")
    source = wanted_source(wanted, source_stat)
    record = state.get("record") if isinstance(state.get("record"), dict) else {}
    weights = state["weights"]
    reason = place_reason(record, source, weights)
    place = bool(reason)
    weights_there = bool(weights.get("exists")) or (place and not check)

    placement_record = None
    placement_record_changed = False
    if not place:
        placement_record = dict(source, installed={"size": weights.get("size"), "mtime": weights.get("mtime")})
        placement_record_changed = _file_differs(state.get("record_file"), render_json(placement_record),
                                                 wanted["owner"], wanted["group"], RECORD_FILE["mode"])
    dir_changed = not (state.get("dest_dir", {}).get("isdir")
                       and attrs_match(state["dest_dir"], wanted["owner"], wanted["group"], DIR_MODE))
    out = {
        "wanted": source,
        "record": record,
        "place_reason": reason,
        "dir_changed": dir_changed,
        "weights_there": weights_there,
        "placement_record": placement_record,
        "placement_record_changed": placement_record_changed,
    }
    out.update(_config_plan(state, wanted, place, weights_there, check))
    out["noop"] = not (dir_changed or place or placement_record_changed or out["config_write"] or
                       (weights_there and out["facts_write"]))
    return out


def controller_plan(state, wanted):
    """plan() for the drafter_plan filter, which runs on the controller: a controller source is stat'ed here."""
    _check_wanted(wanted, "drafter_plan")
    source_stat = None
    if wanted["source_type"] == "controller":
        # As the delegated stat did (follow: false), without forking a module on the controller.
        source_stat = stat_path(wanted["source_path"] or "")
    return plan(state, wanted, source_stat)


def facts_for(result, wanted):
    """local_facts() for the drafter_local_facts filter: the role's local fact from what the module returned."""
    _check_wanted(wanted, "drafter_local_facts")
    if not isinstance(result, dict):
        raise DrafterStateError("drafter_local_facts: expected dflash_drafter_config's result, got %.80r" % (result,))
    return local_facts(wanted, result)
