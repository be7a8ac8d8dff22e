# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The inference gateway's decisions: its inputs checked, the backends taken from the hosts, haproxy.cfg rendered.

One frontend (its own port) per served model, one backend per frontend whose servers are the hosts of the
inventory group serving that model, each where its vllm_service_result says it listens (service_endpoint). Only
``/v1/`` is routed; a server is in rotation while ``GET /v1/models`` (with the model's API key, where the hosts set
one) names the model. The API key is passed through to vLLM, which checks it (docs/fleet.md says why). Every value
that reaches haproxy.cfg is checked here first, and a bad one is named by its variable: a space or a newline in a
value would start another HAProxy keyword.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

from ansible_collections.inference.gpu_host.plugins.module_utils._common.network import (
    DEFAULT_HOST, DEFAULT_PORT, PORT_RANGE, is_loopback, is_wildcard)
from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import describe_char, first_control

PREFIX = "inference_gateway_"
# What a served model name, an inventory host or group may be to reach haproxy.cfg unquoted (and to be a regex
# that matches itself once dots are escaped): vLLM's names in practice (Qwen3.6-27B, org/model:tag).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
# HAProxy's own rule for proxy and server names.
HAPROXY_ID = re.compile(r"[^A-Za-z0-9_.:-]")
ADDRESS = re.compile(r"^[A-Za-z0-9._:\[\]-]{1,253}$")
PATH = re.compile(r"^/[A-Za-z0-9._/@+-]{0,4095}$")
# The API key goes into the health check's header in single quotes (HAProxy expands nothing there; a double
# quoted string would expand $NAME): printable ASCII without the single quote.
API_KEY = re.compile(r"^[\x20-\x26\x28-\x7e]{0,4096}$")
SECONDS = {
    "check_interval": (1, 3600),
    "timeout_connect": (1, 3600),
    "timeout_client": (1, 86400),
    "timeout_server": (1, 86400),
}


class GatewayError(ValueError):
    """A gateway input that cannot make a valid haproxy.cfg; the message names the variable."""


def _text(variable, value, pattern, what, secret=False):
    """``value`` when it is a string ``pattern`` matches; a secret's value is never put in the message."""
    if not isinstance(value, str):
        raise GatewayError("%s must be a string (%s), got %s" % (variable, what, type(value).__name__))
    bad = first_control(value)
    if bad is not None:
        raise GatewayError("%s holds the control character %s: it would end the haproxy.cfg line"
                           % (variable, describe_char(bad)))
    if not pattern.match(value):
        raise GatewayError("%s %s: it must be %s" % (variable, "is not valid" if secret else "is %r" % value, what))
    return value


def _int(variable, value, low, high):
    """A whole number in [low, high]; digits in a string count (``-e name=5`` gives a string)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise GatewayError("%s is %r: it must be a whole number from %d to %d" % (variable, value, low, high))
    return value


def check_settings(settings):
    """The role's scalar inputs (keys without the ``inference_gateway_`` prefix), checked; a copy."""
    out = dict(settings)
    _text(PREFIX + "bind_address", out.get("bind_address"), ADDRESS, "an address HAProxy binds (0.0.0.0, ::, 10.0.3.5)")
    _text(PREFIX + "admin_socket", out.get("admin_socket"), PATH, "an absolute path without spaces")
    cert = out.get("tls_certificate") or ""
    if cert:
        _text(PREFIX + "tls_certificate", cert, PATH, "empty (no TLS) or the absolute path of a PEM on the gateway")
    out["tls_certificate"] = cert
    for key, (low, high) in SECONDS.items():
        out[key] = _int(PREFIX + key, out.get(key), low, high)
    out["maxconn"] = _int(PREFIX + "maxconn", out.get("maxconn"), 1, 1000000)
    return out


