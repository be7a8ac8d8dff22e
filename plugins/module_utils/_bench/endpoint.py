# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What a benchmark needs to know about the served instance, from either source:

- the vllm_service role's record on the host (/etc/ansible/facts.d/inference_vllm_service_<instance>.fact:
  unit, url, served_model_name, model, venv, speculative_config), which a standalone benchmark reads;
- the endpoint the vllm_service role passes to the gate after readiness (url, served_model_name, model, venv,
  unit_path, env_file, drafter_dir).

endpoint() adds host and port (of the url) and unit (the unit file's name); served_endpoint() also the baseline's
runtime drop-in of that unit (the bench_endpoint filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import posixpath

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import baseline

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 on a managed node
    from urlparse import urlsplit

UNIT_DIR = "/etc/systemd/system"
FIELDS = ("url", "served_model_name", "model", "venv", "unit_path", "env_file", "drafter_dir")


class EndpointError(ValueError):
    """The record or endpoint lacks what a benchmark needs (the message names the keys)."""


def _text(value):
    return value if isinstance(value, str) else ""


def endpoint(source, env_file):
    """The seven FIELDS, from a vllm_service record or a gate endpoint; ``env_file`` is the environment file
    to use when ``source`` names none."""
    if not isinstance(source, dict):
        raise EndpointError("expected the vllm_service record or serving_benchmark_endpoint as a mapping, got %s"
                            % type(source).__name__)
    out = dict((k, _text(source.get(k))) for k in FIELDS)
    unit = _text(source.get("unit"))
    if not out["unit_path"] and unit:
        out["unit_path"] = posixpath.join(UNIT_DIR, unit)
    if not out["drafter_dir"]:
        spec = source.get("speculative_config")
        out["drafter_dir"] = _text(spec.get("model")) if isinstance(spec, dict) else ""
    out["env_file"] = out["env_file"] or _text(env_file)
    missing = [k for k in FIELDS if k != "drafter_dir" and not out[k]]
    if missing:
        raise EndpointError("the served instance's %s missing (record keys: unit, url, served_model_name, model, "
                            "venv; serving_benchmark_endpoint keys: %s)" % (", ".join(missing) + (
                                " is" if len(missing) == 1 else " are"), ", ".join(FIELDS)))
    out.update(_host_port(out["url"]))
    out["unit"] = posixpath.basename(out["unit_path"])
    return out


def _host_port(url):
    """{host, port} of the instance's URL (http://host:port/v1), for the readiness waits of the baseline."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        port = None
        parts = None
    if parts is None or parts.scheme != "http" or not parts.hostname or not port:
        raise EndpointError("the served instance's url %r: expected http://host:port/v1" % (url,))
    return {"host": parts.hostname, "port": port}


def served_endpoint(source, env_file):
    """endpoint() and "dropin", the baseline's runtime drop-in of its unit (baseline.dropin_path): the bench_endpoint
    filter. A unit that is not a service's is an EndpointError here, before anything reads the host."""
    out = endpoint(source, env_file)
    try:
        out["dropin"] = baseline.dropin_path(out["unit"])
    except baseline.BaselineError as exc:
        raise EndpointError(str(exc))
    return out
