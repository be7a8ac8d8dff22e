# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The Prometheus side of one served vLLM instance: the file_sd target (address and labels),
the two file names on the monitoring host, and the checks of the role's monitoring variables.

Pure functions of the role's variables, used by the vllm_service role through the
``vllm_prometheus_target`` filter; docs/monitoring.md says what each value means.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ipaddress
import posixpath
import re
from collections.abc import Mapping

from ansible_collections.inference.gpu_host.plugins.module_utils._common.network import (
    PORT_RANGE, is_loopback, is_wildcard, port_number)

# A Prometheus duration (prometheus/common model.ParseDuration): units largest first, each at most once.
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
# A label name a target may carry (names starting with "__" are Prometheus' own).
_LABEL_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
# A decimal number >= 0 as Prometheus reads it in a rule (values from -e arrive as strings).
_NUMBER = re.compile(r"^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
# A scrape target as file_sd takes it: host:port, nothing more. A host name (letters, digits, "-", "_" and dots),
# an IPv4 address, or an IPv6 address in brackets; no scheme, path, user, space or control character, which
# Prometheus would refuse (the whole file, every target of it) or read as something else.
_TARGET = re.compile(r"(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9][A-Za-z0-9_.-]{0,252})):([0-9]{1,5})")
# Labels the role sets itself (and "job", which the monitoring host's scrape config sets).
OWN_LABELS = ("instance", "job", "vllm_instance", "served_model_name", "vllm_version")
DURATIONS = ("down_for", "restart_window", "acceptance_window", "acceptance_for")
SETTINGS = ("inventory_hostname", "inventory_hosts", "ansible_host", "monitoring_host", "host", "port", "target",
            "labels", "instance", "served_model_name", "vllm_version", "file_sd_dir", "rules_dir",
            "restart_count", "acceptance_min", "draft_rate_min") + DURATIONS


def is_duration(value):
    """True for a Prometheus duration such as 10m, 1h30m or 90s (not 0, not '10 minutes')."""
    if not isinstance(value, str):
        return False
    match = _DURATION.match(value)
    return bool(match) and any(match.groups()) and any(int(g) for g in match.groups() if g)


def _number(value):
    """The float of a number >= 0 given as a number or its text, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return float(value)
    return None


def _scrape_host(settings):
    """The host part Prometheus connects to: a wildcard bind is this host's loopback seen from
    itself, its inventory address seen from another host."""
    host = str(settings["host"] or "")
    if not is_wildcard(host):
        return host
    if settings["monitoring_host"] == settings["inventory_hostname"]:
        return "127.0.0.1"
    return str(settings["ansible_host"] or settings["inventory_hostname"])


def target_error(target):
    """None when ``target`` is a scrape address host:port, else what is wrong with it (naming the variable)."""
    shown = repr(target) if isinstance(target, str) else "%r (type %s)" % (target, type(target).__name__)
    match = _TARGET.fullmatch(target) if isinstance(target, str) else None  # fullmatch: "$" allows a final newline
    ok = match is not None and port_number(match.group(3)) is not None
    if ok and match.group(1):
        try:
            ok = ipaddress.ip_address(match.group(1)).version == 6
        except ValueError:
            ok = False
    if ok:
        return None
    return ("vllm_service_prometheus_target=%s: expected host:port, the address Prometheus scrapes /metrics at (a "
            "host name, an IPv4 address or an [IPv6] address, and a port %d-%d), without a scheme, path, spaces or "
            "control characters (e.g. proxy.example:9400)." % ((shown[:300],) + PORT_RANGE))


def _errors(s):
    errors = []
    if s["target"] not in ("", None):
        error = target_error(s["target"])
        if error:
            errors.append(error)
    if s["monitoring_host"] not in s["inventory_hosts"]:
        errors.append("vllm_service_prometheus_host=%s is not a host of the inventory (the monitoring host)."
                      % s["monitoring_host"])
    elif (not s["target"] and s["monitoring_host"] != s["inventory_hostname"]
          and is_loopback(s["host"])):
        errors.append(
            "vllm_service_host=%s listens on loopback only, so %s (vllm_service_prometheus_host) cannot scrape it: set "
            "vllm_service_prometheus_target to an address that reaches the server (a proxy, a tunnel) or monitor from "
            "%s itself." % (s["host"], s["monitoring_host"], s["inventory_hostname"]))
    for name in ("file_sd_dir", "rules_dir"):
        value = s[name]
        if not isinstance(value, str) or not posixpath.isabs(value):
            errors.append("vllm_service_prometheus.%s=%s must be an absolute path." % (name, value))
    bad = ["vllm_service_prometheus.%s=%s" % (name, s[name]) for name in DURATIONS if not is_duration(s[name])]
    if bad:
        errors.append("%s: expected a Prometheus duration like 10m or 1h30m." % ", ".join(bad))
    count = s["restart_count"]
    if isinstance(count, bool) or not re.match(r"^\d+$", str(count).strip()) or int(str(count).strip()) < 1:
        errors.append("vllm_service_prometheus.restart_count=%s: expected an integer >= 1 (restarts within the window)."
                      % count)
    ratio = _number(s["acceptance_min"])
    if ratio is None or not 0 < ratio < 1:
        errors.append("vllm_service_prometheus.acceptance_min=%s: expected a ratio of accepted to draft tokens between "
                      "0 and 1, e.g. 0.1." % s["acceptance_min"])
    if _number(s["draft_rate_min"]) is None:
        errors.append("vllm_service_prometheus.draft_rate_min=%s: expected draft tokens per second >= 0."
                      % s["draft_rate_min"])
    labels = s["labels"]
    if not isinstance(labels, dict):
        errors.append("vllm_service_prometheus_labels: expected a mapping of label names to strings, got %r." % (labels,))
    else:
        wrong = sorted(str(k) for k, v in labels.items()
                       if not isinstance(k, str) or not _LABEL_NAME.match(k) or k in OWN_LABELS or not isinstance(v, str))
        if wrong:
            errors.append(
                "vllm_service_prometheus_labels: %s: expected Prometheus label names (letters, digits, _; not starting "
                "with _) mapped to strings (quote numbers), none of %s (the role sets those)."
                % (", ".join(wrong), ", ".join(OWN_LABELS)))
    return errors


def prometheus_target(settings):
    """What the role writes for one instance, and what is wrong with its variables.

    ``settings`` holds SETTINGS (the role's variables without ``vllm_service_prometheus_``/
    ``vllm_service_``). Returns ``errors`` (messages naming each variable; empty when all is
    well) and, always, ``instance`` (the instance label), ``address`` (host:port scraped),
    ``labels``, ``file_sd`` (the target file's content), ``target_file`` and ``rules_file``.
    """
    missing = [key for key in SETTINGS if key not in settings]
    unknown = sorted(set(settings) - set(SETTINGS))
    if missing or unknown:
        raise ValueError("missing settings %s, unknown settings %s (expected: %s)"
                         % (missing or "none", unknown or "none", ", ".join(SETTINGS)))
    s = dict(settings)
    errors = _errors(s)
    instance = "%s:%s" % (s["inventory_hostname"], s["port"])
    if s["target"]:
        address = str(s["target"])
    else:
        host = _scrape_host(s)
        address = "%s:%s" % ("[%s]" % host.strip("[]") if ":" in host else host, s["port"])
    labels = dict(s["labels"]) if isinstance(s["labels"], dict) else {}
    labels.update({"instance": instance, "vllm_instance": s["instance"], "served_model_name": s["served_model_name"],
                   "vllm_version": s["vllm_version"]})
    # An empty value (the vLLM version in check mode before it is installed) is no label.
    labels = dict((k, str(v)) for k, v in labels.items() if v not in ("", None))
    stem = "%s-%s" % (s["inventory_hostname"], s["instance"])
    return {
        "errors": errors,
        "instance": instance,
        "address": address,
        "labels": labels,
        "file_sd": [{"targets": [address], "labels": labels}],
        "target_file": posixpath.join(str(s["file_sd_dir"]), stem + ".json"),
        "rules_file": posixpath.join(str(s["rules_dir"]), stem + ".yml"),
    }


def checked_target(settings):
    """prometheus_target of a mapping of SETTINGS (the vllm_prometheus_target filter), a ValueError for anything
    else."""
    if not isinstance(settings, Mapping):
        raise ValueError("expected a dict of settings, got %s" % type(settings).__name__)
    return prometheus_target(settings)
