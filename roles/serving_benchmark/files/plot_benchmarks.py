#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Draw the benchmark report's PNG on the controller: output tok/s (concurrency 1 and N) and mean acceptance
length across the recorded runs, the per-position acceptance of the latest run, and the speed-up against the
plain target ("DFlash: N x the plain target") when a baseline is recorded.

Usage: plot_benchmarks.py REPORT.json OUT.png
Reads the JSON report the serving_benchmark role writes (the bench_report filter's document). Writes OUT.png
only when the picture differs from the one there (prints "written" or "unchanged"), so a second run with the
same records changes nothing: the Agg backend draws the same bytes for the same input, and the PNG carries no
time or version metadata.
"""
from __future__ import absolute_import, division, print_function

import io
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  pylint: disable=wrong-import-position


def _number(value):
    """A figure to plot, or None (a gap) for what is no finite number: a hand-edited record's text or NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def draw(report):
    records = [r for r in report.get("records") or [] if isinstance(r, dict)]
    runs = list(range(1, len(records) + 1))
    figures = [r.get("figures") if isinstance(r.get("figures"), dict) else {} for r in records]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=100)
    title = "%s / %s" % (report.get("host", ""), report.get("instance", ""))
    speedup = report.get("speedup") if isinstance(report.get("speedup"), dict) else {}
    # "DFlash: N x the plain target" under the title, when a baseline is recorded (docs/benchmark.md).
    ratio = "\n" + speedup["text"].replace(" (", "\n(", 1) if isinstance(speedup.get("text"), str) else ""
    fig.suptitle("vLLM benchmark: " + title + ratio, fontsize="medium")
    left.plot(runs, [_number(f.get("tok_s_c1")) for f in figures], "o-", label="tok/s, concurrency 1")
    left.plot(runs, [_number(f.get("tok_s_cN")) for f in figures], "s--", label="tok/s, concurrency N")
    left.set_xlabel("recorded run")
    left.set_ylabel("output tok/s")
    left.set_xticks(runs)
    accept = left.twinx()
    accept.plot(runs, [_number(f.get("mean_acceptance_length")) for f in figures], "^:", color="tab:green",
                label="mean acceptance length")
    accept.set_ylabel("mean acceptance length")
    left.set_ylim(bottom=0)
    accept.set_ylim(bottom=0)
    handles = left.get_legend_handles_labels()[0] + accept.get_legend_handles_labels()[0]
    labels = left.get_legend_handles_labels()[1] + accept.get_legend_handles_labels()[1]
    left.legend(handles, labels, loc="lower left", fontsize="small")
    per = figures[-1].get("per_position_acceptance") if figures else None
    per = [_number(v) or 0.0 for v in per[:64]] if isinstance(per, list) else None
    if per:
        right.bar(range(len(per)), per, color="tab:green")
        right.set_xticks(range(len(per)))
    else:
        right.text(0.5, 0.5, "no speculative decoding", ha="center", va="center", transform=right.transAxes)
    right.set_ylim(0, 1.05)
    right.set_xlabel("draft position")
    right.set_ylabel("acceptance (accepted / drafts)")
    right.set_title("latest run: %s" % (records[-1].get("time", "") if records else "none"), fontsize="medium")
    fig.tight_layout()
    out = io.BytesIO()
    # No Software/time metadata: the same records give the same bytes.
    fig.savefig(out, format="png", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[0]) as fh:
        png = draw(json.load(fh))
    try:
        with open(argv[1], "rb") as fh:
            if fh.read() == png:
                print("unchanged")
                return 0
    except (IOError, OSError):
        pass
    tmp = argv[1] + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(png)
    os.replace(tmp, argv[1])
    print("written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
