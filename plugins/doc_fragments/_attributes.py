# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)

# PRIVATE to this collection (hence the leading underscore, as in community.docker):
# it may change at any time. Do not use it from other collections.
from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The module attributes, written once: every module extends DOCUMENTATION and the variants that fit it.

    A module's own ``attributes:`` entry (a ``details:`` line, say) is merged over these and wins.
    """

    # The descriptions; the variants below give the support levels (platform: one PLATFORM_* variant each).
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description:
      - Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
  idempotent:
    description:
      - When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
      - This assumes that the system controlled/queried by the module has not changed in a relevant way.
  platform:
    description: Target OS/families that can be operated against.
"""

    # A module that changes files: predicts in check mode, shows the change in diff mode.
    CHECK_MODE_DIFF_MODE = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  idempotent:
    support: full
"""

    # A module that only reads: it runs the same in check mode and never reports a change.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
    details:
      - This action does not modify state.
"""

    # A module that needs Linux interfaces: /proc, the systemd journal, the NVIDIA driver, a Proxmox node.
    PLATFORM_LINUX = r"""
options: {}
attributes:
  platform:
    support: full
    platforms: linux
"""

    # A module that reads and writes plain files only (a venv's site-packages, model files) with the node's Python.
    PLATFORM_POSIX = r"""
options: {}
attributes:
  platform:
    support: full
    platforms: posix
"""
