# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `drafter` role's state of a host, read in one module call, and what a run must change.

``probe_*`` run on the host (module drafter_host_state): the drafter directory, the weights
(a stat, never their bytes), the record of the last placement, the local facts, the target's
config.json, a host source, and whether dflash_drafter_config would change config.json (the
same derivation from the same options, through module_utils/_drafter/dflash.py, without writing).
``plan`` runs on the controller (filter drafter_plan): it compares that with what the role's
variables ask for and names only the work left, so that a run with nothing to change makes
no other round trip. It skips a task only where the task itself would change nothing; when it
cannot tell (a symbolic mode, a derivation error the module will report), the task runs.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import json
import math
import os
import pwd
import re
import stat

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (
    DRAFTER_PROFILES, DflashConfigError, derive_drafter_config, is_speculators_config, read_json_file,
    read_target_config, render_config)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import place_reason
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import read_record as _read_record
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import sha256_text, stat_path
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import (
    INDEX_FILENAME, SafetensorsHeaderError, read_checkpoint)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import (
    VllmVersionError, installed_vllm, parse_version, same_version)

RECORD_FILE = {"mode": "0644"}   # the placement record: drafter_owner/drafter_group, mode 0644
FACTS_FILE = {"owner": "root", "group": "root", "mode": "0644"}
DIR_MODE = "0755"
_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_INT = 2 ** 31 - 1
MAX_LAYER_IDS = 1024
MAX_ROPE_KEYS = 64
MAX_ROPE_LIST = 4096
MAX_ROPE_STRING = 256
MAX_VERSION_LENGTH = 128


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


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rope_problem(option, value):
    if value is None:
        return None
    if len(value) > MAX_ROPE_KEYS:
        return "%s has too many keys" % option
    for key, item in value.items():
        if isinstance(item, list):
            if len(item) > MAX_ROPE_LIST or not all(_is_number(element) for element in item):
                return "%s.%s is not a list of numbers" % (option, key)
        elif isinstance(item, str):
            if len(item) > MAX_ROPE_STRING or _CONTROL.search(item):
                return "%s.%s is not a short printable string" % (option, key)
        elif not (item is None or isinstance(item, bool) or _is_number(item)):
            return "%s.%s has an unexpected type" % (option, key)
    return None


def option_problem(params):
    """What dflash_drafter_config's own checks would refuse in these options (None: nothing).

    The module says it better: a problem here only means "let the module run and fail".
    """
    for option in ("drafter", "target", "dest", "venv", "speculators_config"):
        if params.get(option) is not None and not os.path.isabs(params[option]):
            return "%s is not an absolute path" % option
    for option in ("block_size", "mask_token_id", "num_target_layers", "sliding_window", "max_position_embeddings",
                   "selector_top_k", "swa_window_size"):
        if params.get(option) is not None and abs(params[option]) > MAX_INT:
            return "%s is too large" % option
    ids = params.get("target_layer_ids")
    if ids is not None and (len(ids) > MAX_LAYER_IDS or any(abs(i) > MAX_INT for i in ids)):
        return "target_layer_ids out of bounds"
    for option in ("rope_theta", "rms_norm_eps", "input_embedding_scale", "output_multiplier",
                   "final_logit_softcapping"):
        if params.get(option) is not None and not math.isfinite(params[option]):
            return "%s is not finite" % option
    for option in ("rope_scaling", "rope_parameters"):
        problem = _rope_problem(option, params.get(option))
        if problem:
            return problem
    version = params.get("vllm_version")
    if version is not None and (len(version) > MAX_VERSION_LENGTH or _CONTROL.search(version)):
        return "vllm_version is not a version"
    for option, lookup in (("owner", pwd.getpwnam), ("group", grp.getgrnam)):
        value = params.get(option)
        if value is not None and not value.isdigit():
            try:
                lookup(value)
            except KeyError:
                return "%s %s does not exist" % (option, value)
    return None


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


