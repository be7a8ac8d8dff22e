# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)

# PRIVATE to this collection (hence the leading underscore, as in community.docker):
# it may change at any time. Do not use it from other collections.
from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The options of the modules that read a vLLM root cause (module_utils/_vllm/log.py): vllm_failure_cause,
    vllm_wait_ready. Their checks are log.py's and the modules' own (journal_lines, max_lines)."""

    DOCUMENTATION = r"""
options:
  journal_lines:
    description:
      - At most this many lines of the unit's journal are read (for a root cause, the newest), 1 to 1000000.
    type: int
    default: 5000
  max_lines:
    description: At most this many log lines are returned in RV(relevant_lines), 3 to 200.
    type: int
    default: 40
"""
