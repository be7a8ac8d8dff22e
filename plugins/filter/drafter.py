# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter subsystem's filters (drafter role, drift check): each names its module_utils/_drafter function
(plugin_utils/_filters.py).

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, to


class FilterModule(object):
    def filters(self):
        return filters({
            "drafter_plan": to("_drafter.state", "controller_plan", "DrafterStateError"),
            "drafter_local_facts": to("_drafter.state", "facts_for", "DrafterStateError"),
            "dflash_stale_ids": to("_drafter.formats", "stale_ids", "DflashConfigError"),
        })
