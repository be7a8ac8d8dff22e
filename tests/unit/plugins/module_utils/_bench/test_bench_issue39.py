"""Issue 39 (nothing lost, nothing injected, nothing hangs, round three): the benchmark's records, its /metrics
window, the gate, the results directory and the report, each row of the issue's table on real files."""
import json
import math
import os
import threading

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import gate, metrics, report, run

# The stand-in host and the options of the module's own tests (pytest puts this directory on sys.path).
from test_bench_run import FakeHost, opts  # noqa: F401  pylint: disable=unused-import,import-error

GOOD = {"mean_acceptance_length": 4.0, "tok_s_c1": 100.0}
FELL = {"mean_acceptance_length": 1.0, "tok_s_c1": 25.0}


def _returns_within(seconds, call, fifos=()):
    """What ``call()`` raised, asserting it returned within ``seconds``: a read that blocks on one of ``fifos`` is
    released (a writer opened) after the assertion failed, so that the thread ends."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # pylint: disable=broad-except
            box["error"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    blocked = thread.is_alive()
    for fifo in fifos if blocked else ():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not blocked, "blocked for %s s" % seconds
    return box.get("error")


# Row 1: the recorded figures are a string, NaN, infinity, negative or a boolean, and the new run fell by 75 %.
BAD_RECORDED = ["fast", float("nan"), float("inf"), -4.0, True, 0, [4.0], {"v": 4}]


@pytest.mark.parametrize("value", BAD_RECORDED, ids=repr)
@pytest.mark.parametrize("key", ["mean_acceptance_length", "tok_s_c1"])
def test_row1_a_bad_recorded_figure_never_passes(key, value):
    d = gate.decide(dict(GOOD, **{key: value}), FELL)
    assert (d["verdict"], d["passed"], d["record"]) == ("failed", False, False)
    assert key in d["message"] and "cannot be compared" in d["message"]


def test_row1_a_missing_recorded_figure_never_passes():
    d = gate.decide({"mean_acceptance_length": 4.0}, FELL)
    assert not d["passed"] and "tok_s_c1" in d["message"]


@pytest.mark.parametrize("name", ["reference.json", "last.json"])
@pytest.mark.parametrize("value", ['"fast"', "NaN", "Infinity", "-4.0", "true"])
def test_row1_the_module_refuses_the_record_naming_file_and_figure(opts, value, name):  # noqa: F811
    first = run.benchmark(opts, runner=FakeHost())
    last = os.path.join(opts["results_dir"], name)
    with open(last) as fh:
        text = fh.read()
    with open(last, "w") as fh:
        fh.write(text.replace('"tok_s_c1": 100.0', '"tok_s_c1": %s' % value))
    host = FakeHost(accept=(0, 0, 0), tok_s=25.0)
    with pytest.raises(run.BenchError) as err:
        run.benchmark(dict(opts, force=True), runner=host)
    assert last in str(err.value) and "tok_s_c1" in str(err.value)
    # Refused before any load, and the record is left as it is.
    assert host.calls == []
    with open(last) as fh:
        assert fh.read() != text and first["key"] in text


# Row 2: /metrics counters that grew past their old values between the scrapes (a restart), a series given twice.
def _scrape(drafts, draft_tokens, accepted, per, created=1796455028.6, extra=""):
    lines = ['vllm:spec_decode_num_drafts_total{engine="0"} %r' % float(drafts),
             'vllm:spec_decode_num_drafts_created{engine="0"} %r' % created,
             'vllm:spec_decode_num_draft_tokens_total{engine="0"} %r' % float(draft_tokens),
             'vllm:spec_decode_num_accepted_tokens_total{engine="0"} %r' % float(accepted)]
    lines += ['vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="%d"} %r' % (i, float(v))
              for i, v in enumerate(per)]
    return "\n".join(lines) + "\n" + extra


def test_row2_a_restart_in_the_window_is_no_reading():
    before = metrics.read_counters(_scrape(100, 300, 100, [60, 30, 10]))
    # Restarted, then counted past the old values: the deltas would say rate 2.6, length 14.0, position 0 1.6.
    after = metrics.read_counters(_scrape(105, 325, 165, [68, 57, 40], created=1796455999.1))
    with pytest.raises(metrics.MetricsError, match="restarted"):
        metrics.window(before, after)


def test_row2_counters_that_make_no_sense_are_no_reading_without_created_series():
    before = metrics.read_counters(_scrape(100, 300, 100, [60, 30, 10]).replace("_created", "_x"))
    after = metrics.read_counters(_scrape(105, 325, 165, [68, 57, 40]).replace("_created", "_x"))
    with pytest.raises(metrics.MetricsError, match="accepted"):
        metrics.window(before, after)


def test_row2_a_per_position_series_given_twice_is_no_reading():
    text = _scrape(110, 330, 130, [70, 40, 20])
    twice = 'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 70.0\n'
    with pytest.raises(metrics.MetricsError, match="given twice"):
        metrics.read_counters(text + twice)


def test_row2_the_module_records_nothing_from_such_a_window(opts):  # noqa: F811
    class Restarting(FakeHost):
        def metrics_text(self):
            text = super(Restarting, self).metrics_text()
            if self.drafts:  # after the first run: restarted, counting again past the old values
                return text.replace("per_pos_total{position=\"0\"} %r" % float(self.per[0]),
                                    "per_pos_total{position=\"0\"} %r" % float(self.per[0] * 3))
            return text
    with pytest.raises(run.BenchError, match="no reading"):
        run.benchmark(opts, runner=Restarting())
    assert not os.path.exists(os.path.join(opts["results_dir"], "last.json"))


# Row 3: a record file that is a FIFO.
@pytest.mark.parametrize("name", ["last.json", "reference.json", "vllm-x__d-0__u-0.json"])
def test_row3_a_fifo_record_is_refused_not_waited_on(opts, name):  # noqa: F811
    os.makedirs(opts["results_dir"])
    fifo = os.path.join(opts["results_dir"], name)
    os.mkfifo(fifo)
    error = _returns_within(5, lambda: run.benchmark(opts, check_mode=True, runner=FakeHost()), [fifo])
    assert isinstance(error, run.BenchError) and "%s is a FIFO" % fifo in str(error)


def test_row3_a_fifo_unit_or_environment_file_is_refused(opts, tmp_path):  # noqa: F811
    os.unlink(opts["unit_path"])
    os.mkfifo(opts["unit_path"])
    error = _returns_within(5, lambda: run.benchmark(opts, check_mode=True, runner=FakeHost()), [opts["unit_path"]])
    assert isinstance(error, run.BenchError) and "FIFO" in str(error)
    unit = str(tmp_path / "other.service")
    with open(unit, "w") as fh:
        fh.write("[Service]\n")
    os.unlink(opts["env_file"])
    os.mkfifo(opts["env_file"])
    host = FakeHost()
    error = _returns_within(5, lambda: run.benchmark(dict(opts, unit_path=unit), runner=host), [opts["env_file"]])
    assert isinstance(error, run.BenchError) and "env_file" in str(error) and "FIFO" in str(error)
    assert host.calls == []


# Row 4: the results directory is a path that is a regular file.
def test_row4_a_results_path_that_is_a_file_is_refused_before_any_load(opts):  # noqa: F811
    with open(opts["results_dir"], "w") as fh:
        fh.write("not a directory\n")
    for check_mode in (True, False):
        host = FakeHost()
        with pytest.raises(run.BenchError, match="results_dir.*not a directory"):
            run.benchmark(opts, check_mode=check_mode, runner=host)
        assert host.calls == []
    host = FakeHost()
    with pytest.raises(run.BenchError, match="not a directory"):
        run.benchmark(dict(opts, results_dir=os.path.join(opts["results_dir"], "tiny")), runner=host)
    assert host.calls == []
    with open(opts["results_dir"]) as fh:
        assert fh.read() == "not a directory\n"


# Row 5: the drift check's summary and the report table on records that are deep, NaN or text.
def _last(**figures):
    return json.dumps({"key": "k", "time": "t", "generation": "g",
                       "figures": dict({"tok_s_c1": 300.0, "tok_s_cN": 900.0, "concurrency": 4,
                                        "mean_acceptance_length": 4.0}, **figures)})


def test_row5_a_deeply_nested_record_is_said_in_the_summary():
    info = report.drift_info("[" * 100000 + "]" * 100000, "{" * 50000, None)
    assert "does not parse" in info["summary"] and info["recorded"] is None


@pytest.mark.parametrize("text", [_last(tok_s_c1=float("nan")), _last().replace("300.0", "NaN"),
                                  _last().replace("300.0", "Infinity")])
def test_row5_a_nan_record_is_said_not_shown_as_a_figure(text):
    info = report.drift_info(text, "", None)
    assert "tok/s" not in info["summary"] and info["recorded"] is None
    assert "the benchmark record does not parse (" in info["summary"] and "is not a JSON value" in info["summary"]


def test_row5_a_text_figure_is_no_figure_in_the_summary():
    info = report.drift_info(_last(tok_s_c1="fast", concurrency="four"), "", None)
    assert "last recorded benchmark t (g): - tok/s at concurrency 1, 900.0 at -" in info["summary"]


@pytest.mark.parametrize("figures", [
    {"tok_s_c1": "fast", "concurrency": "four", "ttft_p50_ms": "x", "per_position_acceptance": "abc"},
    {"tok_s_c1": float("nan"), "concurrency": float("inf"), "mean_acceptance_length": [1],
     "per_position_acceptance": [0.5, "x", None]},
])
def test_row5_the_table_shows_a_text_figure_as_unreadable(figures):
    text = report.table([{"key": "k", "time": "t", "figures": figures}], "t")
    assert "fast" not in text and "nan" not in text.lower()


# Property tests: the gate on arbitrary records, the /metrics reader on arbitrary scrapes.
_any = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=6)
_figures = st.one_of(_any, st.fixed_dictionaries({}, optional={"mean_acceptance_length": _any, "tok_s_c1": _any,
                                                               "tok_s_c1_spread": _any}))


def _ok(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@settings(max_examples=100)
@given(_figures, _figures, st.booleans(), st.booleans())
def test_property_the_gate_passes_only_on_figures_it_can_compare(previous, current, accept_new, gate_on):
    d = gate.decide(previous, current, accept_new=accept_new, gate=gate_on)
    assert d["verdict"] in ("first", "passed", "failed", "accepted", "recorded")
    assert d["passed"] == d["record"] == (d["verdict"] != "failed")
    assert isinstance(d["message"], str)
    if d["verdict"] == "passed":
        # A pass compared two sound figures of each kind, or had no acceptance to compare on both sides.
        assert _ok(previous["tok_s_c1"]) and _ok(current["tok_s_c1"])
        assert previous.get("mean_acceptance_length") is None or _ok(current.get("mean_acceptance_length"))


_junk = st.sampled_from(["vllm:num_requests_running 1", "# HELP x y", "", 'vllm:spec_decode_num_drafts_created 17.0',
                         'vllm:spec_decode_num_drafts_created 18.0', "vllm:spec_decode_num_drafts_total{",
                         'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="x"} 1',
                         'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="300"} 1'])


def _render(counters, junk):
    names = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
             "vllm:spec_decode_num_accepted_tokens_total")
    lines = ["%s %s" % (name, value) for name, value in zip(names, counters[:3]) if value is not None]
    lines += ['vllm:spec_decode_num_accepted_tokens_per_pos_total{position="%d"} %s' % (i, v)
              for i, v in enumerate(counters[3])]
    return "\n".join(lines + junk) + "\n"


_count = st.one_of(st.none(), st.integers(0, 40))


@st.composite
def _scrapes(draw):
    """Two scrapes, the second the first plus any growth (sound or not), either with junk or a line repeated."""
    first = [draw(_count) for dummy in range(3)] + [draw(st.lists(st.integers(0, 40), max_size=3))]
    grow = [draw(st.integers(0, 40)) for dummy in range(3)] + [draw(st.lists(st.integers(0, 40), max_size=4))]
    second = [None if a is None else a + b for a, b in zip(first[:3], grow[:3])]
    second.append([a + b for a, b in zip(first[3] + [0] * 4, grow[3])] if grow[3] else list(first[3]))
    texts = []
    for counters in (first, second):
        junk = draw(st.lists(_junk, max_size=1))
        text = _render(counters, junk)
        if draw(st.integers(0, 4)) == 0 and text.strip():
            text += draw(st.sampled_from(text.strip().splitlines())) + "\n"
        texts.append(text)
    return texts


@settings(max_examples=100)
@given(_scrapes())
def test_property_a_window_is_sound_or_refused(texts):
    try:
        w = metrics.window(metrics.read_counters(texts[0]), metrics.read_counters(texts[1]))
    except metrics.MetricsError as exc:
        assert str(exc)
        return
    if w["acceptance_rate"] is not None:
        assert 0 <= w["acceptance_rate"] <= 1
    if w["mean_acceptance_length"] is not None:
        assert 1 <= w["mean_acceptance_length"] and math.isfinite(w["mean_acceptance_length"])
    assert all(0 <= v <= 1 for v in w["per_position_acceptance"])


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=4), st.integers(1, 2))
def test_property_an_honest_window_is_read(steps, engines):
    """Honest scrapes (per-position accepted non-increasing, each at most the drafts) always give a reading."""
    def text(drafts, per):
        lines = []
        for e in range(engines):
            lines.append('vllm:spec_decode_num_drafts_total{engine="%d"} %r' % (e, float(drafts)))
            lines.append('vllm:spec_decode_num_draft_tokens_total{engine="%d"} %r' % (e, float(3 * drafts)))
            lines.append('vllm:spec_decode_num_accepted_tokens_total{engine="%d"} %r' % (e, float(sum(per))))
            lines += ['vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="%d",position="%d"} %r'
                      % (e, i, float(v)) for i, v in enumerate(per)]
        return "\n".join(lines) + "\n"
    drafts, per = 0, [0, 0, 0]
    first = text(drafts, per)
    for new, accepted in steps:
        drafts += new
        accepted = min(accepted, new)
        per = [per[0] + accepted, per[1] + accepted // 2, per[2] + accepted // 3]
    w = metrics.window(metrics.read_counters(first), metrics.read_counters(text(drafts, per)))
    assert w["drafts"] == drafts * engines


def test_row5_the_plot_draws_records_whose_figures_are_text():
    pytest.importorskip("matplotlib")
    import importlib.util  # pylint: disable=import-outside-toplevel
    root = os.path.dirname(os.path.abspath(__file__))
    for dummy in range(5):
        root = os.path.dirname(root)
    spec = importlib.util.spec_from_file_location(
        "plot_benchmarks", os.path.join(root, "roles", "serving_benchmark", "files", "plot_benchmarks.py"))
    plot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot)
    records = [{"time": "t1", "figures": {"tok_s_c1": 100.0, "tok_s_cN": 300.0, "mean_acceptance_length": 4.0}},
               {"time": "t2", "figures": {"tok_s_c1": "fast", "tok_s_cN": None, "mean_acceptance_length": [1],
                                          "per_position_acceptance": [0.5, "x", None]}}, "not a record"]
    assert plot.draw({"records": records, "speedup": {"text": 3}}).startswith(b"\x89PNG")
