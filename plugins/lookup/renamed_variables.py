# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
name: renamed_variables
short_description: The message for the renamed variables still set for the host
version_added: 0.3.0
description:
  - Looks at the variables set for the host (as C(ansible.builtin.varnames) does) and returns one message naming each
    old name of the table with its new place, or nothing. Each role's first check stops the run with it.
options:
  _terms:
    description: The role's table, C(__<role>_renamed) (old variable name -> new place).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the role's inputs
  ansible.builtin.assert:
    that: __found | length == 0
    fail_msg: "{{ __found | join(' ') }}"
  vars:
    __found: "{{ lookup('inference.gpu_host.renamed_variables', __drafter_renamed, wantlist=True) }}"
"""

RETURN = r"""
_raw:
  description: Empty, or one message "Renamed variables (changelog, breaking changes) - <old> is now <new>; ...".
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.inference.gpu_host.plugins.module_utils._common.inputs import renamed_problems


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        if len(terms) != 1:
            raise AnsibleLookupError("renamed_variables: expected one table (old name -> new place), got %d terms"
                                     % len(terms))
        try:
            return renamed_problems(list(variables or {}), dict(terms[0]))
        except (TypeError, ValueError) as exc:
            raise AnsibleLookupError("renamed_variables: %s" % exc)
