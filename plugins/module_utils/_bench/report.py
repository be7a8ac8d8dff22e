# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The controller's report of an instance's recorded benchmarks: one JSON document and a text table.

The PNG plot is drawn from the same document by roles/serving_benchmark/files/plot_benchmarks.py
(matplotlib lives on the controller, not in module_utils).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

from ansible_collections.inference.gpu_host.plugins.module_utils._bench.baseline import speedup
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import parse_json_bounded

# A record is a few KiB (store.MAX_RECORD_BYTES): the drift check reads no more of one.
MAX_RECORD_TEXT = 1 << 20

# A real drafter proposes 16 tokens at most (metrics.MAX_POSITIONS bounds what is read).
MAX_POSITIONS_SHOWN = 64
# (column header, figure key, format)
COLUMNS = (
    ("time", None, "%s"),
    ("generation", None, "%s"),
    ("drafter", None, "%s"),
    ("unit", None, "%s"),
    ("verdict", None, "%s"),
    ("tok/s c=1", "tok_s_c1", "%.1f"),
    # The spread of the short runs whose median tok/s c=1 is: the gate allows at least this fall.
    ("spread", "tok_s_c1_spread", "%.0f %%"),
    ("tok/s c=N", "tok_s_cN", "%.1f"),
    ("N", "concurrency", "%d"),
    ("accept len", "mean_acceptance_length", "%.2f"),
    ("accept rate", "acceptance_rate", "%.2f"),
    ("TTFT p50/p99 ms", None, "%s"),
    ("ITL p50/p99 ms", None, "%s"),
)


class ReportError(ValueError):
    """Records that are not the vllm_benchmark module's (a sentence saying which)."""


def _cell(record, header, key, fmt):
    figures = record.get("figures") if isinstance(record.get("figures"), dict) else {}
    if header == "time":
        return str(record.get("time", ""))
    if header == "generation":
        return str(record.get("generation", ""))
    if header == "drafter":
        return str(record.get("drafter_fingerprint", ""))[:12]
    if header == "unit":
        return str(record.get("unit_hash", ""))[:12]
    if header == "verdict":
        return str(record.get("verdict", ""))
    if header.startswith(("TTFT", "ITL")):
        name = "ttft" if header.startswith("TTFT") else "itl"
        return "%s/%s" % (_number_text(figures.get(name + "_p50_ms"), "%.1f"),
                          _number_text(figures.get(name + "_p99_ms"), "%.1f"))
    value = figures.get(key)
    if header == "spread" and _number_text(value, fmt) != "-":
        value = 100 * value
    return _number_text(value, fmt)


def _records(records):
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ReportError("expected the list of records vllm_benchmark returns (records), got %s"
                          % type(records).__name__)
    return sorted(records, key=lambda r: (str(r.get("time", "")), str(r.get("key", ""))))


def _speedup_line(speedup):
    if speedup is None:
        return "against the plain target: no baseline recorded (serving_benchmark_baseline=true measures one)"
    if not isinstance(speedup, dict) or not isinstance(speedup.get("text"), str):
        raise ReportError("expected the bench_speedup filter's result (a mapping with text) or none, got %s"
                          % type(speedup).__name__)
    return speedup["text"]


