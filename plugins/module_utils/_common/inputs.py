# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Checks every module makes on its own options, whatever the role in front of it
# checked (docs/bad-input.md). Plain Python, stdlib only.

import os


def path_option_error(params, options):
    """The message for the first option in ``options`` that is not an absolute path, or None.

    A relative path would be resolved in the module's temporary working directory on
    the host, so it is refused; so is a NUL, which no path can hold. Unset options pass.
    """
    for option in options:
        value = params.get(option)
        if value is None:
            continue
        if "\0" in value:
            return "%s must be a path without NUL characters, got %r" % (option, value)
        if not os.path.isabs(value):
            return "%s must be an absolute path, got %r" % (option, value)
    return None


RENAMED_PREFIX = "Renamed variables (changelog, breaking changes): "


def renamed_problems(defined, renamed):
    """[one message] when any name of ``defined`` (the variables set for the host) is a key of ``renamed`` (a role's
    ``__<role>_renamed``: old name -> new place), else []: "Renamed variables (...): a is now x.k; b is now x.j."
    (old names sorted). A role's first check stops the run with it, before the host is read."""
    if not isinstance(renamed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in renamed.items()):
        raise ValueError("the renamed table: expected a mapping of old variable name to new place, got %r" % (renamed,))
    found = sorted(set(name for name in defined if isinstance(name, str)) & set(renamed))
    if not found:
        return []
    return [RENAMED_PREFIX + "; ".join("%s is now %s" % (old, renamed[old]) for old in found) + "."]
