"""module_utils/_vllm/prometheus.py: the file_sd target of an instance and the checks of the
monitoring variables (examples and Hypothesis properties)."""
import re

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.prometheus import (
    OWN_LABELS, SETTINGS, is_duration, prometheus_target)

BASE = {
    "inventory_hostname": "ct129", "inventory_hosts": ["ct129", "prom1"], "ansible_host": "", "monitoring_host": "ct129",
    "host": "0.0.0.0", "port": 30000, "target": "", "labels": {}, "instance": "tiny", "served_model_name": "tiny-qwen3",
    "vllm_version": "0.32.0", "file_sd_dir": "/etc/prometheus/file_sd/vllm", "rules_dir": "/etc/prometheus/rules/vllm",
    "restart_count": 3, "acceptance_min": 0.1, "draft_rate_min": 0, "down_for": "10m", "restart_window": "1h",
    "acceptance_window": "15m", "acceptance_for": "15m"}


def plan(**changes):
    return prometheus_target(dict(BASE, **changes))


def test_defaults_on_its_own_monitoring_host():
    got = plan()
    assert got["errors"] == []
    assert got["file_sd"] == [{"targets": ["127.0.0.1:30000"], "labels": {
        "instance": "ct129:30000", "vllm_instance": "tiny", "served_model_name": "tiny-qwen3", "vllm_version": "0.32.0"}}]
    assert got["target_file"] == "/etc/prometheus/file_sd/vllm/ct129-tiny.json"
    assert got["rules_file"] == "/etc/prometheus/rules/vllm/ct129-tiny.yml"


@pytest.mark.parametrize("changes, address", [
    ({"monitoring_host": "prom1", "ansible_host": "10.0.3.9"}, "10.0.3.9:30000"),
    ({"monitoring_host": "prom1"}, "ct129:30000"),
    ({"monitoring_host": "prom1", "host": "::", "ansible_host": "fd00::9"}, "[fd00::9]:30000"),
    ({"host": "10.0.0.5"}, "10.0.0.5:30000"),
    ({"host": "127.0.0.1"}, "127.0.0.1:30000"),
    ({"host": "127.0.0.1", "monitoring_host": "prom1", "target": "proxy:443"}, "proxy:443"),
])
def test_the_address_prometheus_scrapes(changes, address):
    got = plan(**changes)
    assert got["errors"] == [] and got["address"] == address
    assert got["labels"]["instance"] == "ct129:30000"


def test_a_loopback_server_cannot_be_scraped_from_another_host():
    [error] = plan(host="127.0.0.1", monitoring_host="prom1")["errors"]
    assert error.startswith("vllm_service_host=127.0.0.1 listens on loopback only")


def test_check_mode_before_install_leaves_the_version_label_out():
    assert "vllm_version" not in plan(vllm_version="")["labels"]


def test_every_bad_variable_is_named_at_once():
    errors = plan(monitoring_host="nowhere", file_sd_dir="rel/dir", down_for="10 minutes", acceptance_for="0s",
                  restart_count=0, acceptance_min="1", draft_rate_min=-1, labels={"job": "x", "_a": "b", "env": 1})["errors"]
    text = " ".join(errors)
    for name in ("vllm_service_prometheus_host=nowhere", "vllm_service_prometheus.file_sd_dir=rel/dir",
                 "vllm_service_prometheus.down_for=10 minutes", "vllm_service_prometheus.acceptance_for=0s",
                 "vllm_service_prometheus.restart_count=0", "vllm_service_prometheus.acceptance_min=1",
                 "vllm_service_prometheus.draft_rate_min=-1", "vllm_service_prometheus_labels: _a, env, job"):
        assert name in text, text
    assert len(errors) == 7  # the durations share one message


def test_missing_or_unknown_settings_are_a_programming_error():
    with pytest.raises(ValueError, match="missing settings.*port"):
        prometheus_target(dict((k, v) for k, v in BASE.items() if k != "port"))
    with pytest.raises(ValueError, match="unknown settings.*colour"):
        prometheus_target(dict(BASE, colour="red"))
    assert set(BASE) == set(SETTINGS)


