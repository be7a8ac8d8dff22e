# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Which target layers a running vLLM feeds its DFlash drafter, read from the line it logs at start.

find_captured_layers() reads a log (the unit's journal of this start, or a log file) with log.py's
bounded line reader; captured_layers_verdict() compares what it found with the drafter's trained ids
(drafter_config.py: the record and the +1). Stdlib only: it runs on the managed node.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import (
    INFO_KEY, capture_points, recorded_ids_state, trained_ids)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import VllmLogError, iter_log_lines, parse_line

__all__ = ["parse_captured_layers", "find_captured_layers", "captured_layers_verdict"]

# Both lines come from the message format strings in the release wheels (versions.SOURCE_CAPTURE_LINES):
#   V1 runner, vllm/v1/worker/gpu_model_runner.py:
#       logger.info("Using auxiliary layers from speculative config: %s", aux_layers)
#   V2 runner, vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (DFlash uses it where the table's
#   captured_layers_line says v2 or v1_or_v2):
#       logger.info("Using Eagle3 auxiliary layers from config: %s", aux_layers)
#       logger.info("Using Eagle3 auxiliary layers from model: %s", aux_layers)
# aux_layers is a tuple: "(2, 6)", "(2,)" for one id. "from model" means the drafter's config gave no ids
# and V2 took the target's defaults. The format strings: versions.CAPTURED_LAYERS_LINES; which runner a vLLM
# uses: versions.captured_layers_line().
_CAPTURED_RE = re.compile(
    r"Using (?:(?P<v2>Eagle3 )auxiliary layers from (?P<v2_source>config|model)"
    r"|auxiliary layers from (?P<v1_source>speculative config)): "
    r"(?P<layers>\([^()\[\]]*\)|\[[^()\[\]]*\])")
_LAYER_ID = re.compile(r"^\d{1,6}$")


def _layer_list(text):
    """'(2, 6)' / '(2,)' / '()' / '[2, 6]' -> [2, 6] / [2] / [] / [2, 6]; None when an item is not a layer number."""
    items = [item.strip() for item in text[1:-1].split(",")]
    if items and items[-1] == "":
        items.pop()  # the trailing comma of a one-element tuple, or "()"
    if not all(_LAYER_ID.match(item) for item in items):
        return None
    return [int(item) for item in items]


def parse_captured_layers(line):
    """The captured layers reported by one log line, or None when it is not such a line.

    ``line``: a log/journal line with or without journald's, vLLM's process and logger prefixes.
    Returns {"layers": [2, 6], "runner": "v1" | "v2", "source": "speculative config" | "config" | "model",
    "process", "pid"} (process/pid of the ``(Name pid=N)`` prefix, None without one).
    """
    if not isinstance(line, str):
        raise VllmLogError("vllm_log.parse_captured_layers: expected a str log line, got %s" % type(line).__name__)
    proc, pid, _level, text = parse_line(line)
    match = _CAPTURED_RE.search(text)
    if not match:
        return None
    layers = _layer_list(match.group("layers"))
    if layers is None:
        return None
    runner = "v2" if match.group("v2") else "v1"
    source = match.group("v2_source") or match.group("v1_source")
    return {"layers": layers, "runner": runner, "source": source, "process": proc, "pid": pid}


def find_captured_layers(log):
    """The layers vLLM captures for its drafter, from the last line in ``log`` that reports them.

    ``log``: as for find_root_cause() (str, bytes, a binary file, a list of lines), read once, memory
    bounded. The last report wins: a journal of several starts describes the newest. Returns a dict:

    - ``found``: whether such a line was seen;
    - ``layers``: e.g. [2, 6] (the capture points "after k layers"; DFlash ids [1, 5] on a vLLM that adds its +1),
      None when not found;
    - ``runner``: "v1" or "v2", the model runner whose line it was (versions.CAPTURED_LAYERS_LINES), or None;
    - ``source``: "speculative config" (V1), "config" (V2) or "model" (V2: the drafter's config gave no
      ids, the target's defaults were used), or None;
    - ``line``: that line as read (valid UTF-8, at most MAX_LINE_CHARS plus a cut marker), ``process``/``pid``;
    - ``matches``: how many such lines were seen (tensor-parallel workers each print one);
    - ``consistent``: whether they all reported the same runner and layers (False after a restart with
      another drafter config, or a V1/V2 switch);
    - ``lines_read``.
    """
    last, first_key, consistent, matches, count = None, None, True, 0, 0
    for raw in iter_log_lines(log, "vllm_log.find_captured_layers"):
        count += 1
        found = parse_captured_layers(raw)
        if found is None:
            continue
        matches += 1
        key = (found["runner"], tuple(found["layers"]))
        if first_key is None:
            first_key = key
        elif key != first_key:
            consistent = False
        last = dict(found, line=raw.rstrip("\r\n"))
    if last is None:
        return {"found": False, "layers": None, "runner": None, "source": None, "line": None, "process": None,
                "pid": None, "matches": 0, "consistent": True, "lines_read": count}
    return dict(last, found=True, matches=matches, consistent=consistent, lines_read=count)


def captured_layers_verdict(captured, config, where="config.json"):
    """Whether vLLM captures the target layers the drafter was trained on.

    ``captured``: find_captured_layers() of the server's log; ``config``: the drafter's parsed config.json (None
    when it could not be read); ``where``: names that file in messages. Every vLLM with DFlash logs the capture
    points of the ids it reads (drafter_config.capture_points; the vLLMs that omit the +1 read ids that
    layer_id_policy compensate wrote with it), so the expected capture is always the trained ids' capture points.
    Returns {"verdict": "match" | "mismatch" | "unverified", "captured", "expected", "trained_ids",
    "reason" (None on a match), "message"}.
    """
    trained = trained_ids(config)
    layers = captured.get("layers") if captured.get("found") else None
    result = {"captured": layers, "trained_ids": trained, "runner": captured.get("runner"),
              "line": captured.get("line"), "expected": capture_points(trained) if trained else None}
    if layers is None:
        return dict(result, verdict="unverified", reason="no_line",
                    message="vLLM printed no captured-layers line in the log read (V1 'Using auxiliary layers from "
                            "speculative config' or V2 'Using Eagle3 auxiliary layers from ...'): the captured "
                            "layers are not verified")
    if trained is None:
        return dict(result, verdict="unverified", reason="no_record",
                    message="%s has no %s record with the trained ids (not written by dflash_drafter_config): vLLM "
                            "captures %s, not verified" % (where, INFO_KEY, layers))
    expected = result["expected"]
    if layers == expected and captured.get("consistent", True):
        return dict(result, verdict="match", reason=None,
                    message="vLLM captures %s: the drafter's trained DFlash ids %s + 1" % (layers, trained))
    record = recorded_ids_state(config) or {}
    written = (config.get("dflash_config") or {}).get("target_layer_ids") if isinstance(config, dict) else None
    if not captured.get("consistent", True):
        reason, why = "inconsistent", ("the log reports different captured layers (tensor-parallel workers or "
                                       "several starts disagree); the last one is shown")
    elif captured.get("source") == "model":
        reason, why = "target_defaults", ("vLLM found no layer ids in the drafter's config and took the target "
                                          "model's defaults: %s lacks dflash_config.target_layer_ids" % where)
    elif len(layers) != len(expected):
        reason, why = "count", "vLLM captures %d layers, the drafter was trained on %d" % (len(layers), len(expected))
    elif layers == capture_points(expected):
        reason, why = "ids_plus_one_twice", (
            "%s holds the trained ids + 1 (written for vLLM %s with layer_id_policy %s), and the installed vLLM adds 1 "
            "itself: rewrite %s for the installed vLLM (the drafter role with its vLLM version)"
            % (where, record.get("written_for_vllm"), record.get("layer_id_policy"), where))
    elif layers == trained:
        reason, why = "no_plus_one", (
            "the installed vLLM does not add 1 to DFlash ids (vLLM %s-%s, fixed upstream by %s) and %s holds the "
            "trained ids: write it with layer_id_policy compensate, or upgrade vLLM"
            % (versions.DFLASH_MIN_VERSION, versions.OFF_BY_ONE_SERIES[1], versions.UPSTREAM_FIX, where))
    elif written == trained or written == expected:
        reason, why = "started_with_other_ids", (
            "%s's ids %s are right for the trained ids, so the running server was started with another config.json "
            "(it reads it at start): restart it" % (where, written))
    else:
        reason, why = "ids_differ", ("%s's dflash_config.target_layer_ids %s are not the trained ids %s (changed "
                                     "after dflash_drafter_config wrote it?)" % (where, written, trained))
    message = ("vLLM captures target layers %s but the drafter was trained on DFlash ids %s (capture points %s): %s. "
               "Wrong layers give no error, only a lower acceptance rate" % (layers, trained, expected, why))
    return dict(result, verdict="mismatch", reason=reason, message=message)
