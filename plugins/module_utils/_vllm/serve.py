# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The decisions of the vllm_service role, in one tested place: the `vllm serve`
# command line, the address a local client probes, the speculative config the
# server gets, and the restart/rollback bookkeeping of a run.
#
# Public API (stdlib only; every bad input a VllmServeError naming the variable):
# * build_serve_argv(entry_point, model, served_model_name, host, port, ...) -> {"flags": [...], "argv": [...]}
# * serve_argv(settings, entry_point): the same from one dict of settings (SERVE_SETTINGS)
# * check_extra_args(extra_args) -> [str, ...]; extra_arg_problem(index, arg) -> message or None (the credential guard)
# * probe_host(bind_host) -> the address to probe ("0.0.0.0" -> "127.0.0.1", "::" -> "::1", others as they are)
# * local_drafter_dir(speculative_config) -> the DFlash drafter's directory on the host, or ""
# * probe_url(bind_host, port) -> "http://127.0.0.1:8000" (an IPv6 address in brackets)
# * settle_speculative_config(configured, drafter_config) -> the dict passed as --speculative-config
# * restart_result(invocation_before, invocation_after, rollback=None) -> {"changed": bool, ...}, with "rollback"
#   (rollback_plan of that restart) where ``rollback`` {enabled, change_pending, previous_present} is given
# * rollback_plan(enabled, restarted, change_pending, previous_present) -> {"roll_back": bool, "reason": str}
# * rollback_items(unit_env_changed, unit_path, env_path, generation, files) -> what a rollback puts back

import ipaddress
import json
import posixpath
import re
from collections.abc import Mapping

from ansible_collections.inference.gpu_host.plugins.module_utils._common.network import PORT_RANGE, port_number
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import CREDENTIAL_FLAGS, credential_flag, flag_name
from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import CONTROL

# Errors name the role's variables: the settings are vllm_service_<name>.
VARIABLE_PREFIX = "vllm_service_"

# What vllm_version_info's entry_point says about where the model goes.
MODEL_ARGS = ("positional", "--model")

# Control characters (_common/text.py's CONTROL, the one definition): in a unit's ExecStart= a newline
# would end the line and start a new directive; systemd_exec refuses them too, this names the
# variable they came from.
_UNSIGNED = re.compile(r"^[0-9]+$")
_DECIMAL = re.compile(r"^[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?$")

# The spellings Ansible's own boolean conversion (and argument_specs type bool) accepts.
_TRUE = frozenset(("true", "yes", "on", "1", "y", "t"))
_FALSE = frozenset(("false", "no", "off", "0", "n", "f"))


class VllmServeError(ValueError):
    """A setting of the vllm_service role that cannot become a command line (the message names it)."""


def _var(name):
    return VARIABLE_PREFIX + name


def _show(value, length=60):
    """The start of a value for a message, as Python's repr (control characters show as escapes)."""
    text = repr(value)
    return text if len(text) <= length else text[:length] + "..."


def _fail(name, expected, value):
    raise VllmServeError("%s: expected %s, got %s (%s)" % (_var(name), expected, _show(value), type(value).__name__))


def _text(name, value, allow_empty=False):
    """A string setting (a number is taken as its str(), as Jinja's list would pass it on)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        _fail(name, "a string", value)
    text = str(value)
    if not text and not allow_empty:
        _fail(name, "a non-empty string", value)
    return text


def _unsigned(name, value, low, high=None):
    """An integer setting in [low, high], passed on in its own spelling (as `| string` did)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        _fail(name, _range_text(low, high), value)
    if isinstance(value, str) and not _UNSIGNED.match(value):
        _fail(name, _range_text(low, high), value)
    if int(value) < low or (high is not None and int(value) > high):
        _fail(name, _range_text(low, high), value)
    return str(value)


def _port(port, spelled=True):
    """--port's value (network.port_number's range), in its own spelling; ``spelled`` False: an int only."""
    if port_number(port) is None or not (spelled or isinstance(port, int)):
        _fail("port", "an integer %d-%d" % PORT_RANGE, port)
    return str(port)


