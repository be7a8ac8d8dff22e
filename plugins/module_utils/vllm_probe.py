# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Asking a running vLLM server whether it serves: the HTTP requests and the captured-layers check
# that vllm_wait_ready (waiting after a change) and vllm_service_host_state (one look on a run
# with nothing to change: BENCHMARKS.md) share.

import ipaddress
import json
import os
import re
import socket
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.urls import open_url

from ansible_collections.inference.gpu_host.plugins.module_utils.dflash import captured_layers_verdict, read_json_file
from ansible_collections.inference.gpu_host.plugins.module_utils.vllm_log import find_captured_layers, safe_text

# A body larger than this is cut: /metrics of a big server is a few hundred KiB; a misbehaving
# server (or something else on the port) must not fill the node's memory.
MAX_BODY = 8 * 1024 * 1024
SPEC_METRICS = {
    "vllm:spec_decode_num_draft_tokens_total": "num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens_total": "num_accepted_tokens",
    "vllm:spec_decode_num_drafts_total": "num_drafts",
}
SMOKE_PROMPT = "The capital of France is"
# A bearer token goes into an HTTP header: a space or a line break there would break (or inject) a header.
API_KEY = re.compile(r"^[\x21-\x7e]+$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")


def check_host(host):
    """An error message unless ``host`` is an IP address (IPv6 with or without brackets) or a host name.

    Empty is vLLM's default bind address (every address), probed on loopback like 0.0.0.0.
    """
    if host == "":
        return None
    bracketed = host.startswith("[") and host.endswith("]")
    bare = host[1:-1] if bracketed else host
    try:
        ip = ipaddress.ip_address(bare)
    except ValueError:
        ip = None
    # Brackets only around IPv6; no zone id (fe80::1%eth0), which has no place in the URL.
    if ip is not None and "%" not in bare and (ip.version == 6 or not bracketed):
        return None
    if ip is None and not bracketed and _HOSTNAME.match(bare):
        return None
    return _host_error(host)


def _host_error(host):
    return ("host must be an IP address or a host name, without scheme, port or path (e.g. 127.0.0.1, ::1, "
            "localhost), got %r" % safe_text(host, 300))


class Http(object):
    def __init__(self, url, api_key):
        self.url = url
        self.headers = {"Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer %s" % api_key

    def request(self, path, timeout, data=None):
        """(status, body text); status None and body the error when nothing answered."""
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(data)
        try:
            resp = open_url(self.url + path, data=data, headers=headers, method="POST" if data is not None else "GET",
                            timeout=timeout, use_proxy=False, follow_redirects="none")
            return resp.getcode(), body_text(resp.read(MAX_BODY))
        except HTTPError as e:
            try:
                body = body_text(e.read(MAX_BODY))
            except Exception:  # pylint: disable=broad-except
                body = ""
            return e.code, body
        except (URLError, socket.error, socket.timeout, IOError) as e:
            return None, safe_text(str(getattr(e, "reason", e)), 500)


def body_text(data):
    # "replace", not surrogateescape: the text may reach the result, which must be valid UTF-8.
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else safe_text(data or "")


def model_ids(body):
    """The model ids /v1/models lists (strings, valid UTF-8); [] when the body is not such JSON."""
    try:
        data = json.loads(body).get("data", [])
    except (ValueError, AttributeError):
        return []
    if not isinstance(data, list):
        return []
    return [safe_text(m["id"], 500) for m in data[:1000] if isinstance(m, dict) and isinstance(m.get("id"), str)]


def served(http, served_model_name, timeout):
    """(True, model ids) when /health answers 200 and /v1/models lists the name; (False, why) otherwise."""
    status, body = http.request("/health", timeout)
    if status != 200:
        return False, safe_text("/health answered %s" % (status if status is not None else body), 1000)
    status, body = http.request("/v1/models", timeout)
    if status != 200:
        return False, safe_text("/v1/models answered %s" % (status if status is not None else body), 1000)
    ids = model_ids(body)
    if served_model_name not in ids:
        return False, safe_text("/v1/models lists %s, not %s" % (ids, served_model_name), 1000)
    return True, ids


def smoke(http, served_model_name, prompt, max_tokens, timeout):
    """One completion: (result dict, HTTP status, None) or (None, status or None, why it failed)."""
    body = {"model": served_model_name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    t0 = time.time()
    status, text = http.request("/v1/completions", timeout, data=body)
    latency = round(time.time() - t0, 3)
    if status != 200:
        return None, status, "the smoke completion answered %s: %s" % (
            status if status is not None else "nothing", safe_text((text or "")[:300]))
    try:
        answer = json.loads(text)
        choice = (answer.get("choices") or [{}])[0]
        tokens = (answer.get("usage") or {}).get("completion_tokens")
        generated = choice.get("text")
    except (ValueError, AttributeError, IndexError, TypeError):
        return None, status, "the smoke completion answered 200 with no JSON completion: %s" % safe_text(text[:300])
    return {"latency": latency, "completion_tokens": tokens if isinstance(tokens, int) else None,
            "text": safe_text(generated, 10000) if isinstance(generated, str) else generated}, status, None


def parse_spec_metrics(text):
    """Sum the spec-decode counters over their label sets (one per engine)."""
    found = {}
    for line in (text or "").splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        key = SPEC_METRICS.get(name)
        if key is None:
            continue
        try:
            value = float(line.rsplit(" ", 1)[1])
        except (IndexError, ValueError):
            continue
        found[key] = found.get(key, 0.0) + value
    return found


def spec_decode(http, timeout):
    """The speculative decoding counters from /metrics: (dict, None) or (None, why they are missing)."""
    status, text = http.request("/metrics", timeout)
    if status != 200:
        return None, "/metrics answered %s" % (status if status is not None else text)
    found = parse_spec_metrics(text)
    drafted = found.get("num_draft_tokens")
    accepted = found.get("num_accepted_tokens")
    drafts = found.get("num_drafts")
    if drafted is None or accepted is None:
        return None, ("speculative decoding is on but /metrics has no "
                      "vllm:spec_decode_num_draft_tokens_total / vllm:spec_decode_num_accepted_tokens_total "
                      "(was the server started with --speculative-config?)")
    return {
        "num_draft_tokens": drafted,
        "num_accepted_tokens": accepted,
        "num_drafts": drafts,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts and accepted is not None else None,
    }, None


def captured_layers(open_log, drafter_dir):
    """The captured layers of the server's log against the drafter's trained ids.

    ``open_log``: a callable returning the log as a context manager of lines (the unit's journal
    of this start, or a log file). Returns (verdict as dflash.captured_layers_verdict makes it,
    a warning or None).
    """
    path = os.path.join(drafter_dir, "config.json")
    warning = None
    try:
        config = read_json_file(path)[1]
    except (IOError, OSError, ValueError) as e:
        config = None
        warning = "cannot read %s (%s): the captured layers are not verified" % (path, safe_text(str(e), 300))
    with open_log() as log:
        found = find_captured_layers(log)
    verdict = captured_layers_verdict(found, config, path)
    if verdict["verdict"] == "unverified" and config is not None:
        warning = verdict["message"]
    return verdict, warning