def check_models(models):
    """``inference_gateway_models`` checked (a copy): a list of {name, group, port}, names and ports unique."""
    variable = PREFIX + "models"
    if not isinstance(models, list) or not models:
        raise GatewayError("%s must be a non-empty list of {name, group, port}" % variable)
    seen_names, seen_ports, seen_ids, out = set(), set(), {}, []
    for index, entry in enumerate(models):
        where = "%s[%d]" % (variable, index)
        if not isinstance(entry, dict):
            raise GatewayError("%s must be a mapping {name, group, port}, got %s" % (where, type(entry).__name__))
        entry = dict(entry)
        unknown = sorted(set(entry) - {"name", "group", "port"})
        if unknown:
            raise GatewayError("%s has unknown keys %s (known: name, group, port)" % (where, ", ".join(unknown)))
        name = _text(where + ".name", entry.get("name"), NAME, "the served model name (vllm_service_served_model_name)")
        _text(where + ".group", entry.get("group"), NAME, "the inventory group of the hosts serving it")
        port = entry["port"] = _int(where + ".port", entry.get("port"), *PORT_RANGE)
        if name in seen_names:
            raise GatewayError("%s: the model %s is listed twice" % (where, name))
        if port in seen_ports:
            raise GatewayError("%s: the port %d is already another model's frontend" % (where, port))
        if backend_name(name) in seen_ids:
            raise GatewayError("%s: the names %s and %s give one HAProxy backend, %s (HAProxy allows only letters, "
                               "digits, _ . : -)" % (where, seen_ids[backend_name(name)], name, backend_name(name)))
        seen_ids[backend_name(name)] = name
        seen_names.add(name)
        seen_ports.add(port)
        out.append(entry)
    return out


def haproxy_id(text):
    """A name HAProxy accepts for a proxy or a server (other characters become ``_``)."""
    return HAPROXY_ID.sub("_", text)


def backend_name(model):
    return "be_" + haproxy_id(model)


def service_endpoint(hostvars):
    """Where one host's vLLM listens and what it serves: {"host", "port", "served_model_name" (None: not told)}.

    Its published vllm_service_result when the vllm_service role ran for it in this run; else its inventory
    variables with that role's defaults (_common/network.py's DEFAULT_HOST and DEFAULT_PORT, the model directory's
    name as the served name), which are what the role would publish.
    """
    result = hostvars.get("vllm_service_result")
    if isinstance(result, Mapping) and all(key in result for key in ("host", "port", "served_model_name")):
        return {"host": str(result["host"] or ""), "port": result["port"],
                "served_model_name": result["served_model_name"]}
    served = hostvars.get("vllm_service_served_model_name")
    if served is None and hostvars.get("vllm_service_model"):
        served = str(hostvars["vllm_service_model"]).rstrip("/").rsplit("/", 1)[-1]
    return {"host": str(hostvars.get("vllm_service_host", DEFAULT_HOST) or ""),
            "port": hostvars.get("vllm_service_port", DEFAULT_PORT), "served_model_name": served}


def server_address(host, hostvars, listen):
    """Where the gateway reaches one host's vLLM: its override, the address it listens on (``listen``,
    service_endpoint's "host"), else its ansible_host."""
    own = hostvars.get(PREFIX + "backend_address") or ""
    if own:
        return _text("%s (host %s)" % (PREFIX + "backend_address", host), own, ADDRESS, "an address")
    if is_loopback(listen):
        raise GatewayError(
            "vllm_service_host of %s is %s: the gateway cannot reach a server bound to loopback; bind it to the "
            "address the gateway reaches (or 0.0.0.0 behind a firewall) or set %sbackend_address" % (host, listen, PREFIX))
    if not is_wildcard(listen):
        return _text("vllm_service_host (host %s)" % host, listen, ADDRESS, "an address")
    return _text("ansible_host (host %s)" % host, str(hostvars.get("ansible_host") or host), ADDRESS, "an address")


def _server(host, hostvars, model, where):
    endpoint = service_endpoint(hostvars)
    served = endpoint["served_model_name"]
    if served is not None and served != model:
        raise GatewayError("%s: host %s serves %r (vllm_service_served_model_name), not %r" % (where, host, served, model))
    port = _int("vllm_service_port (host %s)" % host, endpoint["port"], *PORT_RANGE)
    key = hostvars.get("vllm_service_api_key") or ""
    _text("vllm_service_api_key (host %s)" % host, key, API_KEY, "printable ASCII without a single quote", secret=True)
    return {"name": haproxy_id(host), "host": host, "address": server_address(host, hostvars, endpoint["host"]),
            "port": port}, key


def backend_plan(models, groups, hostvars):
    """Per model: its frontend port, backend name, API key for the health check, and servers (inventory order).

    ``groups`` and ``hostvars`` are Ansible's (``hostvars[host]`` a mapping of that host's variables). All hosts of
    a model must share one API key: a client sends one key, whichever server it reaches.
    """
    plan = []
    for index, entry in enumerate(check_models(models)):
        where = "%smodels[%d]" % (PREFIX, index)
        hosts = list(groups.get(entry["group"]) or [])
        if not hosts:
            raise GatewayError("%s: the inventory group %r has no hosts (or does not exist)" % (where, entry["group"]))
        servers, keys = [], set()
        for host in hosts:
            server, key = _server(host, hostvars[host], entry["name"], where)
            servers.append(server)
            keys.add(key)
        if len(keys) > 1:
            raise GatewayError("%s: the hosts of group %s set different vllm_service_api_key values; a client sends one "
                               "key whichever server it reaches" % (where, entry["group"]))
        names = [s["name"] for s in servers]
        if len(set(names)) != len(names):
            raise GatewayError("%s: two hosts of group %s have the same HAProxy server name" % (where, entry["group"]))
        plan.append({"name": entry["name"], "port": entry["port"], "backend": backend_name(entry["name"]),
                     "frontend": "fe_" + haproxy_id(entry["name"]), "api_key": keys.pop(), "servers": servers})
    return plan


