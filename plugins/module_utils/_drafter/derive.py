# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""dflash_drafter_config's whole job, in one place: its options, their checks, the derivation and the compare.

``derive(params, check_mode)`` checks the options, reads dest, the speculators config, the target and the
headers, and derives config.json (nothing written). ``run(module)`` is the module: it writes what derive
found, unless in check mode. The drafter role's state read (state.config_state) asks derive the same question,
so the role and the module can never disagree on what config.json should hold.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import math
import os
import pwd
import tempfile

from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.inference.gpu_host.plugins.module_utils._common.inputs import path_option_error
from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import first_control
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import derive_drafter_config, render_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.format_speculators import is_speculators_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.profiles import DRAFTER_PROFILES
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.target import read_target_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.tensors import (
    foreign_config_format, foreign_format_message)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.mask_embedding import (
    MASK_EMBEDDING_FILENAME, MaskEmbeddingError, read_mask_embedding_file)
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import (
    INDEX_FILENAME, SafetensorsHeaderError, read_checkpoint)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import LAYER_TYPES, read_json_file
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.installed import describe_installed
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import (
    VllmVersionError, parse_version, same_version)

PATH_OPTIONS = ("drafter", "target", "dest", "venv", "speculators_config")
INT_OPTIONS = ("block_size", "mask_token_id", "num_target_layers", "sliding_window", "max_position_embeddings",
               "selector_top_k", "swa_window_size")
FLOAT_OPTIONS = ("rope_theta", "rms_norm_eps", "input_embedding_scale", "output_multiplier", "final_logit_softcapping",
                 "attention_value_scale")
LIST_OPTIONS = ("target_layer_ids", "no_rope_layers")
ROPE_OPTIONS = ("rope_scaling", "rope_parameters")
# The options handed to derive_drafter_config as overrides.
OVERRIDE_OPTIONS = ("block_size", "mask_token_id", "target_layer_ids", "num_target_layers", "layer_types",
                    "sliding_window", "rope_theta", "rope_scaling", "rope_parameters", "rms_norm_eps",
                    "max_position_embeddings", "selector_top_k", "is_causal", "input_embedding_scale",
                    "output_multiplier", "final_logit_softcapping", "use_swa", "swa_window_size", "causal",
                    "is_neox_style", "attention_value_scale", "no_rope_layers")
MAX_INT = 2 ** 31 - 1  # vLLM and torch keep these in 32-bit integers
MAX_LAYER_IDS = 1024
MAX_ROPE_KEYS = 64
MAX_ROPE_LIST = 4096  # long_factor / short_factor: one entry per rotary dimension pair
MAX_ROPE_STRING = 256
MAX_VERSION_LENGTH = 128


class DrafterConfigError(Exception):
    """What the module fails with: a message naming the option or file."""


class DestError(DrafterConfigError):
    """dest is an input, names a safetensors file, or holds something other than a config.json."""


def config_spec():
    """dflash_drafter_config's argument_spec (drafter_host_state converts its ``config`` option with it)."""
    return dict(
        drafter=dict(type="path", required=True),
        target=dict(type="path", required=True),
        dest=dict(type="path", required=True),
        profile=dict(type="str", default="auto", choices=["auto", "none"] + [p["name"] for p in DRAFTER_PROFILES]),
        block_size=dict(type="int"),
        mask_token_id=dict(type="int"),
        target_layer_ids=dict(type="list", elements="int"),
        num_target_layers=dict(type="int"),
        layer_types=dict(type="list", elements="str", choices=list(LAYER_TYPES)),
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
        attention_value_scale=dict(type="float"),
        no_rope_layers=dict(type="list", elements="int"),
        speculators_config=dict(type="path"),
        ids_policy=dict(type="str", default="warn", choices=["warn", "require_explicit"]),
        vllm_version=dict(type="str"),
        venv=dict(type="path"),
        layer_id_policy=dict(type="str", default="report", choices=["report", "compensate", "fail"]),
        mode=dict(type="raw"),
        owner=dict(type="str"),
        group=dict(type="str"),
    )


