# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""config: the gateway's inputs, its backends from the inventory, haproxy.cfg rendered and read back (issue 29)."""
from __future__ import absolute_import, division, print_function

import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.config import (
    GatewayError, backend_plan, check_models, haproxy_id, check_settings, memberships, render_config, sections)

SETTINGS = {"bind_address": "0.0.0.0", "tls_certificate": "", "admin_socket": "/run/haproxy/admin.sock",
            "check_interval": 2, "timeout_connect": 5, "timeout_client": 600, "timeout_server": 600, "maxconn": 4096}
MODELS = [{"name": "tiny-qwen3", "group": "tiny", "port": 8080}]
WILD = {"vllm_service_host": "0.0.0.0"}
GROUPS = {"tiny": ["igh-fleet-a", "igh-fleet-b"]}


def hostvars(**over):
    base = {"igh-fleet-a": {"ansible_host": "10.0.3.11", "vllm_service_host": "0.0.0.0"},
            "igh-fleet-b": {"ansible_host": "10.0.3.12", "vllm_service_host": "0.0.0.0", "vllm_service_port": 8001}}
    for host, values in over.items():
        base[host.replace("_", "-")].update(values)
    return base


def test_backends_from_the_group_in_inventory_order():
    plan = backend_plan(MODELS, GROUPS, hostvars())
    assert plan == [{"name": "tiny-qwen3", "port": 8080, "backend": "be_tiny-qwen3", "frontend": "fe_tiny-qwen3",
                     "api_key": "", "servers": [
                         {"name": "igh-fleet-a", "host": "igh-fleet-a", "address": "10.0.3.11", "port": 8000},
                         {"name": "igh-fleet-b", "host": "igh-fleet-b", "address": "10.0.3.12", "port": 8001}]}]


def test_address_override_then_listen_address_then_ansible_host():
    plan = backend_plan(MODELS, GROUPS, hostvars(
        igh_fleet_a={"inference_gateway_backend_address": "192.0.2.7"},
        igh_fleet_b={"vllm_service_host": "10.9.9.9"}))
    assert [s["address"] for s in plan[0]["servers"]] == ["192.0.2.7", "10.9.9.9"]
    plan = backend_plan(MODELS, {"tiny": ["gpu-x"]}, {"gpu-x": {"vllm_service_host": "::"}})
    assert plan[0]["servers"][0]["address"] == "gpu-x"


def test_the_role_defaults_count():
    # vllm_service's defaults: loopback (refused), the model directory's name as the served name.
    with pytest.raises(GatewayError, match=r"vllm_service_host of h is 127.0.0.1"):
        backend_plan(MODELS, {"tiny": ["h"]}, {"h": {}})
    with pytest.raises(GatewayError, match=r"host h serves 'Qwen3.6-27B'"):
        backend_plan(MODELS, {"tiny": ["h"]}, {"h": dict(WILD, vllm_service_model="/srv/models/Qwen3.6-27B/")})
    plan = backend_plan(MODELS, {"tiny": ["h"]}, {"h": dict(WILD, vllm_service_model="/srv/models/tiny-qwen3")})
    assert plan[0]["servers"][0]["port"] == 8000


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.1.1", "::1", "localhost"])
def test_loopback_server_is_refused_naming_the_variable(listen):
    with pytest.raises(GatewayError, match=r"vllm_service_host of igh-fleet-a is .*loopback.*inference_gateway_backend_address"):
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_host": listen}))


def test_a_host_serving_another_model_is_refused():
    with pytest.raises(GatewayError, match=r"models\[0\]: host igh-fleet-b serves 'other'"):
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_b={"vllm_service_served_model_name": "other"}))


def test_the_hosts_of_one_model_share_one_key_and_it_is_never_in_a_message():
    with pytest.raises(GatewayError, match="different vllm_service_api_key") as err:
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_api_key": "sekrit-1"}))
    assert "sekrit" not in str(err.value)
    with pytest.raises(GatewayError, match=r"vllm_service_api_key \(host igh-fleet-a\) is not valid") as err:
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_api_key": "it's-sekrit"},
                                              igh_fleet_b={"vllm_service_api_key": "it's-sekrit"}))
    assert "sekrit" not in str(err.value)
    plan = backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_api_key": "k$1"},
                                                 igh_fleet_b={"vllm_service_api_key": "k$1"}))
    assert plan[0]["api_key"] == "k$1"
    # Single quotes: HAProxy expands no $NAME there.
    assert "hdr Authorization 'Bearer k$1'" in render_config(plan, SETTINGS)