def _read_dest(dest, drafter, target_config_path):
    """(decided_ok, bytes or None): dest as dflash_drafter_config's check_dest reads it."""
    real = os.path.realpath(dest)
    inputs = [drafter, target_config_path]
    if os.path.isdir(drafter):
        inputs.append(os.path.join(drafter, INDEX_FILENAME))
    if any(real == os.path.realpath(path) for path in inputs):
        return False, None
    name = os.path.basename(dest)
    if name.endswith(".safetensors") or name == INDEX_FILENAME:
        return False, None
    if not os.path.lexists(dest):
        return True, None
    try:
        raw, existing = read_json_file(dest)
    except (IOError, OSError, ValueError):
        return False, None
    return isinstance(existing, dict), raw


def _read_speculators(params, drafter):
    """(ok, config, source) as dflash_drafter_config's read_speculators; ok False where the module fails."""
    explicit = params.get("speculators_config")
    path = explicit or os.path.join(drafter if os.path.isdir(drafter) else os.path.dirname(drafter), "config.json")
    if not explicit and not os.path.lexists(path):
        return True, None, None
    try:
        _raw, config = read_json_file(path)
    except (IOError, OSError, ValueError):
        return not explicit, None, None
    if is_speculators_config(config):
        return True, config, "speculators config %s" % path
    return not explicit, None, None


def resolve_vllm(params, check_mode, warnings):
    """(version, distribution, source) of the vLLM that will read the config, or (None, "vllm", None).

    The one home of this decision: dflash_drafter_config and the drafter role's state read both call it."""
    pinned, venv = params.get("vllm_version"), params.get("venv")
    if pinned is not None:
        parse_version(pinned)
    installed, missing = None, None
    if venv:
        try:
            installed = installed_vllm(venv)
        except VllmVersionError as exc:
            missing = str(exc)
        except ValueError as exc:
            # e.g. a METADATA Version whose release number is too long for int()
            raise VllmVersionError("venv %s: cannot read the installed vLLM's version: %s" % (venv, exc))
    if installed is not None:
        source = "venv %s (%s %s, %s)" % (venv, installed["distribution"], installed["version"],
                                          installed["metadata_path"])
        if pinned is not None and not same_version(pinned, installed["version"]):
            if not check_mode:
                raise VllmVersionError(
                    "vllm_version %s disagrees with vLLM %s installed in %s: run python_env first, or fix the pin"
                    % (pinned, installed["version"], venv))
            warnings.append("check mode: the venv %s has vLLM %s, vllm_version pins %s; the config is computed for "
                            "%s, which python_env would install" % (venv, installed["version"], pinned, pinned))
            return pinned, installed["distribution"], "vllm_version (venv %s has %s)" % (venv, installed["version"])
        return installed["version"], installed["distribution"], source
    if pinned is not None:
        return pinned, "vllm", "vllm_version" + (" (venv: %s)" % missing if missing else "")
    if missing:
        raise VllmVersionError(missing)
    return None, "vllm", None