# ---------------------------------------------------------------- the options

def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rope_problem(option, value):
    if value is None:
        return None
    if len(value) > MAX_ROPE_KEYS:
        return "%s has %d keys; expected rope parameters (at most %d keys)" % (option, len(value), MAX_ROPE_KEYS)
    for key, item in value.items():
        where = "%s.%s" % (option, key)
        if isinstance(item, list):
            if len(item) > MAX_ROPE_LIST or not all(_is_number(element) for element in item):
                return "%s must be a list of at most %d finite numbers, got %r" % (where, MAX_ROPE_LIST, item[:8])
        elif isinstance(item, str):
            if len(item) > MAX_ROPE_STRING or first_control(item):
                return "%s must be a short printable string, got %r" % (where, item[:MAX_ROPE_STRING])
        elif not (item is None or isinstance(item, bool) or _is_number(item)):
            return ("%s must be a finite number, a string, a boolean, null or a list of numbers, got %s %s"
                    % (where, type(item).__name__, repr(item)[:80]))
    return None


def _owner_group_problem(params):
    # Checked up front: Ansible would otherwise fail on them after the file is written.
    for option, lookup, kind in (("owner", pwd.getpwnam, "user"), ("group", grp.getgrnam, "group")):
        value = params[option]
        if value is None or value.isdigit():
            continue
        try:
            lookup(value)
        except KeyError:
            return "%s %r: no such %s on this host" % (option, value, kind)
    return None


def option_problem(params):
    """The message for the first option the module refuses, checked before anything is read, or None."""
    # Relative paths would be resolved in the module's temporary working directory.
    problem = path_option_error(params, PATH_OPTIONS)
    if problem:
        return problem
    for option in INT_OPTIONS:
        if params[option] is not None and abs(params[option]) > MAX_INT:
            return "%s must be at most %d, got %d" % (option, MAX_INT, params[option])
    for option in LIST_OPTIONS:
        ids = params[option]
        if ids is not None and (len(ids) > MAX_LAYER_IDS or any(abs(i) > MAX_INT for i in ids)):
            return "%s must be at most %d layer ids, each at most %d" % (option, MAX_LAYER_IDS, MAX_INT)
    for option in FLOAT_OPTIONS:
        if params[option] is not None and not math.isfinite(params[option]):
            return "%s must be a finite number, got %r" % (option, params[option])
    for option in ROPE_OPTIONS:
        problem = _rope_problem(option, params[option])
        if problem:
            return problem
    version = params["vllm_version"]
    if version is not None and (len(version) > MAX_VERSION_LENGTH or first_control(version)):
        return ("vllm_version must be a vLLM version such as '0.20.1' (at most %d printable characters), got %r"
                % (MAX_VERSION_LENGTH, version[:MAX_VERSION_LENGTH]))
    return _owner_group_problem(params)


# ---------------------------------------------------------------- the files read

def target_config_path(target):
    """The target's config.json: ``target`` itself when it is not a directory."""
    return os.path.join(target, "config.json") if os.path.isdir(target) else target


def read_dest(dest, drafter, target_config):
    """Refuse a dest that is an input or an unrelated file; return its current bytes (None when absent)."""
    real = os.path.realpath(dest)
    if real == os.path.realpath(target_config):
        raise DestError("dest %s is the target's own config.json; write the drafter's next to the drafter" % dest)
    inputs = [("the drafter", drafter)]
    if os.path.isdir(drafter):
        inputs.append(("the drafter's index", os.path.join(drafter, INDEX_FILENAME)))
    for what, path in inputs:
        if real == os.path.realpath(path):
            raise DestError("dest %s is %s (%s); dest is the drafter's config.json" % (dest, what, path))
    name = os.path.basename(dest)
    if name.endswith(".safetensors") or name == INDEX_FILENAME:
        raise DestError("dest %s names a safetensors file; dest is the drafter's config.json" % dest)
    if not os.path.lexists(dest):
        return None
    try:
        raw, existing = read_json_file(dest)
    except (IOError, OSError) as exc:
        raise DestError("dest %s exists but cannot be read: %s" % (dest, to_native(exc)))
    except ValueError as exc:
        raise DestError("dest %s exists and is not a config.json (%s); refusing to replace it: move it "
                        "away or correct dest" % (dest, exc))
    if not isinstance(existing, dict):
        raise DestError("dest %s exists and holds a JSON %s, not an object (a config.json); refusing to "
                        "replace it: move it away or correct dest" % (dest, type(existing).__name__))
    return raw


