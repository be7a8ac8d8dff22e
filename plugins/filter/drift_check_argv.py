# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift_schedule role's command line, through module_utils/_drift/cli.py."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: drift_check_argv
short_description: The command line of a scheduled drift check
version_added: 0.2.0
description:
  - Builds the argv of the collection's C(scripts/drift_check.py) for one C(drift_schedule) timer, from a mapping of
    its settings (the keys below, as the C(drift_schedule) role passes them).
  - Optional parts appear only when set; the notify command's private environment names are passed sorted.
  - A setting of the wrong type fails naming its C(drift_schedule_*) variable; a list setting (C(inventories),
    C(extra_vars), C(notify_on), C(private_env_names)) given as a string is refused rather than split into one
    argument per character; C(timeout_sec) must be a whole number of seconds greater than 0 (the check gets
    C(--timeout) of that less a margin of up to 60 seconds, never 0 or less).
options:
  _input:
    description:
      - Mapping with the keys C(python), C(script), C(playbook), C(report_dir), C(keep_reports),
        C(rotate_artifacts), C(notify_on), C(timeout_sec), and optionally C(inventories), C(limit), C(tags),
        C(extra_vars), C(vault_password_file), C(notify_command), C(webhook_url_set), C(private_env_names).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The unit's ExecStart
  ansible.builtin.set_fact:
    argv: "{{ settings | inference.gpu_host.drift_check_argv }}"
  vars:
    settings:
      python: /opt/ansible/bin/python
      script: /srv/inference.gpu_host/scripts/drift_check.py
      playbook: /srv/inference.gpu_host/playbooks/drift.yml
      report_dir: /var/lib/inference-gpu-host/drift
      keep_reports: 30
      rotate_artifacts: 10
      notify_on: [drift, failed]
      timeout_sec: 3600
      inventories: [/srv/inventories/ct129]
"""

RETURN = r"""
_value:
  description: The argv, every item a string.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def drift_check_argv(settings):
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import DriftCheckCliError, drift_check_argv as _drift_check_argv
    if not isinstance(settings, dict):
        raise AnsibleFilterError("drift_check_argv: expected a mapping of drift_schedule settings, got %r" % (settings,))
    try:
        return _drift_check_argv(**settings)
    except TypeError as exc:
        raise AnsibleFilterError("drift_check_argv: %s" % exc)
    except DriftCheckCliError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"drift_check_argv": drift_check_argv}
