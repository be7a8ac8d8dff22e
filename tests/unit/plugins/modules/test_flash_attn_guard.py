# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""flash_attn_guard run for real, as Ansible runs it (a subprocess with an args file), on real
flash-attn wheels in real venvs."""

import glob
import json
import os
import sys

import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils", "_venv"))
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position


def run_module(tmp_path, args, check=False, diff=False):
    return _module_runner.run_module("flash_attn_guard", tmp_path, args, check=check, diff=diff, check_rc=True)


@pytest.fixture(scope="session")
def fa4():
    return wf.fa4_wheel()


@pytest.fixture(scope="session")
def fa2():
    return wf.fa2_wheel()


@pytest.fixture
def venv(tmp_path):
    return wf.make_venv(tmp_path / "venv")


def test_fail_policy_on_fa4(tmp_path, venv, fa4):
    wf.install(venv, fa4)
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv})  # policy defaults to fail
    assert result["failed"] is True
    assert "flash-attn-4" in result["msg"] and wf.FA4_VERSION in result["msg"] and venv in result["msg"]
    assert result["state"] == "conflict" and result["changed"] is False
    assert [(o["name"], o["version"]) for o in result["owners"]] == [("flash-attn-4", wf.FA4_VERSION)]
    assert wf.tree(venv) == before


def test_report_policy_in_check_mode(tmp_path, venv, fa4):
    wf.install(venv, fa4)
    wf.pip_uninstall(venv, "flash-attn-4")
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv, "policy": "report"}, check=True)
    assert "failed" not in result
    assert result["changed"] is False
    assert result["state"] == "conflict" and result["state_after"] == "conflict"
    assert result["owners"] == [] and result["leftovers"] == ["flash_attn/"]
    assert result["rotary_owner"] is None and result["actions"] == []
    assert wf.tree(venv) == before


def test_remove_in_check_mode_with_diff_changes_nothing(tmp_path, venv, fa2, fa4):
    wf.install(venv, fa2)
    wf.install(venv, fa4)
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv, "policy": "remove"}, check=True, diff=True)
    assert wf.tree(venv) == before
    assert result["changed"] is True
    assert result["state"] == "conflict" and result["state_after"] == "ok"
    assert [a["name"] for a in result["actions"] if a["action"] == "uninstall"] == ["flash-attn-4"]
    assert [o["name"] for o in result["owners_after"]] == ["flash-attn"]
    assert "flash-attn-4 4.0.0b12" in result["diff"]["before"]
    assert "flash-attn-4" not in result["diff"]["after"] and "flash-attn 2.8.3" in result["diff"]["after"]
    assert result["diff"]["before_header"] == wf.site_packages(venv)
    assert "would take" in result["msg"]
    # flash-attn-4 installed over flash-attn 2 rewrote the shared cute/ files: warned, not hidden
    assert "differ from its RECORD" in json.dumps(result.get("warnings"))  # 2.19 nests warnings in dicts


def test_remove_then_idempotent(tmp_path, venv, fa4):
    wf.install(venv, fa4)
    result = run_module(tmp_path, {"venv": venv, "policy": "remove"}, diff=True)
    assert result["changed"] is True
    assert result["state"] == "conflict" and result["state_after"] == "absent"
    assert result["owners_after"] == []
    assert wf.find_spec(venv) is None
    again = run_module(tmp_path, {"venv": venv, "policy": "remove"}, diff=True)
    assert again["changed"] is False and again["actions"] == []
    assert again["state"] == "absent" and again["diff"]["before"] == again["diff"]["after"]


def test_ok_venv(tmp_path, venv, fa2):
    wf.install(venv, fa2)
    result = run_module(tmp_path, {"venv": venv, "policy": "fail", "expected_major": 2})
    assert result["changed"] is False and result["state"] == "ok" and result["state_after"] == "ok"
    assert result["rotary_owner"] == {"name": "flash-attn", "version": wf.FA2_VERSION}
    assert result["owners"][0]["expected"] is True and result["owners"][0]["files"] > 50
    assert "diff" not in result
    assert "flash-attn 2.8.3 alone" in result["msg"]


def test_bad_venv_fails_with_the_path(tmp_path):
    result = run_module(tmp_path, {"venv": str(tmp_path / "missing"), "policy": "report"})
    assert result["failed"] is True and str(tmp_path / "missing") in result["msg"]


def test_bad_policy_is_refused_by_the_argument_spec(tmp_path, venv):
    result = run_module(tmp_path, {"venv": venv, "policy": "delete"})
    assert result["failed"] is True and "policy" in result["msg"]


@pytest.mark.parametrize("check", [False, True])
def test_remove_refuses_a_record_naming_the_venv_root_and_changes_nothing(tmp_path, venv, fa2, fa4, check):
    """The admin's worst case: a `../../..` line in flash-attn-4's RECORD used to rmtree the whole venv."""
    wf.install(venv, fa2)
    wf.install(venv, fa4)
    (record,) = glob.glob(os.path.join(wf.site_packages(venv), "flash_attn_4-*.dist-info", "RECORD"))
    with open(record, "a") as handle:
        handle.write("../../..,,\n")
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv, "policy": "remove"}, check=check, diff=True)
    assert result["failed"] is True and result["changed"] is False, result["msg"]
    assert "'../../..' names a directory (%s)" % os.path.realpath(venv) in result["msg"]
    assert record in result["msg"] and "nothing was deleted" in result["msg"]
    assert result["state"] == "conflict" and result["actions"] == []
    assert "Traceback" not in json.dumps(result)
    assert wf.tree(venv) == before


def test_a_record_the_csv_module_cannot_read_fails_cleanly(tmp_path, venv, fa4):
    wf.install(venv, fa4)
    (record,) = glob.glob(os.path.join(wf.site_packages(venv), "flash_attn_4-*.dist-info", "RECORD"))
    with open(record, "a") as handle:
        handle.write("flash_attn/" + "a" * (200 * 1024) + ",,\n")  # over csv's 128 KiB field limit
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv, "policy": "remove"})
    assert result["failed"] is True and not result.get("changed")
    assert record in result["msg"] and "field larger than field limit" in result["msg"]
    assert "Traceback" not in json.dumps(result) and "exception" not in result
    assert wf.tree(venv) == before


def test_a_conflict_says_what_it_does_to_the_installed_vllm(tmp_path, venv, fa4):
    wf.install(venv, fa4)
    old = run_module(tmp_path, {"venv": venv, "vllm_version": "0.22.0"})
    assert old["failed"] and old["vllm_impact"]["fatal"] is True
    assert "Installed: vllm 0.22.0 stops at model load with \"No module named 'flash_attn.ops'\"" in old["msg"]
    new = run_module(tmp_path, {"venv": venv, "vllm_version": "0.33.0", "policy": "report"})
    assert "failed" not in new and new["vllm_impact"]["fatal"] is False
    assert "starts without flash_attn.ops" in new["msg"] and "still treats it as a conflict" in new["msg"]
    bad = run_module(tmp_path, {"venv": venv, "vllm_version": "latest"})
    assert bad["failed"] and bad["msg"].startswith("vllm_version: ")


def test_abi_check_of_a_python_only_build(tmp_path, venv, fa2):
    wf.install(venv, fa2)
    result = run_module(tmp_path, {"venv": venv, "abi_check": True})
    assert "failed" not in result, result
    assert result["abi"]["state"] == "no_extension" and result["abi"]["extension"] is None


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build a real extension")
def test_abi_check_names_the_wheel_and_torch_on_an_undefined_symbol(tmp_path, venv, fa2):
    """A real shared object that needs a symbol of another torch build: dlopen fails as it does on a GPU host
    when the flash-attn wheel was built for another torch (a c10 symbol missing)."""
    wf.install(venv, fa2)
    suffix = subprocess.check_output([wf.python_of(venv), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                                     text=True).strip()
    src = tmp_path / "ext.c"
    src.write_text("extern void _ZN3c104cuda9SetDeviceEa(signed char);\nvoid f(void) { _ZN3c104cuda9SetDeviceEa(0); }\n")
    so = os.path.join(wf.site_packages(venv), "flash_attn_2_cuda" + suffix)
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-o", so, str(src)])
    before = wf.tree(venv)
    result = run_module(tmp_path, {"venv": venv, "abi_check": True})
    assert result["failed"] and result["abi"]["state"] == "mismatch"
    assert result["abi"]["symbol"] == "_ZN3c104cuda9SetDeviceEa"
    assert result["msg"].startswith("flash-attn 2.8.3's compiled extension %s does not match torch not importable" % so)
    assert "undefined symbol _ZN3c104cuda9SetDeviceEa" in result["msg"] and result["changed"] is False
    assert wf.tree(venv) == before
