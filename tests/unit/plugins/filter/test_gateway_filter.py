# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The gateway filters (plugins/filter/gateway.py): plumbing to module_utils/_gateway/config.py, a bad value an
AnsibleFilterError naming its variable, and one documentation file per filter."""

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.gateway import FilterModule

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
MODELS = [{"name": "tiny", "group": "g", "port": 8080}]
SETTINGS = {"bind_address": "0.0.0.0", "tls_certificate": "", "admin_socket": "/run/haproxy/admin.sock",
            "check_interval": 2, "timeout_connect": 5, "timeout_client": 600, "timeout_server": 600, "maxconn": 10}


def test_each_filter_has_its_documentation_file():
    for name in FILTERS:
        with open(os.path.join(FILTER_DIR, name + ".yml")) as fh:
            assert yaml.safe_load(fh)["DOCUMENTATION"]["name"] == name


def test_plan_config_memberships():
    hostvars = {"h1": {"ansible_host": "10.0.3.9", "vllm_service_host": "0.0.0.0"}}
    plan = FILTERS["gateway_plan"](MODELS, {"g": ["h1"]}, hostvars)
    assert plan["backends"][0]["servers"][0]["address"] == "10.0.3.9" and plan["config"] is None
    config = FILTERS["gateway_plan"](MODELS, {"g": ["h1"]}, hostvars, SETTINGS)["config"]
    assert "server h1 10.0.3.9:8000 check" in config
    assert FILTERS["gateway_memberships"](MODELS, {"g": ["h1"]}, "h1") == [{"backend": "be_tiny", "server": "h1"}]


@pytest.mark.parametrize("name, args, message", [
    ("gateway_plan", ([], {}, {}), "^gateway_plan: inference_gateway_models must be a non-empty list"),
    ("gateway_plan", (MODELS, {"g": ["h1"]}, {"h1": {"vllm_service_host": "0.0.0.0"}}, dict(SETTINGS, maxconn=0)),
     "inference_gateway_maxconn is 0"),
    ("gateway_memberships", ([{"name": "x"}], {}, "h"), r"inference_gateway_models\[0\]\.group must be a string"),
])
def test_bad_values_are_filter_errors_naming_the_variable(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)
