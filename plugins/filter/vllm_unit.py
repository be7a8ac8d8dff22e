# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_service role's unit decisions (module_utils/_vllm/unit.py) as Jinja filters.

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _call(name, function, *args, **kwargs):
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import VllmUnitError
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
    try:
        return function(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
    except VllmUnitError as exc:
        # The message names variables and keys, never a secret's value.
        raise AnsibleFilterError("%s: %s" % (name, exc))


def vllm_unit_values(values):
    """{name: text}: the unit's plain settings ({variable: value}) checked and as rendered, plus its Description=."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import unit_values
    return _call("vllm_unit_values", unit_values, values)


def vllm_unit_problems(values):
    """[message, ...]: why each of {variable: value} cannot be rendered into the unit or its environment file."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import check_unit_values
    return _call("vllm_unit_problems", check_unit_values, values)


def vllm_env_file(hf_home, environment=None, secret_environment=None, hf_token="", api_key=""):
    """{"lines": [...], "secret": bool}: the environment file's assignments, and whether it holds a secret."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import environment_has_secret, environment_lines
    lines = _call("vllm_env_file", environment_lines, hf_home, environment, secret_environment, hf_token, api_key)
    secret = _call("vllm_env_file", environment_has_secret, environment, secret_environment, hf_token, api_key)
    return {"lines": lines, "secret": secret}


def vllm_hardening(level, overrides=None, writable_paths=(), read_paths=None):
    """[[directive, value], ...]: the unit's hardening for a level, the overrides and the paths the server writes."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import hardening_directives
    return _call("vllm_hardening", hardening_directives, level, overrides, writable_paths, read_paths)


def vllm_drain(shutdown_timeout, supported=None):
    """{"shutdown_timeout", "kill_mode", "timeout_stop_sec", "reason"}: how the unit stops."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import drain_settings
    return _call("vllm_drain", drain_settings, shutdown_timeout, supported)


def vllm_device_access(user, wanted=(), passwd_entry=None, group_db=None, devices=()):
    """{"groups": [...], "inaccessible": [...]}: SupplementaryGroups= and the GPU nodes the account still cannot open."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import device_groups, inaccessible_devices
    groups = _call("vllm_device_access", device_groups, user, wanted, group_db or {}, devices)
    if passwd_entry is None:  # no such account yet (check mode on a blank host): nothing to check against
        return {"groups": groups, "inaccessible": []}
    bad = _call("vllm_device_access", inaccessible_devices, user, passwd_entry, groups, group_db or {}, devices)
    return {"groups": groups, "inaccessible": bad}


class FilterModule(object):
    def filters(self):
        return {"vllm_unit_values": vllm_unit_values, "vllm_unit_problems": vllm_unit_problems,
                "vllm_env_file": vllm_env_file, "vllm_hardening": vllm_hardening, "vllm_drain": vllm_drain,
                "vllm_device_access": vllm_device_access}
