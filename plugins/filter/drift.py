# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift check's filter: the drift_schedule role's command line (module_utils/_drift/cli.py).

Each filter is documented in <filter name>.yml beside this file (ansible-doc -t filter); the whole drift check,
piece by piece, is in docs/drift.md.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def drift_check_argv(settings):
    """scripts/drift_check.py's argv of a mapping of drift_schedule settings (drift_check_argv's keywords)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import DriftCheckCliError
    from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import drift_check_argv as _argv
    if not isinstance(settings, dict):
        raise AnsibleFilterError("drift_check_argv: expected a mapping of drift_schedule settings, got %r" % (settings,))
    try:
        return _argv(**settings)
    except TypeError as exc:
        raise AnsibleFilterError("drift_check_argv: %s" % exc)
    except DriftCheckCliError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"drift_check_argv": drift_check_argv}
