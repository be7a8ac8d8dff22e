# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """Options of the venv subsystem written once (plugins/module_utils/_venv)."""

    DOCUMENTATION = r"""
options: {}
"""

    # The venv's generations, as python_env_host_state reads them and venv_generation plans and changes them.
    GENERATIONS = r"""
options:
  venv_dir:
    description: The stable path of the venv (C(python_env_venv_dir)); absolute.
    type: path
    required: true
  requirements:
    description: The package set of this run (the lock plus the flash-attn pin), as text; names the wanted generation.
    type: str
    required: true
  keep:
    description: How many generations to keep (C(python_env_keep_generations)), the serving one included; at least 1.
    type: int
    default: 2
  free_gib:
    description: Free space (GiB) the generations' filesystem must have before a new generation is built
      (C(python_env_generation_free_gib)); a finite number >= 0 (C(nan) and C(inf) are refused).
    type: float
    default: 12
  retry_failed:
    description: Switch to a generation that failed readiness before (C(python_env_retry_failed_generation); the role
      removes its C(failed.json)).
    type: bool
    default: false
"""
