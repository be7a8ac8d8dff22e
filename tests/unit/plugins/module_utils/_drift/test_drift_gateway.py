# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""gateway: an inference host's servers at the gateway against the inventory, in the drift report's shape (issue 29)."""
from __future__ import absolute_import, division, print_function

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drift.gateway import (
    GatewayDriftError, config_servers, gateway_findings, probes_of)
from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.config import backend_plan, render_config
from ansible_collections.inference.gpu_host.plugins.module_utils._gateway.runtime import (
    parse_servers_state, parse_stat, server_view)

MODELS = [{"name": "tiny-qwen3", "group": "tiny_qwen3_dflash", "port": 8080}]
GROUPS = {"tiny_qwen3_dflash": ["igh-fleet-a", "igh-fleet-b"]}
HOSTVARS = {
    "igh-fleet-a": {"ansible_host": "10.0.3.11", "vllm_service_host": "0.0.0.0", "vllm_service_port": 8000,
                    "vllm_service_served_model_name": "tiny-qwen3"},
    "igh-fleet-b": {"ansible_host": "10.0.3.12", "vllm_service_host": "0.0.0.0", "vllm_service_port": 8000,
                    "vllm_service_served_model_name": "tiny-qwen3"},
}
SETTINGS = {"bind_address": "0.0.0.0", "admin_socket": "/run/haproxy/admin.sock", "tls_certificate": "",
            "check_interval": 2, "timeout_connect": 5, "timeout_client": 600, "timeout_server": 600, "maxconn": 2000}

# HAProxy 2.x `show stat` (the first 40 of its columns; parse_stat takes any number) and `show servers state`
# (format 1), as the fleet's gateway answers them: igh-fleet-b put in maintenance by hand.
SHOW_STAT = (
    "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight,"
    "act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,"
    "check_status,check_code,check_duration,hrsp_1xx,\n"
    "fe_tiny-qwen3,FRONTEND,,,0,2,2000,41,9840,23001,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,0,0,2,,,,0,\n"
    "be_tiny-qwen3,igh-fleet-a,0,0,0,1,,41,9840,23001,,0,,0,0,0,0,UP,1,1,0,0,0,312,0,,1,3,1,,41,,2,0,,2,L7OK,200,3,0,\n"
    "be_tiny-qwen3,igh-fleet-b,0,0,0,1,,0,0,0,,0,,0,0,0,0,MAINT,1,1,0,0,1,12,12,,1,3,2,,0,,2,0,,0,L7OK,200,2,0,\n"
    "be_tiny-qwen3,BACKEND,0,0,0,2,200,41,9840,23001,0,0,,0,0,0,0,UP,1,1,0,,0,312,0,,1,3,0,,41,,1,0,,2,,,,0,\n"
)
SHOW_SERVERS_STATE = (
    "1\n"
    "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight "
    "srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state "
    "bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr "
    "srv_agent_addr srv_agent_port\n"
    "3 be_tiny-qwen3 1 igh-fleet-a 10.0.3.11 2 0 1 1 312 6 3 4 6 0 0 0 - 8000 - 0 0 - - 0\n"
    "3 be_tiny-qwen3 2 igh-fleet-b 10.0.3.12 0 1 1 1 12 6 3 4 6 0 0 0 - 8000 - 0 0 - - 0\n"
)


def plan():
    return backend_plan(MODELS, GROUPS, HOSTVARS)


def config():
    return render_config(plan(), SETTINGS)


def probes_from_gateway(stat_text=SHOW_STAT, state_text=SHOW_SERVERS_STATE):
    stat, state = parse_stat(stat_text), parse_servers_state(state_text)
    return {"be_tiny-qwen3/%s" % h: {"view": server_view(stat, state, "be_tiny-qwen3", h), "error": None}
            for h in GROUPS["tiny_qwen3_dflash"]}


def test_config_servers_reads_the_rendered_config():
    assert config_servers(config()) == {"be_tiny-qwen3": {"igh-fleet-a": "10.0.3.11:8000",
                                                          "igh-fleet-b": "10.0.3.12:8000"}}


def test_in_rotation_and_as_the_inventory_is_no_finding():
    assert gateway_findings("igh-fleet-a", "igh-fleet-gw", plan(), config(), probes_from_gateway()) == []


def test_a_server_in_maintenance_is_a_finding_of_its_host_only():
    found = gateway_findings("igh-fleet-b", "igh-fleet-gw", plan(), config(), probes_from_gateway())
    expected = [("igh-fleet-gw: be_tiny-qwen3/igh-fleet-b", "gateway")]
    assert [(f["drift_resource"], f["drift_kind"]) for f in found] == expected
    assert "maint" in found[0]["summary"] and found[0]["detail"]["status"] == "MAINT"
    assert set(found[0]) == {"drift_resource", "drift_kind", "summary", "detail"}


