"""module_utils/_bench/gate.py: the gate's decision."""
import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import gate

GOOD = {"mean_acceptance_length": 4.0, "tok_s_c1": 100.0}


def test_first_run_records_and_passes():
    d = gate.decide(None, GOOD)
    assert (d["verdict"], d["passed"], d["record"]) == ("first", True, True)
    assert "nothing recorded" in d["message"]


def test_within_the_thresholds_passes():
    d = gate.decide(GOOD, {"mean_acceptance_length": 3.7, "tok_s_c1": 86.0})
    assert (d["verdict"], d["passed"], d["record"]) == ("passed", True, True)


def test_acceptance_falling_fails_with_both_figures():
    d = gate.decide(GOOD, {"mean_acceptance_length": 1.0, "tok_s_c1": 99.0})
    assert (d["verdict"], d["passed"], d["record"]) == ("failed", False, False)
    assert "mean acceptance length 4 -> 1 (-75.0 %, allowed fall 10 %)" in d["message"]
    assert "single-request tok/s 100.0 -> 99 (-1.0 %, allowed fall 15 %)" in d["message"]
    assert "mean_acceptance_length" in d["message"] and "tok_s_c1" not in d["message"].split(":", maxsplit=1)[0]


def test_tok_s_falling_fails():
    d = gate.decide(GOOD, {"mean_acceptance_length": 4.0, "tok_s_c1": 80.0})
    assert d["verdict"] == "failed" and "(tok_s_c1)" in d["message"]


def test_thresholds_are_the_callers():
    assert gate.decide(GOOD, {"mean_acceptance_length": 3.0, "tok_s_c1": 100.0}, acceptance_drop=0.3)["passed"]
    assert not gate.decide(GOOD, {"mean_acceptance_length": 4.0, "tok_s_c1": 99.0}, tok_s_drop=0.0)["passed"]


def test_accept_new_records_a_fall_on_purpose():
    d = gate.decide(GOOD, {"mean_acceptance_length": 1.0, "tok_s_c1": 50.0}, accept_new=True)
    assert (d["verdict"], d["passed"], d["record"]) == ("accepted", True, True)
    assert "4 -> 1" in d["message"] and "100.0 -> 50" in d["message"]


def test_acceptance_gone_fails():
    d = gate.decide(GOOD, {"mean_acceptance_length": None, "tok_s_c1": 100.0})
    assert d["verdict"] == "failed" and "-> none" in d["message"]


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
    assert (d["verdict"], d["passed"], d["record"]) == ("recorded", True, True)


@given(_figure, _figure, _figure, _figure, st.floats(0, 0.99), st.floats(0, 0.99), st.booleans())
def test_property_the_verdict(acc0, tok0, acc1, tok1, acc_drop, tok_drop, accept_new):
    previous = {"mean_acceptance_length": acc0, "tok_s_c1": tok0}
    current = {"mean_acceptance_length": acc1, "tok_s_c1": tok1}
    d = gate.decide(previous, current, acc_drop, tok_drop, accept_new)
    fell = acc1 < acc0 * (1 - acc_drop) - 1e-6 or tok1 < tok0 * (1 - tok_drop) - 1e-6
    kept = acc1 >= acc0 * (1 - acc_drop) + 1e-6 and tok1 >= tok0 * (1 - tok_drop) + 1e-6
    # Failed is the one verdict that neither passes nor records; accept_new never fails.
    assert d["passed"] == d["record"] == (d["verdict"] != "failed")
    if fell:
        assert d["verdict"] == ("accepted" if accept_new else "failed")
    if kept:
        assert d["verdict"] == "passed"
    if not d["passed"]:
        # Both figures, old and new, are in the message.
        assert d["message"].count("->") == 2
