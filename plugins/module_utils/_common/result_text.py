# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Text that goes into a module's result: valid UTF-8, at most a given length.

Ansible's controller refuses a result that holds a lone surrogate (from surrogateescape decoding or
JSON's ``\\udcxx`` escapes), and a log line or a command's output can be any size: every string the
vLLM log reader, the probe and the systemd reader return passes through ``safe_text``.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

__all__ = ["safe_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_CLIP_MARK = " [... cut: %d characters in all]"


def safe_text(text, limit=None):
    """``text`` as valid UTF-8 (lone surrogates replaced by U+FFFD), at most ``limit`` characters plus a marker.

    None stays None; anything else that is not a str is turned into one first.
    """
    if text is None:
        return None
    if not isinstance(text, str):
        text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + _CLIP_MARK % len(text)
    return text
