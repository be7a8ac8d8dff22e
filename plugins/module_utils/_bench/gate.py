# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The gate: does a new benchmark of an instance keep up with the figures last recorded for it?

Two figures are compared, each against its own allowed fall (fractions of the recorded figure):
the mean acceptance length (default 10 %: under greedy sampling it is deterministic, so a fall is a
drafter that no longer fits: ids written for another vLLM, a drafter of another target, a vLLM
regression) and the single-request output tok/s (default 15 %: timing, noisier). Both figures, old and
new, are in every message. Nothing recorded yet: the run is recorded and passes. ``accept_new``:
the new figures are recorded whatever they are (new hardware, a deliberate trade), and say so.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import math

DEFAULT_ACCEPTANCE_DROP = 0.10
DEFAULT_TOK_S_DROP = 0.15
# (figure in the record, words in the message, variable naming its threshold)
FIGURES = (
    ("mean_acceptance_length", "mean acceptance length", "acceptance_drop"),
    ("tok_s_c1", "single-request tok/s", "tok_s_drop"),
)
# Figures a record may hold as null: a run without speculative decoding has no acceptance length.
NULLABLE = ("mean_acceptance_length",)


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
    return problems


def _quoted(value):
    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return repr(value)[:60]


def _compare(key, words, limit, previous, current):
    """One figure's check: {figure, previous, current, change, limit, passed, text}."""
    old, new = _figure(previous, key), _figure(current, key)
    check = {"figure": key, "previous": old, "current": new, "limit": limit, "change": None, "passed": True}
    if old is None or old == 0:
        check["text"] = "%s %s (nothing recorded to compare)" % (words, _show(new))
        return check
    if new is None:
        check["passed"] = False
        check["text"] = "%s %s -> none (the new run has no such figure)" % (words, _show(old))
        return check
    change = (new - old) / old
    check["change"] = round(change, 4)
    check["passed"] = -change <= limit + 1e-9
    check["text"] = "%s %s -> %s (%+.1f %%, allowed fall %.0f %%)" % (
        words, _show(old), _show(new), 100 * change, 100 * limit)
    return check


def _show(value):
    return "none" if value is None else ("%.3g" % value if value < 100 else "%.1f" % value)


def decide(previous, current, acceptance_drop=DEFAULT_ACCEPTANCE_DROP, tok_s_drop=DEFAULT_TOK_S_DROP,
           accept_new=False, gate=True):
    """The gate's verdict on ``current`` (summary.summarize figures) against ``previous`` (the last recorded
    figures of the same instance, or None).

    Returns {verdict: first | passed | failed | accepted | recorded, passed (bool), record (bool: store
    ``current`` as the instance's last figures), checks: [per figure], message}. ``failed`` is the only verdict
    that neither passes nor records; without ``gate`` a fall is ``recorded`` (a benchmark that only measures).
    """
    limits = {"acceptance_drop": check_threshold("acceptance_drop", acceptance_drop),
              "tok_s_drop": check_threshold("tok_s_drop", tok_s_drop)}
    new_problems = [p for p in recorded_problems(current) if not p.startswith("mean_acceptance_length")]
    if not previous:
        checks = [_compare(key, words, limits[limit], None, current) for key, words, limit in FIGURES]
        if new_problems:
            return {"verdict": "failed", "passed": False, "record": False, "checks": checks,
                    "message": "the first benchmark of this instance has no figures to record (%s): %s"
                               % ("; ".join(new_problems), "; ".join(c["text"] for c in checks))}
        return {"verdict": "first", "passed": True, "record": True, "checks": checks,
                "message": "first benchmark of this instance, recorded: " + "; ".join(c["text"] for c in checks)}
    problems = recorded_problems(previous)
    if problems:
        # Never "nothing to compare": a record the gate cannot read fails, unless the new figures replace it on purpose.
        checks = [_compare(key, words, limits[limit], None, current) for key, words, limit in FIGURES]
        text = "the recorded figures cannot be compared with (%s); the new run: %s" % (
            "; ".join(problems), "; ".join(c["text"] for c in checks))
        if accept_new and not new_problems:
            return {"verdict": "accepted", "passed": True, "record": True, "checks": checks,
                    "message": "new figures accepted on purpose (accept_new): " + text}
        return {"verdict": "failed", "passed": False, "record": False, "checks": checks,
                "message": text + " (accept_new records the new figures in their stead)"}
    checks = [_compare(key, words, limits[limit], previous, current) for key, words, limit in FIGURES]
    failed = [c for c in checks if not c["passed"]]
    text = "; ".join(c["text"] for c in checks)
    if not failed:
        return {"verdict": "passed", "passed": True, "record": True, "checks": checks,
                "message": "the benchmark keeps up with the last recorded figures: " + text}
    if not gate:
        return {"verdict": "recorded", "passed": True, "record": True, "checks": checks,
                "message": "recorded (the gate is off): " + text}
    if accept_new:
        return {"verdict": "accepted", "passed": True, "record": True, "checks": checks,
                "message": "new figures accepted on purpose (accept_new): " + text}
    return {"verdict": "failed", "passed": False, "record": False, "checks": checks,
            "message": "the benchmark fell below the last recorded figures (%s): %s"
                       % (", ".join(c["figure"] for c in failed), text)}