def read_speculators(params, drafter):
    """(config, source) of the drafter's speculators-format config.json, or (None, None).

    The option must name such a config; by default the config.json next to the weights is
    read when it is one (bounded like every JSON read here) and ignored otherwise.
    """
    explicit = params["speculators_config"]
    path = explicit or os.path.join(drafter if os.path.isdir(drafter) else os.path.dirname(drafter), "config.json")
    if not explicit and not os.path.lexists(path):
        return None, None
    try:
        _raw, config = read_json_file(path)
    except (IOError, OSError, ValueError) as exc:
        if explicit:
            raise DrafterConfigError("speculators_config %s: %s; expected the drafter's speculators-format "
                                     "config.json" % (path, to_native(getattr(exc, "strerror", None) or exc)))
        return None, None  # not a config we read (dest's own check covers dest)
    if is_speculators_config(config):
        return config, "speculators config %s" % path
    foreign = foreign_config_format(config)
    if foreign:
        # A DSpark or EAGLE-3 drafter's own config: never derive a DFlash config over it.
        raise DrafterConfigError(foreign_format_message(foreign[0], foreign[1], "its %s" % foreign[2], path))
    if explicit:
        raise DrafterConfigError("speculators_config %s has no speculators_model_type: not a speculators-format "
                                 "config.json (a drafter without one needs no speculators_config)" % path)
    return None, None


def read_mask_embedding(drafter):
    """The mask_embedding.pt beside the weights, read (read_mask_embedding_file), or None when there is none."""
    path = os.path.join(drafter if os.path.isdir(drafter) else os.path.dirname(drafter), MASK_EMBEDDING_FILENAME)
    if not os.path.lexists(path):
        return None
    try:
        return read_mask_embedding_file(path)
    except MaskEmbeddingError as exc:
        raise DrafterConfigError("%s; vLLM loads this file as the drafter's mask embedding: remove it if it does "
                                 "not belong to the drafter" % to_native(exc))


def resolve_vllm(params, check_mode, warnings):
    """(version, distribution, source) of the vLLM that will read the config, or (None, "vllm", None).

    The installed one (installed.describe_installed) wins; a pin must agree with it, except in check
    mode, where the pin is what python_env would install. Without an installed vLLM the pin is used.
    """
    pinned, venv = params["vllm_version"], params["venv"]
    if pinned is not None:
        parse_version(pinned)
    installed = describe_installed(venv) if venv else None
    if installed and installed["installed"]:
        found = installed["version"]
        if pinned is not None and not same_version(pinned, found):
            if not check_mode:
                raise VllmVersionError("vllm_version %s disagrees with vLLM %s installed in %s: run python_env "
                                       "first, or fix the pin" % (pinned, found, venv))
            warnings.append("check mode: the venv %s has vLLM %s, vllm_version pins %s; the config is computed for "
                            "%s, which python_env would install" % (venv, found, pinned, pinned))
            return pinned, installed["distribution"], "vllm_version (venv %s has %s)" % (venv, found)
        return found, installed["distribution"], "venv %s (%s %s, %s)" % (
            venv, installed["distribution"], found, installed["metadata_path"])
    missing = installed["reason"] if installed else None
    if pinned is not None:
        return pinned, "vllm", "vllm_version" + (" (venv: %s)" % missing if missing else "")
    if missing:
        raise VllmVersionError(missing)
    return None, "vllm", None


# ---------------------------------------------------------------- derive and compare

