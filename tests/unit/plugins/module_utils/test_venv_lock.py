# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_lock on real locks written by `uv pip compile` and real venvs installed from them."""

import os
import shutil
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, HERE)
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import (  # noqa: E402
    VenvLockError,
    canonicalize_name,
    compare,
    evaluate_marker,
    find_site_packages,
    installed_distributions,
    marker_environment,
    parse_lock,
    parse_lock_text,
    version_matches,
)

SIX, IDNA = "1.17.0", "3.10"


def compile_lock(tmp_path, venv, lines, name="lock.txt", extra_args=()):
    """`uv pip compile` the requirement lines for the venv's Python; returns the lock path."""
    req = tmp_path / (name + ".in")
    req.write_text("\n".join(lines) + "\n")
    lock = tmp_path / name
    wf._run([wf.uv(), "pip", "compile", "--quiet", "--python", wf.python_of(venv), "--generate-hashes",
             str(req), "-o", str(lock)] + list(extra_args), timeout=300)
    return str(lock)


def uv_install(venv, *args):
    wf._run([wf.uv(), "pip", "install", "--quiet", "--python", wf.python_of(venv)] + list(args), timeout=300)


@pytest.fixture
def small(tmp_path):
    """A venv installed from a 2-package lock with hashes."""
    venv = wf.make_venv(tmp_path / "venv")
    lock = compile_lock(tmp_path, venv, ["six==%s" % SIX, "idna==%s" % IDNA])
    uv_install(venv, "--require-hashes", "-r", lock)
    return venv, lock


def test_fresh_install_is_in_sync(small):
    venv, lock = small
    text = open(lock).read()
    assert "--hash=sha256:" in text and "\\\n" in text  # the real thing: continuation lines
    result = compare(venv, lock)
    assert result["in_sync"] is True
    assert result["missing"] == [] and result["differing"] == [] and result["extra"] == []
    assert result["locked_count"] == 2 and result["installed_count"] == 2


def test_hand_changed_package_is_reported(small):
    venv, lock = small
    uv_install(venv, "six==1.16.0")
    result = compare(venv, lock)
    assert result["in_sync"] is False
    assert result["differing"] == [{"name": "six", "locked": SIX, "installed": "1.16.0"}]
    assert result["missing"] == []


def test_missing_and_extra(small):
    venv, lock = small
    wf._run([wf.uv(), "pip", "uninstall", "--quiet", "--python", wf.python_of(venv), "idna"])
    uv_install(venv, "--no-deps", "certifi")
    result = compare(venv, lock)
    assert result["in_sync"] is False
    assert result["missing"] == [{"name": "idna", "locked": IDNA}]
    assert [e["name"] for e in result["extra"]] == ["certifi"]
    assert compare(venv, lock, include_extra=False)["extra"] == []


def test_site_packages_path_works_too(small):
    venv, lock = small
    site = find_site_packages(venv)
    assert site == wf.site_packages(venv)
    assert compare(site, lock)["in_sync"] is True


def test_universal_lock_markers_apply_to_this_venv(tmp_path):
    venv = wf.make_venv(tmp_path / "venv")
    lock = compile_lock(tmp_path, venv, ["click==8.1.8"], extra_args=["--universal"])
    text = open(lock).read()
    assert "colorama==" in text and "sys_platform == 'win32'" in text
    uv_install(venv, "-r", lock)
    reqs = {r["name"]: r for r in parse_lock(lock)}
    assert reqs["colorama"]["marker"] == "sys_platform == 'win32'"
    result = compare(venv, lock)
    assert result["in_sync"] is True, result  # colorama is for Windows only: not missing here
    assert result["locked_count"] == 1


def test_url_pin_compares_the_source(tmp_path):
    fa2 = wf.fa2_wheel()
    venv = wf.make_venv(tmp_path / "venv")
    lock = compile_lock(tmp_path, venv, ["flash-attn @ file://%s" % fa2], extra_args=["--no-deps"])
    uv_install(venv, "--no-deps", "-r", lock)
    result = compare(venv, lock)
    assert result["in_sync"] is True, result
    moved = tmp_path / "wheelhouse"
    moved.mkdir()
    shutil.copy(fa2, str(moved))
    other = tmp_path / "other.txt"
    other.write_text("flash-attn @ file://%s\n" % (moved / os.path.basename(fa2)))
    result = compare(venv, str(other))
    assert result["in_sync"] is False
    assert result["differing"][0]["name"] == "flash-attn"
    assert result["differing"][0]["installed"].startswith("2.8.3 (file://%s" % fa2)


def test_dev_lock_of_this_repo_parses_and_compares_fast():
    """requirements-dev.txt is a real `uv pip compile --generate-hashes` output; .venv was installed from it."""
    lock = os.path.join(ROOT, "requirements-dev.txt")
    reqs = parse_lock(lock)
    pins = [line for line in open(lock) if "==" in line and not line.startswith((" ", "#"))]
    assert len(reqs) == len(pins) > 20
    assert any(r["name"] == "ansible-core" and r["version"].startswith("2.19.") for r in reqs)
    start = time.time()
    result = compare(os.path.join(ROOT, ".venv"), lock)
    elapsed = time.time() - start
    assert result["locked_count"] == len(reqs)
    assert elapsed < 2.0, "comparing %d packages took %.2f s" % (result["installed_count"], elapsed)


