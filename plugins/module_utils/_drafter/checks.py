# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter's one error and the small checks every drafter file shares (stdlib only)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math


class DflashConfigError(ValueError):
    """A drafter, target or option from which no trustworthy DFlash config can be written."""


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def require_int(name, value, minimum):
    if not is_int(value) or value < minimum:
        raise DflashConfigError("%s must be an integer >= %d, got %r" % (name, minimum, value))
    return value


def positive_number(name, value, where, allow_zero=False):
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or value < 0 or (value == 0 and not allow_zero)):
        raise DflashConfigError("%s must be a %s number, got %r (%s)"
                                % (name, "finite non-negative" if allow_zero else "positive finite", value, where))
    return value


def fmt_shape(shape):
    return "[%s]" % ", ".join(str(d) for d in shape)


def recorder(derived):
    """record(key, value, source): note where a derived value came from, and return the value."""
    def record(key, value, source):
        derived[key] = {"value": value, "source": source}
        return value
    return record