def memberships(models, groups, host):
    """The (backend, server) pairs of one inventory host at the gateway: what a rolling change drains.

    No models (no gateway in the inventory) is no pair; a list that is there is checked as the role checks it.
    """
    if not models:
        return []
    return [{"backend": backend_name(m["name"]), "server": haproxy_id(host)}
            for m in check_models(models) if host in (groups.get(m["group"]) or [])]


def _global(settings):
    return [
        "global",
        "    log /dev/log local0",
        "    user haproxy",
        "    group haproxy",
        "    maxconn %d" % settings["maxconn"],
        # level admin: drain and ready (playbooks/rolling.yml); expose-fd: the reload hands the listening
        # sockets over, so no connection is refused while the new process starts.
        "    stats socket %s mode 660 level admin expose-fd listeners" % settings["admin_socket"],
        "    stats timeout 30s",
        "",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    option redispatch",
        # A request whose connection failed or got no byte back goes to another server: a server that stops
        # between its last check and the request costs a retry, not a failed request.
        "    retries 2",
        "    retry-on conn-failure empty-response",
        "    timeout connect %ds" % settings["timeout_connect"],
        "    timeout client %ds" % settings["timeout_client"],
        "    timeout server %ds" % settings["timeout_server"],
        "    timeout http-request 10s",
        "",
    ]


def _model_sections(model, settings):
    tls = " ssl crt %s" % settings["tls_certificate"] if settings["tls_certificate"] else ""
    bind = settings["bind_address"]
    bind = "[%s]" % bind if ":" in bind and not bind.startswith("[") else bind
    check = ["    option httpchk", "    http-check send meth GET uri /v1/models" + (
        " hdr Authorization 'Bearer %s'" % model["api_key"] if model["api_key"] else "")]
    # Ready means vLLM lists the model (/health answers before the model is loaded). The name's regex
    # characters (. and +, NAME allows no others) become classes: no backslash for HAProxy's parser to read.
    pattern = model["name"].replace(".", "[.]").replace("+", "[+]")
    check.append("""    http-check expect rstring '"id": *"%s"'""" % pattern)
    lines = [
        "frontend %s" % model["frontend"],
        "    bind %s:%d%s" % (bind, model["port"], tls),
        # Only the OpenAI API: vLLM leaves /invocations, /tokenize and others open without the key.
        '    http-request return status 404 content-type text/plain string "not found" unless { path_beg /v1/ }',
        "    default_backend %s" % model["backend"],
        "",
        "backend %s" % model["backend"],
        "    balance leastconn",
    ] + check + ["    default-server inter %ds fall 2 rise 2" % settings["check_interval"]]
    lines += ["    server %s %s:%d check" % (s["name"], s["address"], s["port"]) for s in model["servers"]]
    return lines + [""]


def render_config(plan, settings):
    """haproxy.cfg for the plan (backend_plan) and the checked settings (check_settings)."""
    settings = check_settings(settings)
    lines = ["# Managed by inference.gpu_host.inference_gateway: changes here are overwritten.", ""]
    lines += _global(settings)
    for model in plan:
        lines += _model_sections(model, settings)
    return "\n".join(lines)


def sections(text):
    """haproxy.cfg read back: {"<keyword> <name>": [its lines, stripped]} (comments and blank lines left out)."""
    out, current = {}, None
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if raw[:1].isspace():
            if current is None:
                raise ValueError("an indented line before any section: %r" % raw)
            out[current].append(line)
        else:
            current = line
            if current in out:
                raise ValueError("section %r twice" % current)
            out[current] = []
    return out


def gateway_plan(models, groups, hostvars, settings=None):
    """{"backends": backend_plan(...), "config": render_config(backends, settings)} (None without ``settings``): the
    gateway_plan filter."""
    backends = backend_plan(models, groups, hostvars)
    return {"backends": backends, "config": None if settings is None else render_config(backends, settings)}
