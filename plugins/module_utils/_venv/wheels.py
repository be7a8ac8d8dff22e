# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""A wheel file name's tags, as the python_env role checks a prebuilt flash-attn wheel against the venv.

The local version label is read as flash-attn's prebuilt wheels spell it (``+cu12torch2.7cxx11abiFALSE``).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

_WHEEL = re.compile(
    r"^(?P<name>[A-Za-z0-9_]+)-(?P<version>[^-]+?)(?:\+(?P<local>[^-]+))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")


class WheelNameError(ValueError):
    """Not a wheel file name (the message names it)."""


def wheel_tags(filename):
    """Split a wheel file name, path or URL into its tags; local tag parts cuXY / torchA.B / cxx11abi... as keys."""
    base = filename.rsplit("/", 1)[-1].split("?", 1)[0]
    match = _WHEEL.match(base)
    if not match:
        raise WheelNameError("%s: not a wheel file name (name-version-python-abi-platform.whl)" % filename)
    tags = match.groupdict()
    local = tags.get("local") or ""
    cuda = re.search(r"cu(\d+)", local)
    torch = re.search(r"torch(\d+\.\d+)", local)
    tags["cuda_major"] = cuda.group(1)[:2] if cuda else ""
    tags["torch_minor"] = torch.group(1) if torch else ""
    tags["cxx11abi"] = ("TRUE" in local) if "cxx11abi" in local else None
    return tags