# ---------------------------------------------------------------------------
# parsing, names, versions, markers

LOCK_TEXT = """\
# This file was autogenerated by uv via the following command:
#    uv pip compile req.in -o lock.txt --generate-hashes
--index-url https://example.invalid/simple
Six==1.17.0 \\
    --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274 \\
    --hash=sha256:ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81
    # via -r req.in
uvicorn[standard]==0.30.0 ; python_version >= "3.8"
    # via vllm
Typing_Extensions===4.12.2
torch==2.11.0
local-wheel @ file:///srv/wheels/local_wheel-1.0-py3-none-any.whl ; sys_platform == "linux"
"""


def test_parse_lock_text():
    reqs = parse_lock_text(LOCK_TEXT, "lock.txt")
    assert [(r["name"], r["version"], r["operator"]) for r in reqs] == [
        ("six", "1.17.0", "=="), ("uvicorn", "0.30.0", "=="), ("typing-extensions", "4.12.2", "==="),
        ("torch", "2.11.0", "=="), ("local-wheel", None, "@")]
    assert reqs[0]["line"] == 4 and reqs[0]["raw_name"] == "Six"
    assert reqs[1]["extras"] == ["standard"] and reqs[1]["marker"] == 'python_version >= "3.8"'
    assert reqs[4]["url"] == "file:///srv/wheels/local_wheel-1.0-py3-none-any.whl"
    assert reqs[4]["marker"] == 'sys_platform == "linux"'


@pytest.mark.parametrize("line", ["six>=1.0", "six", "six==1.0,<2", "==1.0"])
def test_unpinned_lines_are_refused_with_file_and_line(line):
    with pytest.raises(VenvLockError, match=r"my\.lock line 2: .*"):
        parse_lock_text("idna==3.10\n%s\n" % line, "my.lock")


def test_unreadable_lock_and_missing_venv(tmp_path):
    with pytest.raises(VenvLockError, match="cannot read lock file .*nope.txt"):
        parse_lock(str(tmp_path / "nope.txt"))
    with pytest.raises(VenvLockError, match="venv .*novenv does not exist"):
        compare(str(tmp_path / "novenv"), str(tmp_path / "nope.txt"))


def test_pinned_twice_for_this_venv(tmp_path):
    venv = wf.make_venv(tmp_path / "venv")
    lock = tmp_path / "dup.txt"
    lock.write_text("six==1.17.0\nsix==1.16.0 ; os_name == 'posix'\nsix==1.15.0 ; os_name == 'nt'\n")
    with pytest.raises(VenvLockError, match="pins six twice .*lines 1 and 2"):
        compare(venv, str(lock))


def test_canonicalize_name():
    assert canonicalize_name("Flash_Attn") == "flash-attn"
    assert canonicalize_name("flash.attn--4") == "flash-attn-4"


@pytest.mark.parametrize("locked,installed,op,expected", [
    ("2.11.0", "2.11.0+cu130", "==", True),   # PEP 440: no local label in the pin accepts any
    ("2.11.0+cpu", "2.11.0", "==", False),
    ("2.11.0+cpu", "2.11.0+cpu", "==", True),
    ("1.0", "1.0.0", "==", True),
    ("4.0.0b12", "4.0.0b12", "==", True),
    ("4.0.0b12", "4.0.0", "==", False),
    ("2.8.3", "2.8.3.post1", "==", False),
    ("2.8.*", "2.8.3", "==", True),
    ("2.8.*", "2.9.0", "==", False),
    ("1.0-foo", "1.0-FOO", "===", True),
    ("1.0", None, "==", False),
])
def test_version_matches(locked, installed, op, expected):
    assert version_matches(locked, installed, op) is expected


def test_markers_use_the_venvs_python(tmp_path):
    venv = wf.make_venv(tmp_path / "venv")
    env = marker_environment(find_site_packages(venv), os.path.join(venv, "pyvenv.cfg"))
    assert env["python_version"] == "%d.%d" % sys.version_info[:2]
    assert env["sys_platform"] == sys.platform
    assert evaluate_marker('python_version >= "3.8" and os_name == "posix"', env)
    assert not evaluate_marker("sys_platform == 'win32'", env)
    assert evaluate_marker('(python_version < "3" or platform_machine == "%s")' % env["platform_machine"], env)
    assert evaluate_marker('python_version == "3.*"', env)
    assert not evaluate_marker('python_version != "%s.*"' % env["python_version"], env)
    assert evaluate_marker('python_full_version ~= "%s.0"' % env["python_version"], env)
    assert evaluate_marker('"linux" in sys_platform or sys_platform not in "win32 cygwin"', env)
    assert not evaluate_marker('extra == "cuda"', env)
    with pytest.raises(VenvLockError, match="unknown variable"):
        evaluate_marker('no_such_var == "1"', env)
    with pytest.raises(VenvLockError, match="unbalanced|ends too early"):
        evaluate_marker('(python_version == "3.11"', env)


def test_installed_distributions_reads_metadata(small):
    venv, _lock = small
    dists = installed_distributions(find_site_packages(venv))
    assert [(d["name"], d["version"]) for d in dists] == [("idna", IDNA), ("six", SIX)]
