# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_service role's decisions (module_utils/_vllm/serve.py) as Jinja filters.

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.

# The settings vllm_serve_argv takes: build_serve_argv's keywords, the role's variables without vllm_service_.
SERVE_SETTINGS = ("model", "served_model_name", "host", "port", "tensor_parallel_size", "gpu_memory_utilization",
                  "max_model_len", "max_num_batched_tokens", "enable_chunked_prefill", "reasoning_parser",
                  "enable_auto_tool_choice", "tool_call_parser", "language_model_only", "trust_remote_code",
                  "speculative_config", "extra_args", "shutdown_timeout")
REQUIRED_SETTINGS = ("model", "served_model_name", "host", "port")


def _call(name, function, *args, **kwargs):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import VllmServeError
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    try:
        return function(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
    except VllmServeError as exc:
        raise AnsibleFilterError("%s: %s" % (name, exc))


def vllm_serve_argv(settings, entry_point):
    """{"flags": [...], "argv": [...]} of the role's settings (a dict keyed as SERVE_SETTINGS) and an entry point."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import build_serve_argv
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError("vllm_serve_argv: expected a dict of settings, got %s" % type(settings).__name__)
    unknown = sorted(set(settings) - set(SERVE_SETTINGS))
    missing = [key for key in REQUIRED_SETTINGS if key not in settings]
    if unknown or missing:
        raise AnsibleFilterError("vllm_serve_argv: unknown settings %s, missing settings %s (expected keys: %s)"
                                 % (unknown or "none", missing or "none", ", ".join(SERVE_SETTINGS)))
    return _call("vllm_serve_argv", build_serve_argv, entry_point, **settings)


def vllm_probe_host(bind_host):
    """The address to probe a server bound to ``bind_host`` on (0.0.0.0 -> 127.0.0.1, :: -> ::1)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import probe_host
    return _call("vllm_probe_host", probe_host, bind_host)


def vllm_drafter_dir(speculative_config):
    """The DFlash drafter's local directory in a speculative config, or "" (not DFlash, or not a local path)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import local_drafter_dir
    return _call("vllm_drafter_dir", local_drafter_dir, speculative_config)


def vllm_speculative_config(configured, drafter_config=None):
    """The speculative config with num_speculative_tokens from the drafter's block_size when not set."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import settle_speculative_config
    return _call("vllm_speculative_config", settle_speculative_config, configured, drafter_config)


def vllm_restart_result(invocation_before, invocation_after):
    """{"changed": bool, ...}: whether the unit (re)started between two reads of its InvocationID."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import restart_result
    return _call("vllm_restart_result", restart_result, invocation_before, invocation_after)


def vllm_rollback_plan(enabled, restarted, change_pending, previous_present):
    """{"roll_back": bool, "reason": str} for a change whose server is not ready."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import rollback_plan
    return _call("vllm_rollback_plan", rollback_plan, enabled, restarted, change_pending, previous_present)


def vllm_rollback_items(unit_env_changed, unit_path, env_path, generation=None, files=(), serving_dir=None):
    """{"link", "files", "names"}: what a rollback of this run puts back."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import rollback_items
    return _call("vllm_rollback_items", rollback_items, unit_env_changed, unit_path, env_path, generation, files,
                 serving_dir)


class FilterModule(object):
    def filters(self):
        return {"vllm_serve_argv": vllm_serve_argv, "vllm_probe_host": vllm_probe_host,
                "vllm_drafter_dir": vllm_drafter_dir,
                "vllm_speculative_config": vllm_speculative_config, "vllm_restart_result": vllm_restart_result,
                "vllm_rollback_plan": vllm_rollback_plan, "vllm_rollback_items": vllm_rollback_items}
