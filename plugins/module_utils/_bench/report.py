# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The controller's report of an instance's recorded benchmarks: one JSON document and a text table.

The PNG plot is drawn from the same document by roles/serving_benchmark/files/plot_benchmarks.py
(matplotlib lives on the controller, not in module_utils).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# (column header, figure key, format)
COLUMNS = (
    ("time", None, "%s"),
    ("generation", None, "%s"),
    ("drafter", None, "%s"),
    ("unit", None, "%s"),
    ("verdict", None, "%s"),
    ("tok/s c=1", "tok_s_c1", "%.1f"),
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
    figures = record.get("figures") or {}
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
        low, high = figures.get(name + "_p50_ms"), figures.get(name + "_p99_ms")
        return "%s/%s" % ("-" if low is None else "%.1f" % low, "-" if high is None else "%.1f" % high)
    value = figures.get(key)
    return "-" if value is None else fmt % value


def _records(records):
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ReportError("expected the list of records vllm_benchmark returns (records), got %s"
                          % type(records).__name__)
    return sorted(records, key=lambda r: (str(r.get("time", "")), str(r.get("key", ""))))


def table(records, title=""):
    """A fixed-width text table, oldest run first, and the latest run's per-position acceptance."""
    rows = _records(records)
    cells = [[column[0] for column in COLUMNS]] + [[_cell(r, h, k, f) for h, k, f in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    lines = [title] if title else []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    if rows:
        per = (rows[-1].get("figures") or {}).get("per_position_acceptance") or []
        lines.append("")
        lines.append("per-position acceptance (latest): " + (
            ", ".join("%d: %.2f" % (i, v) for i, v in enumerate(per)) if per else "none (no speculative decoding)"))
    else:
        lines.append("(no benchmark recorded)")
    return "\n".join(lines) + "\n"


def document(records, host, instance):
    """The JSON report: {host, instance, latest, records} with records oldest first."""
    rows = _records(records)
    return {"host": host, "instance": instance, "latest": rows[-1] if rows else None, "records": rows}
