# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drift check at the gateway (docs/drift.md): one inference host's servers at the gateway in front of it.

Read-only inputs: the backend plan the inventory gives (_gateway/config.backend_plan), the gateway's haproxy.cfg as
it is on the gateway, and each of the host's servers as the runtime API sees it (_gateway/runtime.server_view, or
the error reading it). Out: findings in the drift report's shape ({drift_resource, drift_kind, summary, detail}),
the same the drift role's other findings have. Plain Python, stdlib only.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

KIND = "gateway"


class GatewayDriftError(ValueError):
    """An input that is not what the drift role passes; the message names it."""


def config_servers(config_text):
    """{backend: {server: "address:port"}} of a haproxy.cfg (its ``server`` lines)."""
    out, current = {}, None
    for raw in (config_text or "").split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if not raw[:1].isspace():
            current = words[1] if words[0] == "backend" and len(words) > 1 else None
            if current is not None:
                out.setdefault(current, {})
        elif current is not None and words[0] == "server" and len(words) > 2:
            out[current][words[1]] = words[2]
    return out


def _finding(gateway, backend, server, summary, detail):
    return {"drift_resource": "%s: %s/%s" % (gateway, backend, server), "drift_kind": KIND,
            "summary": summary, "detail": dict(detail, gateway=gateway, backend=backend, server=server)}


def _runtime(gateway, backend, server, probe):
    """The finding the runtime API's view of one configured server gives, or None."""
    view, error = (probe or {}).get("view"), (probe or {}).get("error")
    if view is None:
        return _finding(gateway, backend, server, "the gateway's runtime API gave no state for it: %s"
                        % (error or "not read"), {"error": error})
    if view.get("state") in ("drain", "maint"):
        return _finding(gateway, backend, server, "out of rotation at the gateway (admin state %s)" % view["state"],
                        {"state": view["state"], "status": view.get("status")})
    if str(view.get("status", "")).startswith("DOWN"):
        return _finding(gateway, backend, server, "the gateway's health check sees it %s" % view["status"],
                        {"state": view.get("state"), "status": view["status"]})
    return None


def _host_findings(host, gateway, model, configured, probes):
    backend = model["backend"]
    if backend not in configured:
        return [_finding(gateway, backend, "*", "the backend %s is missing from the gateway's haproxy.cfg" % backend,
                         {"expected": ["%s %s:%d" % (s["name"], s["address"], s["port"]) for s in model["servers"]]})]
    out = []
    have = configured[backend]
    for server in [s for s in model["servers"] if s["host"] == host]:
        want = "%s:%d" % (server["address"], server["port"])
        if server["name"] not in have:
            out.append(_finding(gateway, backend, server["name"], "missing from the gateway's backend",
                                {"expected": want, "actual": None}))
            continue
        if have[server["name"]] != want:
            out.append(_finding(gateway, backend, server["name"], "the gateway sends it to %s, the inventory says %s"
                                % (have[server["name"]], want), {"expected": want, "actual": have[server["name"]]}))
        found = _runtime(gateway, backend, server["name"], probes.get("%s/%s" % (backend, server["name"])))
        if found:
            out.append(found)
    # A server no inventory host is: reported once, on the first host of the model's group.
    if model["servers"] and model["servers"][0]["host"] == host:
        known = set(s["name"] for s in model["servers"])
        for name in sorted(set(have) - known):
            out.append(_finding(gateway, backend, name, "in the gateway's backend but no host of the inventory",
                                {"expected": None, "actual": have[name]}))
    return out


def gateway_findings(host, gateway, plan, config_text, probes):
    """The drift findings of one inventory host at its gateway (an empty list: no drift there).

    plan: _gateway/config.backend_plan's list; config_text: the gateway's haproxy.cfg; probes: {"backend/server":
    {"view": runtime.server_view's dict or None, "error": text or None}} for the host's servers.
    """
    if not isinstance(plan, list):
        raise GatewayDriftError("the gateway's backend plan must be a list, got %s" % type(plan).__name__)
    if not isinstance(probes, dict):
        raise GatewayDriftError("the gateway probes must be a mapping backend/server -> view, got %s"
                                % type(probes).__name__)
    configured = config_servers(config_text)
    out = []
    for model in plan:
        if any(s["host"] == host for s in model["servers"]):
            out.extend(_host_findings(host, gateway, model, configured, probes))
    return out


def probes_of(results):
    """{"backend/server": {view, error}} of the gateway_server module's registered loop results (check mode)."""
    out = {}
    for result in results or []:
        item = result.get("item") or {}
        key = "%s/%s" % (item.get("backend"), item.get("server"))
        # The task ignores its failures (failed_when: false): a result without ``before`` is a server the runtime
        # API does not have, or a socket it could not read; its msg says which.
        view = result.get("before")
        if isinstance(view, dict) and not result.get("skipped"):
            out[key] = {"view": view, "error": None}
        else:
            out[key] = {"view": None, "error": result.get("msg") or "not read"}
    return out


def findings(plan, host, gateway, config_text, results):
    """gateway_findings of the gateway_server module's registered loop ``results`` (the gateway_drift_findings
    filter), a GatewayDriftError for anything but a list of them."""
    if not isinstance(results, list):
        raise GatewayDriftError("expected the registered gateway_server results (a list), got %r" % (results,))
    return gateway_findings(host, gateway, plan, config_text, probes_of(results))