def table(records, title="", speedup=None):
    """A fixed-width text table, oldest run first, the latest run's per-position acceptance and the speed-up
    against the plain target (baseline.speedup, or none recorded)."""
    rows = _records(records)
    cells = [[column[0] for column in COLUMNS]] + [[_cell(r, h, k, f) for h, k, f in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = [title] if title else []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if rows:
        figures = rows[-1].get("figures") if isinstance(rows[-1].get("figures"), dict) else {}
        per = figures.get("per_position_acceptance")
        per = per[:MAX_POSITIONS_SHOWN] if isinstance(per, list) else []
        lines.append("")
        lines.append("per-position acceptance (latest): " + (
            ", ".join("%d: %s" % (i, _number_text(v, "%.2f")) for i, v in enumerate(per)) if per
            else "none (no speculative decoding)"))
    else:
        lines.append("(no benchmark recorded)")
    lines.append(_speedup_line(speedup))
    return "\n".join(lines) + "\n"


def document(records, host, instance, speedup=None, baseline=None):
    """The JSON report: {host, instance, latest, records, speedup, baseline} with records oldest first;
    ``speedup`` is baseline.speedup's comparison and ``baseline`` the baseline record it used (or None)."""
    rows = _records(records)
    _speedup_line(speedup)
    if baseline is not None and not isinstance(baseline, dict):
        raise ReportError("expected the baseline record (a mapping) or none, got %s" % type(baseline).__name__)
    return {"host": host, "instance": instance, "latest": rows[-1] if rows else None, "records": rows,
            "speedup": speedup, "baseline": baseline or None}


# What the drift check shows of the last recorded figures (the record's own names).
RECORDED = ("tok_s_c1", "tok_s_cN", "concurrency", "mean_acceptance_length", "acceptance_rate",
            "per_position_acceptance", "ttft_p50_ms", "itl_p50_ms")
LIVE = ("mean_acceptance_length", "acceptance_rate", "num_drafts", "num_draft_tokens", "num_accepted_tokens")


def report(records, host, instance, speedup=None, baseline=None, title=None):
    """{"document": document(...), "table": table(records, title, speedup)}: the bench_report filter; the table's
    title is "<host> / <instance>" unless ``title`` is given."""
    return {"document": document(records, host, instance, speedup, baseline),
            "table": table(records, "%s / %s" % (host, instance) if title is None else title, speedup)}


def _parsed(text, what):
    """(record or None, note): a record file's text ('' when there is none)."""
    if text in (None, ""):
        return None, "no %s recorded" % what
    if isinstance(text, str):
        if len(text) > MAX_RECORD_TEXT:
            return None, "the %s record is larger than %d bytes, not one of the collection's" % (what, MAX_RECORD_TEXT)
        # Bounded in depth and without NaN/Infinity, as the module reads records (issue 39).
        record, why = parse_json_bounded(text)
        if why:
            return None, "the %s record does not parse (%s)" % (what, why)
    else:
        record = text
    if not isinstance(record, dict) or not isinstance(record.get("figures"), dict):
        return None, "the %s record holds no figures" % what
    return record, ""


def _number_text(value, fmt):
    """A figure as ``fmt`` says, or '-' for what is no finite number (text, NaN, a list in a hand-edited record)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "-"
    return fmt % value


def _live(live):
    if not isinstance(live, dict) or live.get("num_draft_tokens") is None:
        return None, "no live acceptance (no speculative decoding, or /metrics was not read)"
    shown = dict((k, live.get(k)) for k in LIVE)
    return shown, "live acceptance length %s since the server started (%s of %s draft tokens accepted)" % (
        _number_text(shown["mean_acceptance_length"], "%.2f"), _number_text(shown["num_accepted_tokens"], "%d"),
        _number_text(shown["num_draft_tokens"], "%d"))


def drift_info(last_text, baseline_text="", live=None):
    """The drift check's information (never a finding) on one instance: the last recorded benchmark figures
    (``last_text``: last.json's text, '' when none), the speed-up against the last recorded baseline, and the live
    acceptance from the server's /metrics counters (``live``: the probe's spec_decode, or None).

    Returns {drift_info: "benchmark", summary, recorded, speedup, live}: what the drift role prints and
    scripts/drift_check.py adds to its report; no load is sent for any of it.
    """
    record, note = _parsed(last_text, "benchmark")
    base, dummy = _parsed(baseline_text, "baseline")
    recorded = None
    parts = []
    if record:
        figures = record["figures"]
        recorded = dict((k, figures.get(k)) for k in RECORDED)
        recorded.update(time=record.get("time"), key=record.get("key"), verdict=record.get("verdict"),
                        generation=record.get("generation"))
        parts.append("last recorded benchmark %s (%s): %s tok/s at concurrency 1, %s at %s, acceptance length %s" % (
            record.get("time", "?"), record.get("generation", "?"), _number_text(figures.get("tok_s_c1"), "%.1f"),
            _number_text(figures.get("tok_s_cN"), "%.1f"), _number_text(figures.get("concurrency"), "%d"),
            _number_text(figures.get("mean_acceptance_length"), "%.2f")))
    else:
        parts.append(note)
    ratio = speedup(record, base) if record and base else None
    if ratio:
        parts.append(ratio["text"])
    shown, live_text = _live(live)
    parts.append(live_text)
    return {"drift_info": "benchmark", "summary": "; ".join(parts), "recorded": recorded, "speedup": ratio,
            "live": shown}