@pytest.mark.parametrize("value", ["10m", "1h30m", "90s", "500ms", "1y2w3d4h5m6s7ms", "2d"])
def test_durations_prometheus_reads(value):
    assert is_duration(value)


@pytest.mark.parametrize("value", ["", "0", "0s", "10", "10 m", "10minutes", "m", "30m1h", "1.5h", "-5m", 10, None])
def test_not_durations(value):
    assert not is_duration(value)


UNITS = ["y", "w", "d", "h", "m", "s", "ms"]


@given(st.lists(st.tuples(st.sampled_from(range(len(UNITS))), st.integers(1, 10 ** 6)), min_size=1, max_size=7,
                unique_by=lambda t: t[0]))
def test_any_ordered_sum_of_units_is_a_duration(parts):
    assert is_duration("".join("%d%s" % (n, UNITS[i]) for i, n in sorted(parts)))


@given(st.dictionaries(st.text(min_size=1, max_size=12), st.one_of(st.text(max_size=8), st.integers()), max_size=5),
       st.text(max_size=20))
def test_labels_never_override_the_roles_own_and_errors_name_each_bad_one(labels, host):
    got = plan(labels=labels, host=host)
    assert got["labels"]["instance"] == "ct129:30000" and got["labels"]["vllm_instance"] == "tiny"
    bad = [k for k, v in labels.items()
           if not re.match(r"^[a-zA-Z][a-zA-Z0-9_]*\Z", k) or k in OWN_LABELS or not isinstance(v, str)]
    label_errors = [e for e in got["errors"] if e.startswith("vllm_service_prometheus_labels")]
    assert bool(bad) == bool(label_errors)
    for key in bad:
        assert key in label_errors[0]
    assert all(isinstance(v, str) and v for v in got["labels"].values())


# ---- vllm_service_prometheus_target: host:port exactly (issue 27: a scheme or a newline was accepted) ----

@pytest.mark.parametrize("target", ["proxy:443", "10.0.3.9:30000", "[::1]:8000", "[fd00::9]:30000",
                                    "prom-proxy.example.org:9400", "host_name:1", "a:65535"])
def test_scrape_targets_prometheus_takes(target):
    got = plan(host="127.0.0.1", monitoring_host="prom1", target=target)
    assert got["errors"] == [] and got["address"] == target and got["file_sd"][0]["targets"] == [target]


@pytest.mark.parametrize("target", ["http://proxy:443", "https://proxy:443/metrics", "proxy:443/metrics", "proxy:443\n",
                                    "proxy:443\nExecStartPre=/bin/sh", "proxy :443", " proxy:443", "proxy:443 ",
                                    "proxy\t:443", "proxy\x00:443", "proxy:443\r", "proxy", "proxy:", ":443", "proxy:0",
                                    "proxy:65536", "user@proxy:443", "::1:8000", "[::1]", "[10.0.0.1]:80", "-x:80",
                                    "pr\u00f6xy:443", 443, ["proxy:443"]])
def test_a_target_with_a_scheme_path_space_or_control_character_is_refused(target):
    errors = plan(host="127.0.0.1", monitoring_host="prom1", target=target)["errors"]
    assert len(errors) == 1 and errors[0].startswith("vllm_service_prometheus_target=%r" % (target,)), errors
    assert "expected host:port" in errors[0]


@given(st.text(max_size=30))
def test_an_accepted_target_is_one_host_and_a_port(target):
    errors = plan(host="127.0.0.1", monitoring_host="prom1", target=target)["errors"]
    if target and not errors:
        host, dummy, port = target.rpartition(":")
        assert 1 <= int(port) <= 65535 and host and host.isascii()
        assert not any(c in target for c in "/@ \t\r\n\x00?#") and all(c.isprintable() for c in target)
