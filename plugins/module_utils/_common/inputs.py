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
