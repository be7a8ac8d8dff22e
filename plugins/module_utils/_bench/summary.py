# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""One benchmark run in a few figures: output tok/s at concurrency 1 and N, TTFT and inter-token
latency (p50/p99), and the speculative-decoding window (metrics.window).

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


def summarize(runs, speculative):
    """The record's figures: ``runs`` maps concurrency -> `vllm bench serve` result, the lowest of them the
    single-request run (concurrency 1); ``speculative`` is metrics.window() of the single-request run."""
    if not runs:
        raise SummaryError("no benchmark run to summarize")
    per = [run_figures(runs[c], c) for c in sorted(runs)]
    single = per[0]
    return {
        "tok_s_c1": single["output_tok_s"],
        "tok_s_cN": per[-1]["output_tok_s"],
        "concurrency": per[-1]["concurrency"],
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
