# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""network: the port range, the server's defaults and the wildcard / loopback addresses, one home (issue 38)."""
from __future__ import absolute_import, division, print_function

import os

import pytest
import yaml
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._common import network

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))))


def _role_yaml(*parts):
    with open(os.path.join(ROOT, "roles", *parts)) as handle:
        return yaml.safe_load(handle)


def test_the_vllm_service_role_defaults_are_the_network_defaults():
    defaults = _role_yaml("vllm_service", "defaults", "main.yml")
    assert defaults["vllm_service_port"] == network.DEFAULT_PORT
    assert defaults["vllm_service_host"] == network.DEFAULT_HOST
    spec = _role_yaml("vllm_service", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert spec["vllm_service_port"].get("default", network.DEFAULT_PORT) == network.DEFAULT_PORT


@given(st.integers(min_value=-10, max_value=70000))
def test_port_number_is_the_range(value):
    inside = network.PORT_RANGE[0] <= value <= network.PORT_RANGE[1]
    assert network.port_number(value) == (value if inside else None)
    if value >= 0:
        assert network.port_number(str(value)) == (value if inside else None)


@pytest.mark.parametrize("value", [True, False, 8000.0, " 8000", "8000\n", "0x1f", None, [8000]])
def test_port_number_refuses_what_is_not_a_port(value):
    assert network.port_number(value) is None


@pytest.mark.parametrize("host, wildcard, loopback", [
    ("0.0.0.0", True, False), ("::", True, False), ("[::]", True, False), ("", True, False), (None, True, False),
    ("127.0.0.1", False, True), ("127.0.1.1", False, True), ("::1", False, True), ("[::1]", False, True),
    ("localhost", False, True), ("10.0.3.5", False, False), ("localhost.example", False, False),
])
def test_wildcard_and_loopback(host, wildcard, loopback):
    assert network.is_wildcard(host) is wildcard
    assert network.is_loopback(host) is loopback