def config_state(params, check_mode):
    """Whether dflash_drafter_config with these (validated) options would change config.json, and its result.

    ``params``: the module's options, ``drafter`` included. Returns decided, changed, result (what the
    module returns: config, format, derived, ids, profile, vllm, note, messages) and reason (why not
    decided: the module then runs and says it itself).
    """
    problem = option_problem(params)
    if problem:
        return _undecided(problem)
    drafter, dest, target_path = params["drafter"], params["dest"], params["target"]
    if not os.path.exists(drafter):
        return _undecided("no weights at %s" % drafter)
    target_config_path = os.path.join(target_path, "config.json") if os.path.isdir(target_path) else target_path
    if os.path.realpath(dest) == os.path.realpath(target_config_path):
        return _undecided("dest is the target's config.json")
    ok, before = _read_dest(dest, drafter, target_config_path)
    if not ok:
        return _undecided("dest %s is not a config.json the module replaces" % dest)
    ok, speculators, speculators_source = _read_speculators(params, drafter)
    if not ok:
        return _undecided("speculators_config is not a speculators-format config")
    warnings = []
    try:
        target_config = read_target_config(target_path)
        version, distribution, vllm_source = resolve_vllm(params, check_mode, warnings)
        header = read_checkpoint(drafter)
        result = derive_drafter_config(
            header, target_config,
            profile=params.get("profile", "auto"),
            overrides=dict((key, params.get(key)) for key in OVERRIDE_OPTIONS),
            ids_policy=params.get("ids_policy", "warn"),
            vllm_version=version,
            layer_id_policy=params.get("layer_id_policy", "report"),
            vllm_source=vllm_source,
            vllm_distribution=distribution,
            speculators=speculators,
            speculators_source=speculators_source,
        )
    except (DflashConfigError, SafetensorsHeaderError, VllmVersionError, IOError, OSError, ValueError) as exc:
        return _undecided(str(exc))
    warnings.extend(result["warnings"])
    text = render_config(result["config"])
    changed = before != text.encode("utf-8")
    if not changed:
        mode = params.get("mode")
        if mode is not None and not isinstance(mode, int) and not _OCTAL_MODE.match(str(mode)):
            return _undecided("mode %s is symbolic: the module decides" % mode)
        state = stat_path(dest)
        if not state.get("isreg"):
            return _undecided("dest %s is not a regular file" % dest)
        changed = not attrs_match(state, params.get("owner"), params.get("group"), mode)
    output = dict(changed=changed, dest=dest, config=result["config"], format=result["format"],
                  derived=result["derived"], dflash_target_layer_ids=result["dflash_target_layer_ids"],
                  target_layer_ids=result["target_layer_ids"], profile=result["profile"], vllm=result["vllm"],
                  note=result["note"], messages=warnings)
    if "aux_hidden_state_layer_ids" in result:
        output["aux_hidden_state_layer_ids"] = result["aux_hidden_state_layer_ids"]
    return {"decided": True, "changed": changed, "reason": None, "result": output, "warnings": warnings}


# dflash_drafter_config's options (its argument_spec), to validate and convert the probe's `config`
# the way the module's own call would. A unit test keeps the two equal.
OVERRIDE_OPTIONS = ("block_size", "mask_token_id", "target_layer_ids", "num_target_layers", "layer_types",
                    "sliding_window", "rope_theta", "rope_scaling", "rope_parameters", "rms_norm_eps",
                    "max_position_embeddings", "selector_top_k", "is_causal", "input_embedding_scale",
                    "output_multiplier", "final_logit_softcapping", "use_swa", "swa_window_size", "causal",
                    "is_neox_style")


def config_spec():
    return dict(
        drafter=dict(type="path", required=True),
        target=dict(type="path", required=True),
        dest=dict(type="path", required=True),
        profile=dict(type="str", default="auto", choices=["auto", "none"] + [p["name"] for p in DRAFTER_PROFILES]),
        block_size=dict(type="int"),
        mask_token_id=dict(type="int"),
        target_layer_ids=dict(type="list", elements="int"),
        num_target_layers=dict(type="int"),
        layer_types=dict(type="list", elements="str", choices=["full_attention", "sliding_attention"]),
        sliding_window=dict(type="int"),
        rope_theta=dict(type="float"),
        rope_scaling=dict(type="dict"),
        rope_parameters=dict(type="dict"),
        rms_norm_eps=dict(type="float"),
        max_position_embeddings=dict(type="int"),
        selector_top_k=dict(type="int"),
        is_causal=dict(type="bool"),
        input_embedding_scale=dict(type="float"),
        output_multiplier=dict(type="float"),
        final_logit_softcapping=dict(type="float"),
        use_swa=dict(type="bool"),
        swa_window_size=dict(type="int"),
        causal=dict(type="bool"),
        is_neox_style=dict(type="bool"),
        speculators_config=dict(type="path"),
        ids_policy=dict(type="str", default="warn", choices=["warn", "require_explicit"]),
        vllm_version=dict(type="str"),
        venv=dict(type="path"),
        layer_id_policy=dict(type="str", default="report", choices=["report", "compensate", "fail"]),
        mode=dict(type="raw"),
        owner=dict(type="str"),
        group=dict(type="str"),
    )


