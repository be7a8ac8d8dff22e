# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vLLM subsystem's filters: plumbing to module_utils/_vllm/ (serve.py, unit.py, service_state.py,
service_plan.py, host_requirements.py, prometheus.py, installed.py, known_problems.py) and _stack/upgrade_plan.py,
which decide.

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.

_MU = "ansible_collections.inference.gpu_host.plugins.module_utils."
# Each module_utils file a filter here calls: where it is, and the error it raises for a bad input (anything else is
# a bug, left as it is).
_FILES = {"serve": ("_vllm.serve", "VllmServeError"), "unit": ("_vllm.unit", "VllmUnitError"),
          "service_state": ("_vllm.service_state", "VllmServiceStateError"),
          "installed": ("_vllm.installed", "VllmVersionError"), "known_problems": ("_vllm.known_problems", "VllmVersionError"),
          "upgrade_plan": ("_stack.upgrade_plan", "UpgradePlanError"), "prometheus": ("_vllm.prometheus", None),
          "host_requirements": ("_vllm.host_requirements", "HostRequirementsError"),
          "service_plan": ("_vllm.service_plan", "VllmServicePlanError")}


def _call(name, module, function, *args, **options):
    """``function`` of module_utils file ``module`` (a key of _FILES) on plain data; its error as an AnsibleFilterError.

    ``prefix``: the message starts with the filter's name (False where module_utils already names it);
    ``plain``: containers become plain dicts and lists first (False where the type is part of the check).
    """
    import importlib
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    where, error = _FILES[module]
    mod = importlib.import_module(_MU + where)
    convert = plain if options.pop("plain", True) else (lambda value: value)
    prefix = options.pop("prefix", True)
    errors = getattr(mod, error) if error else ValueError
    try:
        return getattr(mod, function)(*[convert(a) for a in args], **dict((k, convert(v)) for k, v in options.items()))
    except errors as exc:
        # The messages name variables and keys, never a secret's value.
        raise AnsibleFilterError("%s: %s" % (name, exc) if prefix else str(exc))


# ---------------------------------------------------------------- serve.py
def vllm_serve_argv(settings, entry_point):
    return _call("vllm_serve_argv", "serve", "serve_argv", settings, entry_point)


def vllm_probe_host(bind_host):
    return _call("vllm_probe_host", "serve", "probe_host", bind_host)


def vllm_drafter_dir(speculative_config):
    return _call("vllm_drafter_dir", "serve", "local_drafter_dir", speculative_config)


def vllm_speculative_config(configured, drafter_config=None):
    return _call("vllm_speculative_config", "serve", "settle_speculative_config", configured, drafter_config)


def vllm_restart_result(invocation_before, invocation_after):
    return _call("vllm_restart_result", "serve", "restart_result", invocation_before, invocation_after)


def vllm_rollback_plan(enabled, restarted, change_pending, previous_present):
    return _call("vllm_rollback_plan", "serve", "rollback_plan", enabled, restarted, change_pending, previous_present)


def vllm_rollback_items(unit_env_changed, unit_path, env_path, generation=None, files=(), serving_dir=None):
    return _call("vllm_rollback_items", "serve", "rollback_items", unit_env_changed, unit_path, env_path, generation,
                 files, serving_dir)


# ---------------------------------------------------------------- unit.py
def vllm_unit_values(values):
    return _call("vllm_unit_values", "unit", "unit_values", values)


def vllm_unit_problems(values, vllm_version=None):
    return _call("vllm_unit_problems", "unit", "check_unit_values", values, vllm_version=vllm_version)


def vllm_env_file(hf_home, environment=None, secret_environment=None, hf_token="", api_key=""):
    return _call("vllm_env_file", "unit", "env_file", hf_home, environment, secret_environment, hf_token, api_key)


def vllm_hardening(level, overrides=None, writable_paths=(), read_paths=None):
    return _call("vllm_hardening", "unit", "hardening_directives", level, overrides, writable_paths, read_paths)


def vllm_drain(shutdown_timeout, supported=None):
    return _call("vllm_drain", "unit", "drain_settings", shutdown_timeout, supported)


def vllm_service_host_problems(state, wanted):
    # The host read is large and a few of its keys are read: not copied into plain containers first.
    return _call("vllm_service_host_problems", "host_requirements", "host_problems", state, wanted, plain=False)


def vllm_device_access(user, wanted=(), passwd_entry=None, group_db=None, devices=()):
    return _call("vllm_device_access", "unit", "device_access", user, wanted, passwd_entry, group_db, devices)


def systemd_quote(arg):
    return _call("systemd_quote", "unit", "systemd_quote", arg, prefix=False, plain=False)


def systemd_exec(argv):
    return _call("systemd_exec", "unit", "systemd_exec", argv, prefix=False, plain=False)


# ---------------------------------------------------------------- service_plan.py, service_state.py, installed.py
def vllm_service_plan(state, wanted):
    return _call("vllm_service_plan", "service_plan", "plan", state, wanted, prefix=False, plain=False)


def file_fingerprint(files):
    return _call("file_fingerprint", "service_state", "fingerprint", files, prefix=False, plain=False)


def vllm_version_table(version, distribution="vllm"):
    return _call("vllm_version_table", "installed", "version_table", version, distribution)


def vllm_known_problems(vllm, drafter_config=None, drafter_result=None, target_config=None, environment=None,
                        tensor_parallel_size=None, gpu_memory_utilization=None, max_model_len=None, extra_args=None):
    return _call("vllm_known_problems", "known_problems", "for_service", vllm, drafter_config=drafter_config,
                 drafter_result=drafter_result, target_config=target_config, environment=environment,
                 tensor_parallel_size=tensor_parallel_size, gpu_memory_utilization=gpu_memory_utilization,
                 max_model_len=max_model_len, extra_args=extra_args)


# ---------------------------------------------------------------- upgrade_plan.py, prometheus.py
def vllm_upgrade_plan(installed, lock_text, distribution="vllm", drafter_config=None, layer_id_policy="report",
                      venv_bytes=None, free_bytes=None, unit=None, service=None):
    return _call("vllm_upgrade_plan", "upgrade_plan", "playbook_plan", installed, lock_text, distribution,
                 drafter_config, layer_id_policy, venv_bytes, free_bytes, unit, service)


def vllm_prometheus_target(settings):
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError("vllm_prometheus_target: expected a dict of settings, got %s" % type(settings).__name__)
    return _call("vllm_prometheus_target", "prometheus", "prometheus_target", settings)


class FilterModule(object):
    def filters(self):
        return dict((f.__name__, f) for f in (
            vllm_serve_argv, vllm_probe_host, vllm_drafter_dir, vllm_speculative_config, vllm_restart_result,
            vllm_rollback_plan, vllm_rollback_items, vllm_unit_values, vllm_unit_problems, vllm_env_file,
            vllm_hardening, vllm_drain, vllm_device_access, vllm_service_host_problems, systemd_quote, systemd_exec, vllm_service_plan,
            file_fingerprint, vllm_version_table, vllm_known_problems, vllm_upgrade_plan,
            vllm_prometheus_target))
