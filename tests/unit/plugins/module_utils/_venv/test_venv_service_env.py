# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_env refuses, before anything changes, a lock whose vLLM the service's environment cannot start."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.service_env import ServiceEnvError, refusals
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import check_unit_values

ENV = "vllm_service_environment"
SECRET = "vllm_service_secret_environment"


@pytest.mark.parametrize("value", ["0", 0, "false", "", " 0 ", "2"])
def test_vllm_034_refuses_the_v1_runner_switch_other_than_1(value):
    found = refusals({ENV: {"VLLM_USE_V2_MODEL_RUNNER": value}, SECRET: {}}, "0.34.0")
    assert len(found) == 1
    assert found[0].startswith("vllm_service_environment: VLLM_USE_V2_MODEL_RUNNER=")
    assert "vLLM 0.34.0 refuses it at start" in found[0] and "Model Runner V1 has been removed" in found[0]


@pytest.mark.parametrize("version", ["0.34.0", "0.34.1", "0.35.0"])
def test_1_or_unset_is_fine_from_034(version):
    assert refusals({ENV: {"VLLM_USE_V2_MODEL_RUNNER": "1"}}, version) == []
    assert refusals({ENV: {"VLLM_USE_V2_MODEL_RUNNER": 1}}, version) == []
    assert refusals({ENV: {"HF_HUB_OFFLINE": "1"}, SECRET: None}, version) == []
    assert refusals({}, version) == []


@pytest.mark.parametrize("version", ["0.20.1", "0.29.0", "0.33.0"])
def test_before_034_every_value_starts(version):
    assert refusals({ENV: {"VLLM_USE_V2_MODEL_RUNNER": "0"}}, version) == []


def test_a_secret_value_is_never_shown():
    found = refusals({SECRET: {"VLLM_USE_V2_MODEL_RUNNER": "s3cr3t-0"}}, "0.34.0")
    assert len(found) == 1 and found[0].startswith("vllm_service_secret_environment:")
    assert "s3cr3t" not in found[0] and "<hidden>" in found[0]


def test_only_what_the_version_adds_is_returned():
    """The form of an entry is vllm_service's to report (checked once, where the input enters)."""
    envs = {ENV: {"BAD-NAME": "x", "VLLM_USE_V2_MODEL_RUNNER": "0"}}
    assert any("BAD-NAME" in m for m in check_unit_values(envs))
    assert refusals(envs, "0.34.0") == []  # a malformed mapping: its form problem comes first, from vllm_service
    envs = {ENV: {"VLLM_USE_V2_MODEL_RUNNER": "0"}, SECRET: {"X": "line\nbreak"}}
    found = refusals(envs, "0.34.0")
    assert len(found) == 1 and "VLLM_USE_V2_MODEL_RUNNER=0" in found[0]


def test_the_same_messages_as_vllm_services_preflight():
    envs = {ENV: {"VLLM_USE_V2_MODEL_RUNNER": "0"}}
    assert refusals(envs, "0.34.0") == check_unit_values(envs, vllm_version="0.34.0")


@pytest.mark.parametrize("environments, match", [
    ([], "expected a mapping of vllm_service_environment, vllm_service_secret_environment"),
    ({"vllm_service_port": 8000}, "unknown variables vllm_service_port"),
])
def test_bad_input_is_named(environments, match):
    with pytest.raises(ServiceEnvError, match=match):
        refusals(environments, "0.34.0")


def test_the_upgrade_plan_says_refused_before_anything_changes():
    from ansible_collections.inference.gpu_host.plugins.module_utils._stack.upgrade_plan import upgrade_plan
    lock = "torch==2.14.0\nvllm==0.34.0\n"
    plan = upgrade_plan("0.20.1", lock, service={"environment": {"VLLM_USE_V2_MODEL_RUNNER": "0"}})
    assert len(plan["refused"]) == 1 and "vLLM 0.34.0 refuses it at start" in plan["refused"][0]
    assert plan["summary"][1] == "REFUSED: " + plan["refused"][0]
    assert upgrade_plan("0.20.1", lock, service={"environment": {"VLLM_USE_V2_MODEL_RUNNER": "1"}})["refused"] == []
    assert upgrade_plan("0.20.1", lock)["refused"] == []
    old_lock = "torch==2.13.0\nvllm==0.32.0\n"
    assert upgrade_plan("0.20.1", old_lock, service={"environment": {"VLLM_USE_V2_MODEL_RUNNER": "0"}})["refused"] == []
