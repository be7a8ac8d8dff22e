#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_service_host_state
short_description: Read, in one call, the host state the vllm_service role reads and manages
version_added: 0.1.0
description:
  - Reads the venv link and what it resolves to; the vLLM installed there as M(inference.gpu_host.vllm_version_info)
    describes it (with its C(allow_missing) always on, the drafter's C(layer_types) narrowing the known problems); the
    target's and the drafter's C(config.json); the GPUs as M(inference.gpu_host.nvidia_gpu_info) reads them; the
    service account and the group database; the C(/dev/nvidia*) nodes; who listens on O(port) and that process's
    control group; the unit's C(ControlGroup), C(InvocationID), C(ActiveState) and C(UnitFileState); owner, group,
    mode and SHA-256 of the O(files); the role's record; the fingerprint (path, size, mtime) of the target model's
    files; and which of O(rollback_paths) have a rollback copy C(<path>.prev).
  - The vllm_service role hands the result to the P(inference.gpu_host.vllm_service_plan#filter) filter, which names
    the work left, so that a run with nothing to change makes no other round trip but the readiness probe.
  - Read-only. Bad options fail with a message naming the option.
  - Every file is read only when it is a regular file (a FIFO or a device where a C(config.json) or the record
    should be is never opened for long, so it cannot block the read), at most 16 MiB and 64 levels of JSON; a
    C(config.json) that is not fails naming the file, a record that is not is a warning naming it.
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.INFO_MODULE
  - inference.gpu_host._attributes.PLATFORM_LINUX
options:
  venv:
    description: Absolute path of the venv (or the link to its generation) the service runs.
    type: path
    required: true
  model:
    description: Absolute path of the target model's directory (its C(config.json) and files).
    type: path
    required: true
  drafter:
    description: Absolute path of the drafter's directory, whose C(config.json) is read; not set without one.
    type: path
  model_patterns:
    description: File name patterns of the target model's files to fingerprint (top level, as M(ansible.builtin.find)).
    type: list
    elements: str
    default: ["*.safetensors", "*.json"]
  user:
    description: The service account.
    type: str
    required: true
  unit:
    description: The systemd unit, with its C(.service) suffix.
    type: str
    required: true
  port:
    description: The TCP port the server listens on.
    type: int
    required: true
  files:
    description:
      - "Name: absolute path of each file or directory to read owner, group, mode and (regular files) SHA-256 of."
      - The name C(record) is also read as the role's record (a JSON object).
    type: dict
    default: {}
  rollback_paths:
    description: Absolute paths whose rollback copy C(<path>.prev) is looked for.
    type: list
    elements: path
    default: []
  probe:
    description:
      - Ask the server on O(port) whether it serves, once (no waiting); only when the unit is active and something
        listens on O(port). Not set, no request is made.
    type: dict
    suboptions:
      host:
        description: The server's bind address (C(0.0.0.0) and empty are probed on loopback).
        type: str
        default: 127.0.0.1
      served_model_name:
        description: The name C(/v1/models) must list.
        type: str
        required: true
      api_key:
        description: The server's C(--api-key); empty for none.
        type: str
        default: ''
      smoke:
        description: Also send one completion of one token.
        type: bool
        default: false
      drafter_dir:
        description:
          - The drafter's directory when the server runs speculative decoding (empty without); then the counters
            of C(/metrics) are read and the target layers the unit's journal shows captured are checked against
            its C(config.json).
        type: str
        default: ''
      timeout:
        description:
          - Seconds each request may take as a whole, from the connect to the last byte of the answer (a server
            that trickles bytes included), 1 to 300; the look makes at most four requests.
          - An answer is at most 8 MiB (a JSON answer 1 MiB and 64 levels deep), its status line and each header
            line at most 8 KiB, at most 100 headers; anything else on the port (no HTTP, garbage, too large, too
            slow) is C(ready=false) with reason C(not_ready) and the reason in C(msg), never a traceback.
        type: int
        default: 5
notes:
  - C(ss) (iproute2) and C(systemctl) must be there, as for the tasks this replaces.
"""

EXAMPLES = r"""
- name: Read the host's state
  inference.gpu_host.vllm_service_host_state:
    venv: /opt/vllm-env
    model: /srv/models/target
    user: vllm
    unit: vllm-default.service
    port: 8000
    files:
      unit: /etc/systemd/system/vllm-default.service
      env: /etc/vllm/default.env
      record: /etc/ansible/facts.d/inference_vllm_service_default.fact
      env_dir: /etc/vllm
    rollback_paths: [/etc/systemd/system/vllm-default.service, /etc/vllm/default.env]
  register: vllm_service_state
"""

RETURN = r"""
venv:
  description: path, exists, islink, and real (what the link resolves to; the path itself when it is no link).
  type: dict
  returned: always
vllm:
  description: >-
    As M(inference.gpu_host.vllm_version_info) returns it for the venv's real directory (installed, reason,
    version, distribution, behaviour, known_problems, entry_point).
  type: dict
  returned: always
target_config:
  description: The target's C(config.json), null when absent or unreadable.
  type: dict
  returned: always
drafter_config:
  description: The drafter's C(config.json), null when absent, unreadable or without O(drafter).
  type: dict
  returned: always
gpus:
  description: gpu_count, gpus and reason, as M(inference.gpu_host.nvidia_gpu_info) returns them.
  type: dict
  returned: always
passwd:
  description: getent passwd's fields for O(user) ([password, uid, gid, gecos, home, shell]), null when absent.
  type: list
  elements: str
  returned: always
group_db:
  description: "getent group as Ansible returns it: {name: [password, gid, members]}."
  type: dict
  returned: always
devices:
  description: The C(/dev/nvidia*) entries (path, ischr, isdir, uid, gid, mode).
  type: list
  elements: dict
  returned: always
port:
  description: listener (C(ss -Hltnp) output for O(port), empty when free) and listener_cgroup (its /proc/PID/cgroup).
  type: dict
  returned: always
unit:
  description: The unit's ControlGroup, InvocationID, ActiveState and UnitFileState ('' when systemd has none).
  type: dict
  returned: always
files:
  description: "{name: {exists, isdir, owner, group, mode, sha256}} for O(files); sha256 for regular files only."
  type: dict
  returned: always
record:
  description: The role's record (O(files) C(record)), null when absent or unreadable (a warning says why).
  type: dict
  returned: always
model_fingerprint:
  description: The fingerprint of the target model's files, as the C(inference.gpu_host.file_fingerprint) filter makes it.
  type: str
  returned: always
rollback_copies:
  description: The O(rollback_paths) that have a C(<path>.prev) copy.
  type: list
  elements: str
  returned: always
probe:
  description:
    - ready, url, invocation_id (the unit's), and as M(inference.gpu_host.vllm_wait_ready) returns them models,
      smoke, spec_decode and captured_layers; when not ready, reason (C(not_serving), C(not_ready),
      C(smoke_failed), C(metrics_failed), C(log_unreadable), C(captured_layers_mismatch)) and msg.
    - "Spec-decode counters that are NaN, infinite, negative or inconsistent are C(metrics_failed) with msg
      C(not ready: metrics unreadable: <the line>)."
  type: dict
  returned: when O(probe) is set
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import read_gpu_facts
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import MAX_JOURNAL_LINES, UnitJournal, VllmLogError
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import (
    API_KEY, SMOKE_PROMPT, Http, captured_layers, check_host, served, smoke, spec_decode)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import probe_url
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import path_state, read_json, read_record, read_text
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.service_state import (
    MAX_CGROUP_SIZE, UNIT_PROPERTIES, account, device_nodes, fingerprint, group_db, listener_pid, model_files,
    parse_systemctl_show, rollback_copies, venv_link)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import (
    VllmVersionError, behaviour, entry_point, installed_vllm, known_problems)

LAYER_TYPES = ("full_attention", "sliding_attention")


def describe_vllm(venv, layer_types):
    """vllm_version_info's answer for venv, allow_missing on."""
    try:
        try:
            found = installed_vllm(venv)
        except VllmVersionError:
            raise
        except ValueError as exc:
            # e.g. a METADATA Version with a release number too long for int()
            raise VllmVersionError("venv %s: cannot read the installed vLLM's version: %s" % (venv, exc))
        version, dist = found["version"], found["distribution"]
        return dict(installed=True, version=version, distribution=dist, behaviour=behaviour(version),
                    known_problems=known_problems(version, dist, layer_types),
                    entry_point=entry_point(version, dist, venv))
    except VllmVersionError as exc:
        return dict(installed=False, reason=str(exc))


def read_gpus(module):
    facts = read_gpu_facts(module)
    return dict((k, facts.get(k)) for k in ("gpu_count", "gpus", "reason", "driver_version", "cuda_version"))


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
        journal = UnitJournal(module, unit)
        try:
            verdict, warning = captured_layers(
                lambda: journal.open(out["invocation_id"], None, MAX_JOURNAL_LINES, newest=False)[0],
                opts["drafter_dir"])
        except (VllmLogError, IOError, OSError) as exc:
            out.update(reason="log_unreadable", msg="the journal of %s could not be read: %s" % (unit, exc))
            return out
        out["captured_layers"] = verdict
        if warning:
            module.warn(warning)
        if verdict["verdict"] == "mismatch":
            out.update(reason="captured_layers_mismatch", msg="%s serves, but %s" % (unit, verdict["message"]))
            return out
    out["ready"] = True
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path", required=True),
            model=dict(type="path", required=True),
            drafter=dict(type="path"),
            model_patterns=dict(type="list", elements="str", default=["*.safetensors", "*.json"]),
            user=dict(type="str", required=True),
            unit=dict(type="str", required=True),
            port=dict(type="int", required=True),
            files=dict(type="dict", default={}),
            rollback_paths=dict(type="list", elements="path", default=[]),
            probe=dict(type="dict", options=dict(
                host=dict(type="str", default="127.0.0.1"),
                served_model_name=dict(type="str", required=True),
                api_key=dict(type="str", default="", no_log=True),
                smoke=dict(type="bool", default=False),
                drafter_dir=dict(type="str", default=""),
                timeout=dict(type="int", default=5),
            )),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for option in ("venv", "model", "drafter"):
        if p[option] is not None and not os.path.isabs(p[option]):
            module.fail_json(msg="%s must be an absolute path, got %r" % (option, p[option]))
    bad = [k for k, v in p["files"].items() if not isinstance(v, str) or not os.path.isabs(v)]
    if bad:
        module.fail_json(msg="files must map names to absolute paths, got %r" % (dict((k, p["files"][k]) for k in bad),))
    bad = [v for v in p["rollback_paths"] if not os.path.isabs(v)]
    if bad:
        module.fail_json(msg="rollback_paths must be absolute, got %r" % (bad,))
    if not 0 < p["port"] < 65536:
        module.fail_json(msg="port must be 1-65535, got %r" % (p["port"],))
    if not p["unit"].endswith(".service") or "/" in p["unit"]:
        module.fail_json(msg="unit must be a unit name ending in .service, got %r" % (p["unit"],))
    probe = p["probe"]
    if probe is not None:
        host_error = check_host(probe["host"])
        if host_error:
            module.fail_json(msg="probe.%s" % host_error)
        if probe["drafter_dir"] and not os.path.isabs(probe["drafter_dir"]):
            module.fail_json(msg="probe.drafter_dir must be an absolute path, got %r" % (probe["drafter_dir"],))
        if not API_KEY.match(probe["api_key"] or "x"):
            module.fail_json(msg="probe.api_key must be the server's --api-key: printable ASCII without spaces")
        if not 1 <= probe["timeout"] <= 300:
            module.fail_json(msg="probe.timeout must be 1-300 seconds, got %r" % (probe["timeout"],))

    configs = {}
    for name, directory in (("target_config", p["model"]), ("drafter_config", p["drafter"])):
        configs[name] = None
        if directory:
            data, error = read_json(os.path.join(directory, "config.json"))
            if error:
                module.fail_json(msg=error)
            configs[name] = data
    drafter = configs["drafter_config"] if isinstance(configs["drafter_config"], dict) else {}
    layer_types = drafter.get("layer_types")
    layer_types = [t for t in layer_types if t in LAYER_TYPES] if isinstance(layer_types, list) else None
    venv = venv_link(p["venv"])

    ss = module.get_bin_path("ss", required=True)
    rc, listener, err = module.run_command([ss, "-Hltnp", "sport = :%d" % p["port"]])
    if rc != 0:
        module.fail_json(msg="ss -Hltnp 'sport = :%d' failed (rc %d): %s" % (p["port"], rc, err.strip()))
    pid = listener_pid(listener)
    systemctl = module.get_bin_path("systemctl", required=True)
    rc, show, err = module.run_command([systemctl, "show", "--property=" + ",".join(UNIT_PROPERTIES), p["unit"]])
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed (rc %d): %s" % (p["unit"], rc, err.strip()))

    unit_state = parse_systemctl_show(show)
    record, warning = (None, None)
    if "record" in p["files"]:
        record, warning = read_record(p["files"]["record"])
    if warning:
        module.warn(warning)
    module.exit_json(
        changed=False,
        venv=venv,
        vllm=describe_vllm(venv["real"], layer_types),
        target_config=configs["target_config"],
        drafter_config=configs["drafter_config"],
        gpus=read_gpus(module),
        passwd=account(p["user"]),
        group_db=group_db(),
        devices=device_nodes(),
        port=dict(listener=listener, listener_cgroup=read_text("/proc/%d/cgroup" % pid, MAX_CGROUP_SIZE) if pid else ""),
        unit=unit_state,
        files=dict((name, path_state(path)) for name, path in p["files"].items()),
        record=record,
        model_fingerprint=fingerprint(model_files(p["model"], p["model_patterns"])),
        rollback_copies=rollback_copies(p["rollback_paths"]),
        **({} if probe is None else dict(probe=probe_server(module, probe, p["port"], p["unit"], unit_state, listener)))
    )


if __name__ == "__main__":
    main()