def _derive_result(params, check_mode, speculators, speculators_source, mask_embedding=None):
    """derive_drafter_config on the files the options name; (result, warnings)."""
    warnings = []
    try:
        target_config = read_target_config(params["target"])  # bounded: size, UTF-8, nesting depth
        version, distribution, vllm_source = resolve_vllm(params, check_mode, warnings)
        header = read_checkpoint(params["drafter"])
        result = derive_drafter_config(
            header, target_config,
            profile=params["profile"],
            overrides=dict((key, params[key]) for key in OVERRIDE_OPTIONS),
            ids_policy=params["ids_policy"],
            vllm_version=version,
            layer_id_policy=params["layer_id_policy"],
            vllm_source=vllm_source,
            vllm_distribution=distribution,
            speculators=speculators,
            speculators_source=speculators_source,
            mask_embedding=mask_embedding,
        )
    except (DflashConfigError, SafetensorsHeaderError, VllmVersionError) as exc:
        raise DrafterConfigError(to_native(exc))
    warnings.extend(result["warnings"])
    return result, warnings


def derive(params, check_mode):
    """The module's answer without writing: {"before" (dest's bytes or None), "text", "result"}.

    ``params``: the module's options (converted by config_spec()). ``result`` is what the module returns,
    less ``changed`` and ``diff``. Raises DrafterConfigError with the module's message.
    """
    problem = option_problem(params)
    if problem:
        raise DrafterConfigError(problem)
    dest, drafter = params["dest"], params["drafter"]
    before = read_dest(dest, drafter, target_config_path(params["target"]))
    speculators, speculators_source = read_speculators(params, drafter)
    mask_embedding = read_mask_embedding(drafter)
    result, warnings = _derive_result(params, check_mode, speculators, speculators_source, mask_embedding)
    output = dict(dest=dest, messages=warnings)
    for key in ("config", "format", "derived", "dflash_target_layer_ids", "target_layer_ids", "profile", "vllm",
                "note", "aux_hidden_state_layer_ids"):
        if key in result:
            output[key] = result[key]
    return {"before": before, "text": render_config(result["config"]), "result": output}


# ---------------------------------------------------------------- the module

def write_atomically(module, dest, text):
    """Write text to a temporary file beside dest, give it mode/owner/group, then move it over dest.

    Attributes are applied to the temporary file first, so a mode Ansible cannot
    apply fails before dest is touched; the temporary file never outlives a failure.
    """
    directory = os.path.dirname(dest)
    if not os.path.isdir(directory):
        raise DrafterConfigError("the directory of dest %s does not exist" % dest)
    fd, tmp = tempfile.mkstemp(prefix=".config.json.", dir=directory)
    moved = False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(to_bytes(text))
        module.set_fs_attributes_if_different(module.load_file_common_arguments(module.params, path=tmp), False)
        module.atomic_move(tmp, dest)
        moved = True
    except (IOError, OSError) as exc:
        raise DrafterConfigError("cannot write %s: %s" % (tmp, to_native(exc)))
    finally:
        # a failure to set the attributes exits through here too (fail_json: SystemExit)
        if not moved and os.path.lexists(tmp):
            os.unlink(tmp)


def run(module):
    """dflash_drafter_config's job: derive, write when it changed (not in check mode), apply mode/owner/group.

    Returns the module's result (``changed``, and ``diff`` in diff mode); raises DrafterConfigError.
    """
    params = module.params
    found = derive(params, module.check_mode)
    dest, before, text = params["dest"], found["before"], found["text"]
    changed = before != to_bytes(text)
    if changed and not module.check_mode:
        write_atomically(module, dest, text)
    if os.path.exists(to_bytes(dest, errors="surrogate_or_strict")):
        changed = module.set_fs_attributes_if_different(module.load_file_common_arguments(params, path=dest), changed)
    output = dict(found["result"], changed=changed)
    if module._diff:
        output["diff"] = dict(before="" if before is None else to_native(before, errors="surrogate_or_strict"),
                              after=text, before_header=dest, after_header=dest)
    return output