@pytest.mark.parametrize("models, message", [
    ([], r"inference_gateway_models must be a non-empty list"),
    ("tiny", r"inference_gateway_models must be a non-empty list"),
    (["tiny"], r"inference_gateway_models\[0\] must be a mapping"),
    ([{"name": "tiny", "group": "g", "port": 1, "weight": 3}], r"models\[0\] has unknown keys weight"),
    ([{"name": "a b", "group": "g", "port": 1}], r"models\[0\]\.name is 'a b'"),
    ([{"name": "a\nbind :1", "group": "g", "port": 1}], r"models\[0\]\.name holds the control character U\+000A"),
    ([{"name": "a", "group": "g", "port": 0}], r"models\[0\]\.port is 0: it must be a whole number from 1 to 65535"),
    ([{"name": "a", "group": "g", "port": True}], r"models\[0\]\.port is True"),
    ([{"name": "a", "group": "g", "port": 1}, {"name": "a", "group": "h", "port": 2}], r"models\[1\]: the model a is listed twice"),
    ([{"name": "a", "group": "g", "port": 1}, {"name": "b", "group": "h", "port": 1}], r"models\[1\]: the port 1"),
    ([{"name": "m@", "group": "g", "port": 1}, {"name": "m+", "group": "h", "port": 2}],
     r"models\[1\]: the names m@ and m\+ give one HAProxy backend, be_m_"),
])
def test_bad_models_name_the_entry(models, message):
    with pytest.raises(GatewayError, match=message):
        check_models(models)


def test_an_empty_or_missing_group_is_refused():
    with pytest.raises(GatewayError, match=r"the inventory group 'tiny' has no hosts"):
        backend_plan(MODELS, {}, {})


def test_port_given_as_digits_on_the_command_line():
    assert check_models([{"name": "a", "group": "g", "port": "8080"}])[0]["port"] == 8080


@pytest.mark.parametrize("key, value, message", [
    ("bind_address", "0.0.0.0 ssl", r"inference_gateway_bind_address is '0.0.0.0 ssl'"),
    ("bind_address", 5, r"inference_gateway_bind_address must be a string"),
    ("admin_socket", "relative.sock", r"inference_gateway_admin_socket is 'relative.sock'"),
    ("tls_certificate", "/etc/ssl/a b.pem", r"inference_gateway_tls_certificate is"),
    ("tls_certificate", "/etc/x.pem\n", r"inference_gateway_tls_certificate holds the control character U\+000A"),
    ("check_interval", 0, r"inference_gateway_check_interval is 0"),
    ("timeout_server", "long", r"inference_gateway_timeout_server is 'long'"),
    ("maxconn", -1, r"inference_gateway_maxconn is -1"),
])
def test_bad_settings_name_the_variable(key, value, message):
    with pytest.raises(GatewayError, match=message):
        check_settings(dict(SETTINGS, **{key: value}))


def test_rendered_config():
    text = render_config(backend_plan(MODELS, GROUPS, hostvars()), SETTINGS)
    parts = sections(text)
    assert parts["frontend fe_tiny-qwen3"] == [
        "bind 0.0.0.0:8080",
        'http-request return status 404 content-type text/plain string "not found" unless { path_beg /v1/ }',
        "default_backend be_tiny-qwen3"]
    backend = parts["backend be_tiny-qwen3"]
    assert "http-check send meth GET uri /v1/models" in backend
    assert """http-check expect rstring '"id": *"tiny-qwen3"'""" in backend
    assert backend[-2:] == ["server igh-fleet-a 10.0.3.11:8000 check", "server igh-fleet-b 10.0.3.12:8001 check"]
    assert "stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners" in parts["global"]


def test_tls_and_ipv6_bind():
    plan = backend_plan(MODELS, GROUPS, hostvars())
    text = render_config(plan, dict(SETTINGS, bind_address="::", tls_certificate="/etc/haproxy/gw.pem"))
    assert sections(text)["frontend fe_tiny-qwen3"][0] == "bind [::]:8080 ssl crt /etc/haproxy/gw.pem"


def test_memberships():
    models = MODELS + [{"name": "big", "group": "big", "port": 8081}]
    groups = dict(GROUPS, big=["igh-fleet-b"])
    assert memberships(models, groups, "igh-fleet-b") == [
        {"backend": "be_tiny-qwen3", "server": "igh-fleet-b"}, {"backend": "be_big", "server": "igh-fleet-b"}]
    assert memberships(models, groups, "gateway") == []
    assert memberships([], groups, "igh-fleet-b") == []


# Property tests: any valid inventory renders a config whose sections read back to exactly the plan.
NAME_CHARS = "abcXYZ019._:/@+-"
names = st.text(NAME_CHARS, min_size=1, max_size=20).map(lambda s: "m" + s)
hosts = st.lists(st.from_regex(r"\A[a-z][a-z0-9-]{0,15}\Z"), min_size=1, max_size=5, unique=True)
octet = st.integers(0, 255)


@st.composite
def inventories(draw):
    model_names = draw(st.lists(names, min_size=1, max_size=4, unique_by=haproxy_id))
    ports = draw(st.lists(st.integers(1, 65535), min_size=len(model_names), max_size=len(model_names), unique=True))
    models, groups, hv = [], {}, {}
    for index, (name, port) in enumerate(zip(model_names, ports)):
        group = "g%d" % index
        groups[group] = draw(hosts)
        models.append({"name": name, "group": group, "port": port})
        for host in groups[group]:
            hv.setdefault(host, {"ansible_host": "10.%d.%d.%d" % (draw(octet), draw(octet), draw(octet)),
                                 "vllm_service_host": "0.0.0.0", "vllm_service_port": draw(st.integers(1, 65535))})
    return models, groups, hv