def _range_text(low, high):
    return "an integer >= %d" % low if high is None else "an integer %d-%d" % (low, high)


def _fraction(name, value):
    """A number in (0, 1], passed on in its own spelling (0.9 -> "0.9", as `| string` did)."""
    expected = "a number in (0, 1]"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _fail(name, expected, value)
    if isinstance(value, str) and not _DECIMAL.match(value):
        _fail(name, expected, value)
    number = float(value)
    if not 0 < number <= 1:  # also refuses nan
        _fail(name, expected, value)
    return str(value)


def _boolean(name, value, allow_none=False):
    """True or False from a bool or one of Ansible's spellings (yes/no, on/off, 1/0); None when allowed."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float, str)):
        word = str(value).strip().lower()
        word = {"1.0": "1", "0.0": "0"}.get(word, word)
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    _fail(name, "true or false" + (" or null" if allow_none else ""), value)


def _spec_json(spec):
    """--speculative-config's value: Ansible's `to_json(sort_keys=true)` is json.dumps with these defaults."""
    if not isinstance(spec, Mapping):
        _fail("speculative_config", "a dict (empty for none)", spec)
    if spec and "method" not in spec:
        _fail("speculative_config", "a dict with a method (e.g. method: dflash)", dict(spec))
    try:
        return json.dumps(spec, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise VllmServeError("%s: expected a dict of JSON values (strings, numbers, booleans, null, lists, dicts): %s"
                             % (_var("speculative_config"), exc))


def _extra_args(extra_args):
    if isinstance(extra_args, (str, bytes, Mapping)) or not isinstance(extra_args, (list, tuple)):
        _fail("extra_args", "a list of arguments", extra_args)
    args = []
    for index, arg in enumerate(extra_args):
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise VllmServeError("%s[%d]: expected a string (quote it in YAML), got %s (%s)"
                                 % (_var("extra_args"), index, _show(arg), type(arg).__name__))
        args.append(str(arg))
    return args


def _entry_argv(entry_point):
    what = "the entry point (vllm_version_info's entry_point)"
    if not isinstance(entry_point, Mapping):
        raise VllmServeError("%s: expected a dict with argv and model_arg, got %s" % (what, _show(entry_point)))
    argv = entry_point.get("argv")
    if isinstance(argv, (str, bytes)) or not isinstance(argv, (list, tuple)) or not argv \
            or not all(isinstance(a, str) and a for a in argv):
        raise VllmServeError("%s: expected argv a non-empty list of strings, got %s" % (what, _show(argv)))
    model_arg = entry_point.get("model_arg")
    if model_arg not in MODEL_ARGS:
        raise VllmServeError("%s: expected model_arg one of %s, got %s"
                             % (what, ", ".join(MODEL_ARGS), _show(model_arg)))
    return list(argv), model_arg


def _checked_line(name, arg):
    """``arg`` unless it holds a control character (which could end the unit's ExecStart= line)."""
    bad = CONTROL.search(arg)
    if bad:
        raise VllmServeError(
            "%s: %s has a control character (U+%04X) at index %d; a command-line argument must be one line "
            "of printable text (no newline, carriage return, tab or NUL)"
            % (name, _show(arg), ord(bad.group()), bad.start()))
    return arg


# Flags an extra argument may not carry: a credential there is in ps, the unit file and the drift
# report; the role's own flags would be given twice. vLLM's parser (argparse, allow_abbrev) takes any
# unambiguous prefix of a flag, "--flag=value", "_" for "-" and FlexibleArgumentParser's dotted
# "--flag.key value": module_utils/_common/redaction.py decides which spellings are a credential flag (every
# one of them), and the drift report masks the same ones.
_OWNED_FLAGS = {"--shutdown-timeout": "shutdown_timeout"}


def extra_arg_problem(index, arg):
    """Why vllm_service_extra_args[index] may not be given (a credential flag or one the role owns), else None.

    The message shows the flag part only (before "="), never a value.
    """
    flag = arg.split("=", 1)[0] if isinstance(arg, str) else ""
    name = flag_name(arg)
    if not name:
        return None
    where = "%s[%d]" % (_var("extra_args"), index)
    credential = credential_flag(arg)
    if credential is not None:
        read_as = "" if flag == credential else (
            " is read by vLLM's parser as %s: it takes any unambiguous abbreviation, '_' for '-' and --flag=value;"
            " it" % credential)
        if credential in CREDENTIAL_FLAGS:
            return ("%s: %r%s would put a secret on the command line (ps, the unit file, the drift report): set %s "
                    "instead (vault it); the role writes it only to the 0600 environment file"
                    % (where, flag, read_as, _var(CREDENTIAL_FLAGS[credential])))
        return ("%s: %r looks like a credential (or an abbreviation of one), which must not be on the command line: "
                "pass it through %s (an environment variable in the 0600 environment file)"
                % (where, flag, _var("secret_environment")))
    for owned, variable in sorted(_OWNED_FLAGS.items()):
        if owned[2:].startswith(name):
            read_as = "" if name == owned[2:] else " (vLLM's parser reads it as %s)" % owned
            return "%s: %r%s is set from %s (where the installed vLLM has it)" % (where, flag, read_as, _var(variable))
    return None


def check_extra_args(extra_args):
    """vllm_service_extra_args as a list of strings: each one line of text, no credential flag, no flag of the role's."""
    args = _extra_args(extra_args)
    for index, arg in enumerate(args):
        problem = extra_arg_problem(index, arg)
        if problem:
            raise VllmServeError(problem)
        _checked_line("%s[%d]" % (_var("extra_args"), index), arg)
    return args


def _optional_text(name, value):
    """A string setting where empty (or null) leaves the flag out."""
    return _text(name, "" if value is None else value, allow_empty=True)


def build_serve_argv(entry_point, model, served_model_name, host, port, tensor_parallel_size=1,
                     gpu_memory_utilization=0.9, max_model_len=None, max_num_batched_tokens=None,
                     enable_chunked_prefill=None, reasoning_parser="", enable_auto_tool_choice=False,
                     tool_call_parser="", language_model_only=False, trust_remote_code=False,
                     speculative_config=None, extra_args=(), shutdown_timeout=None):
    """The `vllm serve` command line of the vllm_service role's settings.

    ``entry_point`` is vllm_version_info's {"argv": [...], "model_arg": "positional" | "--model"}.
    Returns {"flags": [...], "argv": [...]}: the flags alone (what vLLM's own parser is given after
    --model) and the whole command line. Every value is a str; numbers keep their own spelling
    (0.9 -> "0.9", "0.90" -> "0.90"), the speculative config is JSON with sorted keys. None for an
    optional setting (max_model_len, gpu_memory_utilization, ...) passes no flag: vLLM's own default. The flags
    come in a fixed order, the extra arguments last. ``shutdown_timeout`` (seconds, or None for
    none) is --shutdown-timeout, set only where this vLLM has it (vllm_unit.drain_settings).
    No extra argument may carry a credential or a flag the role sets from its own variable.
    """
    entry_argv, model_arg = _entry_argv(entry_point)
    model = _checked_line(_var("model"), _text("model", model))
    if not model.startswith("/"):
        _fail("model", "an absolute path", model)
    flags = []

    def option(name, flag, value=None):
        flags.append(flag)
        if value is not None:
            flags.append(_checked_line(_var(name), value))

    option("served_model_name", "--served-model-name", _text("served_model_name", served_model_name))
    option("host", "--host", _text("host", host))
    option("port", "--port", _port(port))
    option("tensor_parallel_size", "--tensor-parallel-size", _unsigned("tensor_parallel_size", tensor_parallel_size, 1))
    if gpu_memory_utilization is not None:  # null leaves vLLM's own default (versions table)
        option("gpu_memory_utilization", "--gpu-memory-utilization",
               _fraction("gpu_memory_utilization", gpu_memory_utilization))
    if max_model_len is not None:
        option("max_model_len", "--max-model-len", _unsigned("max_model_len", max_model_len, 1))
    if max_num_batched_tokens is not None:
        option("max_num_batched_tokens", "--max-num-batched-tokens",
               _unsigned("max_num_batched_tokens", max_num_batched_tokens, 1))
    chunked = _boolean("enable_chunked_prefill", enable_chunked_prefill, allow_none=True)
    if chunked is not None:  # null leaves vLLM's own default
        option("enable_chunked_prefill", "--enable-chunked-prefill" if chunked else "--no-enable-chunked-prefill")
    reasoning_parser = _optional_text("reasoning_parser", reasoning_parser)
    if reasoning_parser:
        option("reasoning_parser", "--reasoning-parser", reasoning_parser)
    if _boolean("enable_auto_tool_choice", enable_auto_tool_choice):
        option("enable_auto_tool_choice", "--enable-auto-tool-choice")
    tool_call_parser = _optional_text("tool_call_parser", tool_call_parser)
    if tool_call_parser:
        option("tool_call_parser", "--tool-call-parser", tool_call_parser)
    if _boolean("language_model_only", language_model_only):
        option("language_model_only", "--language-model-only")
    if _boolean("trust_remote_code", trust_remote_code):
        option("trust_remote_code", "--trust-remote-code")
    spec = {} if speculative_config is None else speculative_config
    spec_json = _spec_json(spec)
    if spec:
        option("speculative_config", "--speculative-config", spec_json)
    if shutdown_timeout is not None:
        option("shutdown_timeout", "--shutdown-timeout", _unsigned("shutdown_timeout", shutdown_timeout, 0))
    flags.extend(check_extra_args(extra_args))
    model_part = [model] if model_arg == "positional" else ["--model", model]
    return {"flags": flags, "argv": entry_argv + model_part + flags}


# The settings preflight checks before the host is read (unit.check_unit_values, filter vllm_unit_inputs), by the
# same rules build_serve_argv applies when it renders them: {setting: check(value)}, None passing where it does.
_PREFLIGHT = {
    "tensor_parallel_size": lambda value: _unsigned("tensor_parallel_size", value, 1),
    "gpu_memory_utilization": lambda value: value is None or _fraction("gpu_memory_utilization", value),
    "max_model_len": lambda value: value is None or _unsigned("max_model_len", value, 1),
    "max_num_batched_tokens": lambda value: value is None or _unsigned("max_num_batched_tokens", value, 1),
    "enable_chunked_prefill": lambda value: _boolean("enable_chunked_prefill", value, allow_none=True),
    "speculative_config": lambda value: _spec_json({} if value is None else value),
}
PREFLIGHT_SETTINGS = tuple(sorted(_PREFLIGHT))


def check_setting(name, value):
    """The setting as build_serve_argv reads it (enable_chunked_prefill: True, False or None), or VllmServeError
    naming vllm_service_<name> and what was expected: ``name`` one of PREFLIGHT_SETTINGS."""
    return _PREFLIGHT[name](value)


# The settings serve_argv takes: build_serve_argv's keywords, the role's variables without vllm_service_.
SERVE_SETTINGS = ("model", "served_model_name", "host", "port", "tensor_parallel_size", "gpu_memory_utilization",
                  "max_model_len", "max_num_batched_tokens", "enable_chunked_prefill", "reasoning_parser",
                  "enable_auto_tool_choice", "tool_call_parser", "language_model_only", "trust_remote_code",
                  "speculative_config", "extra_args", "shutdown_timeout")
REQUIRED_SETTINGS = ("model", "served_model_name", "host", "port")


def serve_argv(settings, entry_point):
    """build_serve_argv of the role's settings as one dict keyed as SERVE_SETTINGS (vllm_unit_values' serve)."""
    if not isinstance(settings, Mapping):
        raise VllmServeError("expected a dict of settings, got %s" % type(settings).__name__)
    unknown = sorted(set(settings) - set(SERVE_SETTINGS))
    missing = [key for key in REQUIRED_SETTINGS if key not in settings]
    if unknown or missing:
        raise VllmServeError("unknown settings %s, missing settings %s (expected keys: %s)"
                             % (unknown or "none", missing or "none", ", ".join(SERVE_SETTINGS)))
    return build_serve_argv(entry_point, **settings)


def _bare_host(bind_host):
    if bind_host is None:
        return ""
    if not isinstance(bind_host, str):
        raise VllmServeError("host: expected an IP address or a host name, got %s (%s)"
                             % (_show(bind_host), type(bind_host).__name__))
    if bind_host != bind_host.strip() or CONTROL.search(bind_host):
        raise VllmServeError("host: expected an IP address or a host name without spaces or control characters, got %s"
                             % _show(bind_host))
    return bind_host[1:-1] if bind_host.startswith("[") and bind_host.endswith("]") else bind_host


def local_drafter_dir(speculative_config):
    """The DFlash drafter's directory on the host, for the captured-layers check; "" when there is none.

    A speculative config with method "dflash" and a ``model`` that is an absolute path gives that path
    (normalised, no trailing "/"); any other method, a Hugging Face repo id or no config gives "".
    """
    if speculative_config in (None, "", {}):
        return ""
    if not isinstance(speculative_config, dict):
        raise VllmServeError("speculative_config: expected a dict, got %s" % type(speculative_config).__name__)
    model = speculative_config.get("model")
    if speculative_config.get("method") != "dflash" or not isinstance(model, str) or not model.startswith("/"):
        return ""
    return posixpath.normpath(model)


def probe_host(bind_host):
    """The address a client on the same host uses to reach a server bound to ``bind_host``.

    A server bound to every address of a family is reached on that family's loopback:
    "0.0.0.0" -> "127.0.0.1", "::" (any spelling, brackets or not) -> "::1"; an empty or
    missing host (vLLM's default, every address) -> "127.0.0.1". Any other address or host
    name is probed as it is (without brackets; probe_url adds them).
    """
    bare = _bare_host(bind_host)
    if not bare:
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return bare  # a host name (or an IPv6 address with a zone): as it is
    if address.is_unspecified:
        return "127.0.0.1" if address.version == 4 else "::1"
    return bare


def probe_url(bind_host, port):
    """http://<probe_host>:<port>, an IPv6 address in brackets (http://[::1]:8000)."""
    port = _port(port, spelled=False)
    host = probe_host(bind_host)
    if ":" in host:
        host = "[%s]" % host
    return "http://%s:%s" % (host, port)


def settle_speculative_config(configured, drafter_config=None):
    """The speculative config the server gets: ``configured`` with num_speculative_tokens filled in.

    A drafter is trained to propose block_size - 1 tokens; its config.json's block_size gives
    num_speculative_tokens unless the setting names it. No speculative config stays {}.
    """
    if configured is None:
        configured = {}
    if not isinstance(configured, Mapping):
        _fail("speculative_config", "a dict (empty for none)", configured)
    settled = dict(configured)
    drafter_config = drafter_config or {}
    if not isinstance(drafter_config, Mapping):
        raise VllmServeError("the drafter's config.json: expected a JSON object, got %s" % _show(drafter_config))
    if settled and "num_speculative_tokens" not in settled and "block_size" in drafter_config:
        block_size = drafter_config["block_size"]
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise VllmServeError("the drafter's config.json: expected block_size an integer >= 1, got %s"
                                 % _show(block_size))
        settled["num_speculative_tokens"] = block_size - 1
    return settled


def _invocation(name, value):
    if value is None:
        return ""
    if not isinstance(value, str):
        raise VllmServeError("%s: expected the unit's InvocationID (a string), got %s" % (name, _show(value)))
    return value.strip()


def restart_result(invocation_before, invocation_after, rollback=None):
    """Whether the unit (re)started between two reads of its InvocationID, as a result dict.

    systemd gives every start of a unit a new InvocationID, so this sees a restart by the
    handler and a start of a stopped unit alike, and never one from an earlier run. The
    result has "changed" so that `is changed` reads it like a task's result. With ``rollback``
    ({enabled, change_pending, previous_present}), also "rollback": rollback_plan of this restart.
    """
    before = _invocation("invocation_before", invocation_before)
    after = _invocation("invocation_after", invocation_after)
    out = {"changed": bool(after) and after != before, "invocation_before": before, "invocation_after": after}
    if rollback is not None:
        if not isinstance(rollback, Mapping) or sorted(rollback) != ["change_pending", "enabled", "previous_present"]:
            raise VllmServeError("rollback: expected a dict of enabled, change_pending, previous_present, got %s"
                                 % _show(rollback))
        out["rollback"] = rollback_plan(rollback["enabled"], out["changed"], rollback["change_pending"],
                                        rollback["previous_present"])
    return out


def rollback_plan(enabled, restarted, change_pending, previous_present):
    """Whether a change whose server is not ready is rolled back; if not, why.

    A rollback puts back the unit and environment kept before this run wrote new ones, so it
    needs: rollback enabled, a change of the unit or environment in this run, the server
    restarted with it, and both previous files there to keep (not on a first installation).
    """
    previous_present = list(previous_present or [])
    if not _boolean("rollback", enabled):
        reason = "%s is false" % _var("rollback")
    elif not change_pending:
        reason = "this run did not change the unit or its environment (nor the venv link or the drafter's config.json)"
    elif not restarted:
        reason = "the server did not restart in this run (%s=defer?)" % _var("restart_policy")
    elif not previous_present or not all(previous_present):
        reason = "there was no previous unit and environment to go back to (a first installation)"
    else:
        return {"roll_back": True, "reason": ""}
    return {"roll_back": False, "reason": reason}


def _abs_path(name, value):
    if not isinstance(value, str) or not value.startswith("/") or CONTROL.search(value):
        raise VllmServeError("%s: expected an absolute path, got %s" % (name, _show(value)))
    return posixpath.normpath(value)


def rollback_items(unit_env_changed, unit_path, env_path, generation=None, files=(), serving_dir=None):
    """What a rollback of this run puts back, in order, with one line each for the failure message.

    One switch is one generation (docs/generations.md): the venv link (python_env_result.generation, when
    this run switched it and a previous generation is there), the files kept as ``<path>.prev``
    before this run wrote them (``files``: the drafter's config.json, the local facts that say which
    generation serves), and the unit and its environment file when this run changed them.
    ``serving_dir``: the generation the server was last started from (vllm_service's record). When an
    earlier run switched the link and stopped before the unit followed it, this run did not switch, yet
    its unit change starts the new generation for the first time: the link goes back to ``serving_dir``.
    Returns {"link": {"path", "target", "from"} or None, "files": [paths], "names": [str]}.
    """
    generation = generation or {}
    if not isinstance(generation, Mapping):
        raise VllmServeError("python_env_result.generation: expected a dict (the python_env role's result), got %s"
                             % _show(generation))
    if isinstance(files, (str, bytes)) or not isinstance(files, (list, tuple)):
        raise VllmServeError("the rollback files: expected a list of paths, got %s" % _show(files))
    changed = _boolean("unit_env_changed", unit_env_changed)
    link, names, restore = None, [], []
    previous = None
    if _boolean("python_env_result.generation.switched", generation.get("switched", False)):
        previous = generation.get("previous_dir")
    elif changed and serving_dir and generation.get("dir") and generation.get("link"):
        serving = _abs_path("the serving generation", serving_dir).rstrip("/")
        current = _abs_path("python_env_result.generation.dir", generation.get("dir")).rstrip("/")
        # Only another generation beside this one (a record from before generations names the plain
        # venv, which python_env adopted under another name: nothing to point the link at).
        if serving != current and posixpath.dirname(serving) == posixpath.dirname(current):
            previous = serving
    if previous:
        link = {"path": _abs_path("python_env_result.generation.link", generation.get("link")),
                "target": _abs_path("python_env_result.generation.previous_dir", previous),
                "from": _abs_path("python_env_result.generation.dir", generation.get("dir"))}
        names.append("venv link %s -> %s (was %s)" % (link["path"], link["target"], link["from"]))
    for index, path in enumerate(files):
        path = _abs_path("the rollback files[%d]" % index, path)
        if path not in restore:
            restore.append(path)
            names.append(path)
    if changed:
        for name, path in (("the unit", unit_path), ("the environment file", env_path)):
            path = _abs_path(name, path)
            restore.append(path)
            names.append(path)
    return {"link": link, "files": restore, "names": names}