def validate_config_options(options, drafter):
    """(params, problem): the options converted as the module's argument_spec would, or why they are not valid."""
    result = ArgumentSpecValidator(config_spec()).validate(dict(options or {}, drafter=drafter))
    if result.error_messages:
        return None, "; ".join(result.error_messages)
    return result.validated_parameters, None


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


def local_facts(wanted, source, result):
    """The local fact the role writes from dflash_drafter_config's result, or None when it cannot tell."""
    config = result.get("config") or {}
    if "block_size" not in config:
        return None
    vllm = result.get("vllm")
    return {
        "dir": wanted["dest_dir"],
        "source": source["source"],
        "sha256": wanted["sha256"],
        "dflash_target_layer_ids": result["dflash_target_layer_ids"],
        "target_layer_ids": result["target_layer_ids"],
        "written_for_vllm": vllm.get("version", "") if isinstance(vllm, dict) else "",
        "layer_id_policy": wanted["layer_id_policy"],
        "block_size": config["block_size"],
    }


def _file_differs(state, text, owner, group, mode):
    return not (state and state.get("isreg") and state.get("sha256") == sha256_text(text)
                and attrs_match(state, owner, group, mode))


WANTED_KEYS = ("source_type", "source_path", "source_url", "hf_repo_id", "hf_revision", "hf_filename", "sha256",
               "dest_dir", "owner", "group", "layer_id_policy", "check_mode", "config_json", "facts_file")


def plan(state, wanted, source_stat=None):
    """What a run must do, from the host's state (drafter_host_state) and the role's wanted state.

    ``source_stat``: the source file's stat (a host source: the probe's; a controller source: read on the
    controller). Returns wanted (the source as recorded), record (the last placement's), place_reason,
    dir_changed, weights_there, placement_record (+ _changed), config_decided, config_probe (run the
    module in check mode after a placement), config_write, config_result, rollback_files (when decided),
    facts (+ facts_write), noop, and stale_rollback_copies (the ``.prev`` copies to remove: those the state
    read found, on a run that does not rewrite config.json).
    """
    if not isinstance(state, dict) or "weights" not in state or "config" not in state:
        raise DrafterStateError("drafter_plan: expected the result of inference.gpu_host.drafter_host_state, "
                                "got %.80r" % (state,))
    missing = [k for k in WANTED_KEYS if k not in wanted]
    if missing:
        raise DrafterStateError("drafter_plan wanted state: missing %s" % ", ".join(missing))
    if wanted["source_type"] not in ("host", "controller", "url", "huggingface"):
        raise DrafterStateError("drafter_source_type must be one of host, controller, url, huggingface, got %r"
                                % (wanted["source_type"],))
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

    cfg = state["config"] or {}
    decided = bool(cfg.get("decided")) and not place
    config_changed = bool(cfg.get("changed")) if decided else None
    config_write = weights_there and (not decided or config_changed)
    rollback_files = []
    if decided and config_changed and not check:
        rollback_files = [path for path, present in ((wanted["config_json"], state.get("config_json_exists")),
                                                     (wanted["facts_file"], (state.get("facts") or {}).get("exists")))
                          if present]
    facts = None
    facts_write = True
    if decided and not config_changed:
        facts = local_facts(wanted, source, cfg["result"])
        if facts is not None:
            facts_write = _file_differs(state.get("facts"), render_json(facts), FACTS_FILE["owner"],
                                        FACTS_FILE["group"], FACTS_FILE["mode"])
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
        "config_decided": decided,
        "config_probe": weights_there and not decided and not check,
        "config_write": bool(config_write),
        "config_result": cfg.get("result") if decided else None,
        "rollback_files": rollback_files,
        "facts": facts,
        "facts_write": facts_write,
    }
    out["noop"] = not (dir_changed or place or placement_record_changed or config_write or
                       (weights_there and facts_write))
    # Rollback copies left by a run stopped before vllm_service removed them: stale once this run does not
    # rewrite config.json (its rollback then puts back nothing of the drafter's: rollback_files is empty).
    out["stale_rollback_copies"] = (list(state.get("prev_copies") or [])
                                    if decided and not config_changed else [])
    return out
