# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_env_host_state run for real as a subprocess on a generations layout in a scratch directory."""

import os
import sys

import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils", "_venv"))
from test_venv_state import LOCK, settled_host  # noqa: E402  pylint: disable=wrong-import-position


def _args(root, **over):
    args = {"venv_dir": os.path.join(root, "ml-env"), "requirements": LOCK, "lock": LOCK, "python": sys.executable,
            "uv_cache_dir": os.path.join(root, "uv-cache"), "record": os.path.join(root, "python_env.fact"),
            "free_gib": 0}
    args.update(over)
    return args


def test_reads_a_settled_host(tmp_path):
    root = str(tmp_path)
    settled_host(root, pyver="%d.%d.%d" % sys.version_info[:3])
    result = _module_runner.run_module("python_env_host_state", tmp_path, _args(root), check=True, check_rc=True)
    assert not result.get("changed")
    assert result["python_version"] == "%d.%d.%d" % sys.version_info[:3]
    assert result["venv"]["in_sync"], result
    assert result["lock_same"] and result["expected_same"] and result["complete"]
    assert result["vllm"]["version"] == "0.32.0" and result["record"]["vllm_version"] == "0.32.0"
    assert result["uv_version"] == ""


def test_bad_options_name_the_option(tmp_path):
    result = _module_runner.run_module("python_env_host_state", tmp_path, _args(str(tmp_path), record="rel.fact"))
    assert result["failed"] and "record must be an absolute path" in result["msg"]
    result = _module_runner.run_module("python_env_host_state", tmp_path, _args(str(tmp_path), python="/no/python"))
    assert result["failed"] and "python_env_python=/no/python does not run" in result["msg"]
    result = _module_runner.run_module("python_env_host_state", tmp_path, _args(str(tmp_path), state_subdir="../x"))
    assert result["failed"] and "state_subdir" in result["msg"]
