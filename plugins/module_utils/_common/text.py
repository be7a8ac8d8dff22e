# -*- coding: utf-8 -*-
# Copyright: contributors to inference.gpu_host
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for characters a value written to a host file or command line may not hold.

C0 and C1 control characters and DEL can end a line of a systemd unit, an environment file or a
lock file; U+2028/U+2029 are line ends to some readers; lone surrogates cannot be encoded as UTF-8.
Every check of a value against control characters uses ``first_control`` (docs/bad-input.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

CONTROL = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def first_control(text, allow=u""):
    """The first control character of ``text`` not in ``allow`` (e.g. ``u"\\t"``), or None."""
    for match in CONTROL.finditer(text):
        if match.group(0) not in allow:
            return match.group(0)
    return None


def describe_char(char):
    """``U+0009`` style name of one character, for messages."""
    return u"U+%04X" % ord(char)
