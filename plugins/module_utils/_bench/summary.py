# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""One benchmark in a few figures: output tok/s at concurrency 1 (the median of several short runs, and their
spread) and N, TTFT and inter-token latency (p50/p99), and the speculative-decoding window (metrics.window).

The inputs are the JSON files ``vllm bench serve --save-result`` writes (vllm/benchmarks/serve.py:
``output_throughput``, ``completed``, ``failed``, ``duration``, ``p50_ttft_ms``/``p99_ttft_ms`` and the
same for itl/tpot with ``--metric-percentiles 50,99``; ``median_*_ms`` is the p50 of versions that
always write it).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import math

# The figures a run's summary keeps from one `vllm bench serve` result, and where each comes from.
_LATENCIES = (("ttft", "ttft"), ("itl", "itl"), ("tpot", "tpot"))


class SummaryError(ValueError):
    """A benchmark result that cannot be summarized (a sentence naming what is missing)."""


def _number(result, key):
    value = result.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _ms(result, metric, pct):
    for key in ("p%s_%s_ms" % (pct, metric),) + (("median_%s_ms" % metric,) if pct == "50" else ()):
        value = _number(result, key)
        if value is not None:
            return round(value, 2)
    return None


def run_figures(result, concurrency):
    """The figures of one `vllm bench serve` result (a dict) at ``concurrency``."""
    if not isinstance(result, dict):
        raise SummaryError("the benchmark at concurrency %s wrote no JSON object" % concurrency)
    tok_s = _number(result, "output_throughput")
    completed = result.get("completed")
    if tok_s is None or not isinstance(completed, int) or isinstance(completed, bool):
        raise SummaryError("the benchmark at concurrency %s wrote no output_throughput/completed (keys: %s)"
                           % (concurrency, ", ".join(sorted(str(k) for k in result)[:40])))
    if completed == 0:
        raise SummaryError("the benchmark at concurrency %s completed no request (failed: %s)"
                           % (concurrency, result.get("failed")))
    figures = {"concurrency": concurrency, "output_tok_s": round(tok_s, 2), "completed": completed,
               "failed": result.get("failed") if isinstance(result.get("failed"), int) else None,
               "duration_s": round(_number(result, "duration") or 0.0, 2),
               "output_tokens": result.get("total_output_tokens")}
    for name, metric in _LATENCIES:
        for pct in ("50", "99"):
            figures["%s_p%s_ms" % (name, pct)] = _ms(result, metric, pct)
    return figures


def spread_of(rates):
    """The spread of several short runs' tok/s: (highest - lowest) / median, a fraction (0.1 is 10 %); None for
    fewer than two runs or a median of 0. What one host's noise is measured as: the gate allows at least this fall."""
    rates = sorted(rates)
    if len(rates) < 2:
        return None
    middle = _median(rates)
    # Rounded up (4 places): an allowance taken from it is never below the spread measured.
    return math.ceil(10000 * (rates[-1] - rates[0]) / middle) / 10000.0 if middle > 0 else None


def _median(ordered):
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2.0


def summarize(runs, speculative):
    """The record's figures. ``runs``: (concurrency, `vllm bench serve` result) pairs (or a mapping of them), the
    lowest concurrency's runs the single-request ones: their median tok/s is the figure, their spread is kept, and
    the latencies are those of the median run; ``speculative`` is metrics.window() over the single-request runs."""
    pairs = sorted(runs.items()) if isinstance(runs, dict) else list(runs)
    if not pairs:
        raise SummaryError("no benchmark run to summarize")
    per = [run_figures(result, c) for c, result in pairs]
    low = min(f["concurrency"] for f in per)
    singles = [f for f in per if f["concurrency"] == low]
    ordered = sorted(singles, key=lambda f: f["output_tok_s"])
    single = ordered[(len(ordered) - 1) // 2]
    rates = [f["output_tok_s"] for f in singles]
    tok_s_c1 = round(_median(sorted(rates)), 2)
    high = max(per, key=lambda f: f["concurrency"])
    return {
        "tok_s_c1": tok_s_c1,
        "tok_s_c1_runs": rates,
        "tok_s_c1_spread": spread_of(rates),
        "tok_s_cN": high["output_tok_s"] if high["concurrency"] != low else tok_s_c1,
        "concurrency": high["concurrency"],
        "ttft_p50_ms": single["ttft_p50_ms"],
        "ttft_p99_ms": single["ttft_p99_ms"],
        "itl_p50_ms": single["itl_p50_ms"],
        "itl_p99_ms": single["itl_p99_ms"],
        "mean_acceptance_length": speculative.get("mean_acceptance_length"),
        "acceptance_rate": speculative.get("acceptance_rate"),
        "per_position_acceptance": list(speculative.get("per_position_acceptance") or []),
        "draft_tokens": speculative.get("draft_tokens"),
        "accepted_tokens": speculative.get("accepted_tokens"),
        "runs": per,
    }
