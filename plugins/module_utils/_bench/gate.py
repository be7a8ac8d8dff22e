# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The gate: does a new benchmark of an instance keep up with the instance's reference figures?

The reference is the instance's first recorded run, or the last one accepted on purpose (``accept_new``): never
simply the last run, so that changes each costing a little less than the allowance cannot add up unseen (ten
changes at -9 % each would pass one by one and end 61 % down). Two figures are compared, each against its own
allowed fall (fractions of the reference figure): the mean acceptance length (default 10 %: under greedy sampling
it is deterministic, so a fall is a drafter that no longer fits: ids written for another vLLM, a drafter of
another target, a vLLM regression) and the single-request output tok/s, the median of several short runs, whose
allowed fall is never smaller than the spread of the short runs measured on the host (the reference's and the
new run's): on a busy host the gate does not roll back a change for noise. The reference, the spreads and both
figures are in every message. Nothing recorded yet: the run becomes the reference and passes. ``accept_new``:
the new figures become the reference whatever they are (new hardware, a deliberate trade), and say so.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math

from ansible_collections.inference.gpu_host.plugins.module_utils._bench.summary import spread_of

DEFAULT_ACCEPTANCE_DROP = 0.10
DEFAULT_TOK_S_DROP = 0.15
# (figure in the record, words in the message, variable naming its threshold)
FIGURES = (
    ("mean_acceptance_length", "mean acceptance length", "acceptance_drop"),
    ("tok_s_c1", "single-request tok/s", "tok_s_drop"),
)
# Figures a record may hold as null: a run without speculative decoding has no acceptance length.
NULLABLE = ("mean_acceptance_length",)
# The short runs whose spread the tok/s allowance takes (summary.summarize); older records have none.
RUNS = "tok_s_c1_runs"
MAX_RUNS = 64


class GateError(ValueError):
    """A threshold that is not a fraction in [0, 1) (the message names the variable)."""


def check_threshold(name, value):
    """``value`` as a float in [0, 1), else GateError naming ``name`` (e.g. serving_benchmark_acceptance_drop)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise GateError("%s=%r: expected a fraction between 0 and 1 (0.1 is 10 %%)" % (name, value))
    try:
        number = float(value)
    except ValueError:
        raise GateError("%s=%r: expected a fraction between 0 and 1 (0.1 is 10 %%)" % (name, value))
    if not math.isfinite(number) or not 0 <= number < 1:
        raise GateError("%s=%r: expected a fraction between 0 and 1 (0.1 is 10 %%)" % (name, value))
    return number


def _figure(record, key):
    value = record.get(key) if isinstance(record, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _sound(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def recorded_problems(figures):
    """Why recorded figures cannot be compared with ([] when they can): each figure the gate compares must be
    there and a finite number above 0; the mean acceptance length may be null (recorded without speculation).
    A hand-edited or corrupted record is refused, never read as "nothing to compare"."""
    if not isinstance(figures, dict):
        return ["the figures are %s, not a mapping" % type(figures).__name__]
    problems = []
    for key, dummy, dummy in FIGURES:
        if key not in figures:
            problems.append("%s is missing" % key)
        elif not _sound(figures[key]) and not (figures[key] is None and key in NULLABLE):
            problems.append("%s is %s, expected a finite number above 0%s" % (
                key, _quoted(figures[key]), " or null" if key in NULLABLE else ""))
    runs = figures.get(RUNS)
    if runs is not None and (not isinstance(runs, list) or not 0 < len(runs) <= MAX_RUNS
                             or not all(_sound(r) for r in runs)):
        problems.append("%s is %s, expected a list of finite numbers above 0 (the short runs' tok/s)"
                        % (RUNS, _quoted(runs)))
    return problems


def _quoted(value):
    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return repr(value)[:60]


def _runs(figures):
    """The short runs' tok/s of ``figures`` ([] when there are none or they are not sound)."""
    runs = figures.get(RUNS) if isinstance(figures, dict) else None
    return runs if isinstance(runs, list) and 0 < len(runs) <= MAX_RUNS and all(_sound(r) for r in runs) else []


def _spread(figures):
    """The spread of the short runs of ``figures`` (None with fewer than two: older records)."""
    return spread_of(_runs(figures))


def _with_spread(value, spread, runs):
    if spread is None:
        return "%s (spread not measured)" % _show(value)
    return "%s (spread %.1f %% over %d runs)" % (_show(value), 100 * spread, len(runs))


def _compare(key, words, limit, reference, current):
    """One figure's check: {figure, reference, current, change, limit, spread, passed, text}. The tok/s allowance
    is the larger of ``limit`` and the spreads measured on the host (the reference's, the new run's)."""
    old, new = _figure(reference, key), _figure(current, key)
    check = {"figure": key, "reference": old, "current": new, "limit": limit, "change": None, "passed": True}
    shown_old, shown_new = _show(old), _show(new)
    if key == "tok_s_c1":
        spreads = [_spread(reference), _spread(current)]
        check["spread"] = {"reference": spreads[0], "current": spreads[1]}
        shown_old = _with_spread(old, spreads[0], _runs(reference))
        shown_new = _with_spread(new, spreads[1], _runs(current))
        measured = max([s for s in spreads if s is not None] or [0.0])
        if measured > limit:
            check["allowance"] = "the spread measured on this host; tok_s_drop %.0f %%" % (100 * limit)
            check["limit"] = limit = measured
    if old is None:
        check["text"] = "%s %s%s" % (words, shown_new, " (no reference figure to compare)" if reference else "")
        return check
    if new is None:
        check["passed"] = False
        check["text"] = "%s: reference %s, now none (the new run has no such figure)" % (words, shown_old)
        return check
    change = (new - old) / old
    check["change"] = round(change, 4)
    check["passed"] = -change <= limit + 1e-9
    check["text"] = "%s: reference %s, now %s: %+.1f %%, allowed fall %.1f %%%s" % (
        words, shown_old, shown_new, 100 * change, 100 * limit,
        " (%s)" % check["allowance"] if check.get("allowance") else "")
    return check


def _show(value):
    return "none" if value is None else ("%.3g" % value if value < 100 else "%.1f" % value)


def decide(reference, current, acceptance_drop=DEFAULT_ACCEPTANCE_DROP, tok_s_drop=DEFAULT_TOK_S_DROP,
           accept_new=False, gate=True, reference_note=""):
    """The gate's verdict on ``current`` (summary.summarize figures) against ``reference`` (the instance's reference
    figures: its first recorded run, or the last accepted with ``accept_new``; None when there is none).
    ``reference_note`` says which run that is (e.g. "recorded 2026-12-05T07:01:00Z, the first run").

    Returns {verdict: first | passed | failed | accepted | recorded, passed (bool), record (bool: store ``current``
    as the instance's last figures), reference (bool: ``current`` becomes the instance's reference), checks: [per
    figure], message}. ``failed`` is the only verdict that neither passes nor records; without ``gate`` a fall is
    ``recorded`` (a benchmark that only measures; the reference stays).
    """
    limits = {"acceptance_drop": check_threshold("acceptance_drop", acceptance_drop),
              "tok_s_drop": check_threshold("tok_s_drop", tok_s_drop)}
    note = " (%s)" % reference_note if reference_note else ""
    new_problems = [p for p in recorded_problems(current) if not p.startswith("mean_acceptance_length")]

    def verdict(name, message, checks):
        passed = name != "failed"
        return {"verdict": name, "passed": passed, "record": passed, "reference": name in ("first", "accepted"),
                "checks": checks, "message": message}

    if not reference:
        checks = [_compare(key, words, limits[limit], None, current) for key, words, limit in FIGURES]
        text = "; ".join(c["text"] for c in checks)
        if new_problems:
            return verdict("failed", "the first benchmark of this instance has no figures to record (%s): %s"
                           % ("; ".join(new_problems), text), checks)
        return verdict("first", "first benchmark of this instance, recorded as its reference: " + text, checks)
    problems = recorded_problems(reference)
    if problems:
        # Never "nothing to compare": a reference the gate cannot read fails, unless replaced on purpose.
        checks = [_compare(key, words, limits[limit], None, current) for key, words, limit in FIGURES]
        text = "the reference figures%s cannot be compared with (%s); the new run: %s" % (
            note, "; ".join(problems), "; ".join(c["text"] for c in checks))
        if accept_new and not new_problems:
            return verdict("accepted", "new figures accepted on purpose (accept_new) as the reference: " + text,
                           checks)
        return verdict("failed", text + " (accept_new makes the new figures the reference)", checks)
    checks = [_compare(key, words, limits[limit], reference, current) for key, words, limit in FIGURES]
    failed = [c for c in checks if not c["passed"]]
    text = "; ".join(c["text"] for c in checks)
    if accept_new and not new_problems:
        return verdict("accepted", "new figures accepted on purpose (accept_new), the reference from now on, "
                                   "replacing the reference%s: %s" % (note, text), checks)
    if not failed:
        return verdict("passed", "the benchmark keeps up with the reference%s: %s" % (note, text), checks)
    if not gate:
        return verdict("recorded", "recorded (the gate is off; the reference%s stays): %s" % (note, text), checks)
    return verdict("failed", "the benchmark fell below the reference%s (%s): %s"
                   % (note, ", ".join(c["figure"] for c in failed), text), checks)