@settings(max_examples=150, deadline=None)
@given(inventories())
def test_render_reads_back_to_the_plan(inventory):
    models, groups, hv = inventory
    plan = backend_plan(models, groups, hv)
    parts = sections(render_config(plan, SETTINGS))
    assert set(parts) == {"global", "defaults"} | {"frontend " + m["frontend"] for m in plan} | {
        "backend " + m["backend"] for m in plan}
    for model in plan:
        assert parts["frontend " + model["frontend"]][0] == "bind 0.0.0.0:%d" % model["port"]
        servers = [line.split() for line in parts["backend " + model["backend"]] if line.startswith("server ")]
        assert servers == [["server", h, "%s:%d" % (hv[h]["ansible_host"], hv[h]["vllm_service_port"]), "check"]
                           for h in groups[next(m["group"] for m in models if m["name"] == model["name"])]]


@settings(max_examples=200, deadline=None)
@given(names, st.sampled_from(['{"id":"%s"}', '{"id": "%s","object":"model"}']), st.text(NAME_CHARS, min_size=1, max_size=3))
def test_the_health_check_matches_the_model_and_no_other(name, shape, suffix):
    plan = backend_plan([{"name": name, "group": "g", "port": 1}], {"g": ["h"]}, {"h": WILD})
    line = [x for x in sections(render_config(plan, SETTINGS))["backend " + plan[0]["backend"]] if "rstring" in x][0]
    pattern = re.search(r"rstring '(.*)'$", line).group(1)
    assert re.search(pattern, shape % name)
    assert not re.search(pattern, shape % (name + suffix))
    assert "\\" not in pattern


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_no_value_breaks_out_of_its_line(value):
    # Whatever a model name, an address or a path holds: either refused naming the variable, or one token.
    for key in ("bind_address", "admin_socket", "tls_certificate"):
        try:
            text = render_config([], dict(SETTINGS, **{key: value}))
        except GatewayError as exc:
            assert "inference_gateway_" + key in str(exc)
        else:
            assert len(sections(text)["global"]) == 6 and not re.search(r"\s", value)
    try:
        plan = backend_plan([{"name": value, "group": "g", "port": 1}], {"g": ["h"]}, {"h": WILD})
    except GatewayError as exc:
        assert "inference_gateway_models[0].name" in str(exc)
    else:
        assert len(sections(render_config(plan, SETTINGS))["frontend " + plan[0]["frontend"]]) == 3


@given(st.dictionaries(st.from_regex(r"\A(frontend|backend) [a-z]{1,8}\Z"),
                       st.lists(st.from_regex(r"\A[a-z][a-z ]{0,20}[a-z]\Z"), max_size=4), max_size=5))
def test_sections_read_back(parts):
    text = "\n".join(key + "\n" + "".join("    %s\n" % line for line in lines) for key, lines in parts.items())
    assert sections(text) == parts


# ---- issue 38: the backends from each host's published vllm_service_result, else the same defaults ----------
def test_backends_from_the_published_result_over_the_inventory():
    # The role ran for the host in this run: its result says where it listens, whatever the inventory says.
    result = {"host": "10.0.3.21", "port": 9001, "served_model_name": "tiny-qwen3", "unit": "vllm-t.service"}
    plan = backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_result": result,
                                                              "vllm_service_port": 7000,
                                                              "vllm_service_served_model_name": "other"}))
    assert plan[0]["servers"][0] == {"name": "igh-fleet-a", "host": "igh-fleet-a", "address": "10.0.3.21",
                                     "port": 9001}


def test_a_published_loopback_or_other_model_is_refused_as_from_the_inventory():
    loop = {"host": "127.0.0.1", "port": 8000, "served_model_name": "tiny-qwen3"}
    with pytest.raises(GatewayError, match=r"vllm_service_host of igh-fleet-a is 127.0.0.1"):
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_result": loop}))
    other = {"host": "0.0.0.0", "port": 8000, "served_model_name": "other"}
    with pytest.raises(GatewayError, match=r"host igh-fleet-a serves 'other'"):
        backend_plan(MODELS, GROUPS, hostvars(igh_fleet_a={"vllm_service_result": other}))


def test_without_a_result_the_role_defaults_come_from_the_network_rules():
    from ansible_collections.inference.gpu_host.plugins.module_utils._common import network
    from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.config import service_endpoint
    assert service_endpoint({}) == {"host": network.DEFAULT_HOST, "port": network.DEFAULT_PORT,
                                    "served_model_name": None}
    assert service_endpoint({"vllm_service_model": "/m/Qwen3-8B/"})["served_model_name"] == "Qwen3-8B"
    # A result without the keys (not the role's) is not read.
    assert service_endpoint({"vllm_service_result": {"url": "x"}, "vllm_service_port": 8001})["port"] == 8001
