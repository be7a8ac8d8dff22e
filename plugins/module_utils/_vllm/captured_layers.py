# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Which target layers a running vLLM feeds its DFlash drafter, read from the line it logs at start.

find_captured_layers() reads a log (the unit's journal of this start, or a log file) with log.py's
bounded line reader; dflash.captured_layers_verdict() compares what it found with the drafter's trained
ids. Stdlib only: it runs on the managed node.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import VllmLogError, iter_log_lines, parse_line

__all__ = ["parse_captured_layers", "find_captured_layers"]

# Both lines come from the message format strings in the release wheels (vLLM 0.19.0 - 0.33.0):
#   V1 runner, vllm/v1/worker/gpu_model_runner.py:
#       logger.info("Using auxiliary layers from speculative config: %s", aux_layers)
#   V2 runner, vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py (DFlash uses it from 0.24.0):
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
    - ``layers``: e.g. [2, 6] (the capture points "after k layers"; DFlash ids [1, 5] on vLLM >= 0.22.0),
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
