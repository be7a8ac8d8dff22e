# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The network rules, one home: a TCP port's range, the server's default address and port, and which bind
addresses mean every address or loopback only.

Read by the unit's checks and the serve command line (_vllm/unit.py, _vllm/serve.py), the modules that take a
port (vllm_service_host_state, vllm_wait_ready), the Prometheus target (_vllm/prometheus.py) and the gateway's
backends (_gateway/config.py). The vllm_service role's defaults (vllm_service_host, vllm_service_port) are these
values; a unit test keeps the two equal. Stdlib only.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

PORT_RANGE = (1, 65535)
# The vllm_service role's defaults (roles/vllm_service/defaults/main.yml): loopback, vLLM's own port.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Bind addresses that mean every address of a family (empty: vLLM's default).
WILDCARDS = ("0.0.0.0", "::", "[::]", "")
# Bind addresses that only this host reaches.
LOOPBACK = re.compile(r"^(?:127\.|localhost$|::1$|\[::1\]$)")
_UNSIGNED = re.compile(r"^[0-9]+\Z")


def port_number(value):
    """The TCP port ``value`` names (an int, or its decimal digits) when it is in PORT_RANGE, else None (a bool too)."""
    if isinstance(value, str) and _UNSIGNED.match(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if PORT_RANGE[0] <= value <= PORT_RANGE[1] else None


def is_wildcard(host):
    """Whether a server bound to ``host`` listens on every address (0.0.0.0, ::, [::] or empty)."""
    return str(host or "") in WILDCARDS


def is_loopback(host):
    """Whether only this host reaches a server bound to ``host`` (127.x, ::1, [::1], localhost)."""
    return LOOPBACK.match(str(host or "")) is not None