def test_drain_and_down_are_findings():
    stat = SHOW_STAT.replace(",MAINT,", ",DRAIN,").replace(",UP,1,1,0,0,0,312", ",DOWN,1,1,0,3,1,312")
    state = SHOW_SERVERS_STATE.replace("12 0 1 1 1 12", "12 0 8 1 1 12")
    probes = probes_from_gateway(stat, state)
    b = gateway_findings("igh-fleet-b", "gw", plan(), config(), probes)
    a = gateway_findings("igh-fleet-a", "gw", plan(), config(), probes)
    assert "drain" in b[0]["summary"]
    assert "DOWN" in a[0]["summary"] and a[0]["detail"]["state"] == "ready"


def test_missing_extra_and_wrong_address():
    text = config().replace("igh-fleet-b 10.0.3.12:8000", "igh-fleet-c 10.0.3.13:8000")
    text = text.replace("10.0.3.11:8000", "10.0.3.11:8001")
    a = gateway_findings("igh-fleet-a", "gw", plan(), text, probes_from_gateway())
    b = gateway_findings("igh-fleet-b", "gw", plan(), text, probes_from_gateway())
    assert [f["summary"] for f in a] == ["the gateway sends it to 10.0.3.11:8001, the inventory says 10.0.3.11:8000",
                                         "in the gateway's backend but no host of the inventory"]
    assert a[1]["drift_resource"] == "gw: be_tiny-qwen3/igh-fleet-c"
    assert [f["summary"] for f in b] == ["missing from the gateway's backend"]


def test_no_backend_or_no_config():
    for text in ("", config().replace("backend be_tiny-qwen3", "backend be_other")):
        found = gateway_findings("igh-fleet-a", "gw", plan(), text, probes_from_gateway())
        assert [f["drift_resource"] for f in found] == ["gw: be_tiny-qwen3/*"]


def test_a_host_of_no_model_has_no_finding():
    assert gateway_findings("pve1", "gw", plan(), "", {}) == []


def test_probes_of_module_results():
    results = [{"item": {"backend": "be_m", "server": "a"}, "changed": False, "failed": False,
                "before": {"state": "ready", "status": "UP", "sessions": 0}},
               {"item": {"backend": "be_m", "server": "b"}, "changed": False, "failed": False,
                "msg": "the gateway has no server be_m/b"}]
    probes = probes_of(results)
    assert probes["be_m/a"] == {"view": {"state": "ready", "status": "UP", "sessions": 0}, "error": None}
    assert probes["be_m/b"] == {"view": None, "error": "the gateway has no server be_m/b"}


def test_runtime_unread_is_a_finding():
    found = gateway_findings("igh-fleet-a", "gw", plan(), config(), {})
    assert found[0]["summary"] == "the gateway's runtime API gave no state for it: not read"


@pytest.mark.parametrize("bad_plan, bad_probes", [({}, {}), ([], [])])
def test_bad_inputs_name_what_was_expected(bad_plan, bad_probes):
    with pytest.raises(GatewayDriftError, match="must be a"):
        gateway_findings("a", "gw", bad_plan, "", bad_probes)


NAMES = st.sampled_from(["h%d" % i for i in range(6)])
ADDRESSES = st.sampled_from(["10.0.3.%d:%d" % (i, p) for i in range(1, 4) for p in (8000, 8001)])
VIEWS = st.one_of(st.none(), st.fixed_dictionaries({
    "state": st.sampled_from(["ready", "drain", "maint"]),
    "status": st.sampled_from(["UP", "DOWN", "UP 1/2", "DOWN 1/2", "MAINT", "DRAIN", "no check"]),
    "sessions": st.integers(0, 5)}))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(NAMES, ADDRESSES, min_size=1), st.dictionaries(NAMES, ADDRESSES), st.dictionaries(NAMES, VIEWS))
def test_property_findings_are_exactly_the_differences(inventory, gateway, views):
    """Over all hosts, each server finding names a real difference, and every difference has a finding."""
    hosts = sorted(inventory)
    model = {"backend": "be_m", "servers": [{"name": h, "host": h, "address": inventory[h].split(":")[0],
                                             "port": int(inventory[h].split(":")[1])} for h in hosts]}
    text = "backend be_m\n" + "".join("    server %s %s check\n" % (n, a) for n, a in sorted(gateway.items()))
    probes = {"be_m/%s" % h: {"view": v, "error": None} for h, v in views.items()}
    found = [f for h in hosts for f in gateway_findings(h, "gw", [model], text, probes)]
    by_server = {}
    for f in found:
        assert f["drift_kind"] == "gateway" and f["drift_resource"].startswith("gw: be_m/")
        by_server.setdefault(f["detail"]["server"], []).append(f)
    for name in set(inventory) | set(gateway):
        view = views.get(name)
        expected = (name not in gateway or name not in inventory or gateway[name] != inventory[name]
                    or view is None or view["state"] != "ready" or view["status"].startswith("DOWN"))
        assert bool(by_server.get(name)) == expected, (name, by_server.get(name))
    # Hosts of no model at the gateway see no finding; the extra servers are reported once.
    assert gateway_findings("elsewhere", "gw", [model], text, probes) == []
    assert len([f for f in found if f["detail"]["server"] not in inventory]) == len(set(gateway) - set(inventory))
