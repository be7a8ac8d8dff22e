# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Filters hand module_utils functions plain data: Ansible passes a filter its lazily
# templated containers, which are Mappings and Sequences but not dicts and lists.

from collections.abc import Mapping


def plain(value):
    """Plain dicts and lists all the way down (the core functions see what the containers hold)."""
    if isinstance(value, Mapping):
        return dict((key, plain(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
