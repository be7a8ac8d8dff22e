# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_venv_lock run for real as a subprocess, on a real `uv pip compile` lock and a real venv."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils", "_venv"))
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position


def run_module(tmp_path, args, check=False):
    return _module_runner.run_module("python_venv_lock", tmp_path, args, check=check, check_rc=True)


def uv_pip(venv, *args):
    wf._run([wf.uv(), "pip"] + list(args[:1]) + ["--quiet", "--python", wf.python_of(venv)] + list(args[1:]), timeout=300)


@pytest.fixture
def small(tmp_path):
    venv = wf.make_venv(tmp_path / "venv")
    req = tmp_path / "req.in"
    req.write_text("six==1.17.0\nidna==3.10\n")
    lock = str(tmp_path / "lock.txt")
    wf._run([wf.uv(), "pip", "compile", "--quiet", "--python", wf.python_of(venv), "--generate-hashes", str(req), "-o", lock])
    uv_pip(venv, "install", "--require-hashes", "-r", lock)
    return venv, lock


def test_in_sync(tmp_path, small):
    venv, lock = small
    result = run_module(tmp_path, {"venv": venv, "lock": lock})
    assert result["changed"] is False
    assert result["in_sync"] is True and result["differences"] == [] and result["missing"] == []
    assert result["locked_count"] == 2 and result["site_packages"] == wf.site_packages(venv)


def test_differences_after_a_hand_change(tmp_path, small):
    venv, lock = small
    uv_pip(venv, "install", "six==1.16.0")
    uv_pip(venv, "uninstall", "idna")
    result = run_module(tmp_path, {"venv": venv, "lock": lock}, check=True)
    assert result["changed"] is False
    assert result["in_sync"] is False
    assert result["differences"] == [{"name": "idna", "locked": "3.10", "installed": None},
                                     {"name": "six", "locked": "1.17.0", "installed": "1.16.0"}]
    assert result["missing"] == ["idna"]
    assert "2 package(s)" in result["msg"]


def test_bad_lock_line_fails_naming_file_and_line(tmp_path, small):
    venv, _lock = small
    bad = tmp_path / "bad.txt"
    bad.write_text("six==1.17.0\nidna>=3\n")
    result = run_module(tmp_path, {"venv": venv, "lock": str(bad)})
    assert result["failed"] is True
    assert str(bad) in result["msg"] and "line 2" in result["msg"] and "idna>=3" in result["msg"]


def test_missing_lock_file(tmp_path, small):
    venv, _lock = small
    result = run_module(tmp_path, {"venv": venv, "lock": str(tmp_path / "none.txt")})
    assert result["failed"] is True and "none.txt" in result["msg"]


def test_exact_reports_a_package_installed_by_hand(tmp_path, small):
    venv, lock = small
    uv_pip(venv, "install", "Typing_Extensions==4.12.2")
    loose = run_module(tmp_path, {"venv": venv, "lock": lock})
    assert loose["in_sync"] is True and loose["unexpected"] == []
    assert {"name": "typing-extensions", "installed": "4.12.2"} in loose["extra"]
    exact = run_module(tmp_path, {"venv": venv, "lock": lock, "exact": True})
    assert exact["in_sync"] is False
    assert exact["unexpected"] == [{"name": "typing-extensions", "installed": "4.12.2"}]
    assert exact["differences"] == [{"name": "typing-extensions", "locked": None, "installed": "4.12.2"}]
    kept = run_module(tmp_path, {"venv": venv, "lock": lock, "exact": True, "keep": ["typing_extensions"]})
    assert kept["in_sync"] is True and kept["unexpected"] == []
