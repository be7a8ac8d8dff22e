# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/flash_attn_guard.py on real flash-attn wheels installed in real venvs, and its removal
against broken and hostile venvs: it never deletes outside its bounds.

flash-attn-4 is the real 4.0.0b12 wheel from the index; flash-attn 2.8.3 is its real sdist built
without CUDA (see _wheel_fixtures). Nothing here imports flash_attn: only RECORDs, the file
system, and ``find_spec`` at the top level (which does not run the package).

The hostile venvs are built file by file in tmp_path (a pyvenv.cfg, bin/, lib/python3.11/site-packages/ with
flash-attn 2.8.3 and flash-attn-4 4.0.0b12 dist-infos whose RECORDs carry real sha256 hashes), so a
test can plant exactly the broken RECORD line, symlink or metadata file it is about. Every test that
expects a refusal snapshots the whole tree (and a sentinel directory outside the venv) before and after.
"""

import base64
import contextlib
import glob
import hashlib
import os
import shutil
import stat
import sys
import tempfile

import pytest
from hypothesis import example, given, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_guard import (  # noqa: E402
    FlashAttnGuardError,
    ROTARY,
    apply_removal,
    guard,
    inspect_venv,
    plan_removal,
)


@pytest.fixture(scope="session")
def fa4():
    return wf.fa4_wheel()


@pytest.fixture(scope="session")
def fa2():
    return wf.fa2_wheel()


@pytest.fixture(scope="session")
def fa4_uninstalled(tmp_path_factory, fa4):
    """A venv where flash-attn-4 was installed and then `pip uninstall`ed (ct129's state); copy it per test."""
    venv = wf.make_venv(tmp_path_factory.mktemp("template") / "fa4-uninstalled")
    wf.install(venv, fa4)
    wf.pip_uninstall(venv, "flash-attn-4")
    return venv


def _venv(tmp_path, name="venv"):
    venv = wf.make_venv(tmp_path / name)
    return venv, wf.site_packages(venv)


def _owners(view):
    return [(o["name"], o["version"]) for o in view["owners"]]


# ---------------------------------------------------------------------------
# detection

def test_fa4_alone_is_a_conflict_naming_it(tmp_path, fa4):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa4)
    spec = wf.find_spec(venv)
    assert spec["namespace"], spec  # no flash_attn/__init__.py: Python sees a namespace package
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "conflict"
    assert _owners(view) == [("flash-attn-4", wf.FA4_VERSION)]
    owner = view["owners"][0]
    assert owner["expected"] is False
    assert owner["files"] == len([p for p in wf.record_paths(site, "flash_attn_4-*.dist-info")
                                  if p.startswith("flash_attn/")])
    assert view["rotary_owner"] is None
    assert view["leftovers"] == []
    assert any("flash-attn-4 4.0.0b12" in p for p in view["problems"])
    assert any(ROTARY in p for p in view["problems"])


def test_fail_policy_names_distribution_version_and_venv_and_changes_nothing(tmp_path, fa4):
    venv, _site = _venv(tmp_path)
    wf.install(venv, fa4)
    before = wf.tree(venv)
    with pytest.raises(FlashAttnGuardError) as err:
        guard(venv, policy="fail")
    message = str(err.value)
    assert "flash-attn-4" in message and wf.FA4_VERSION in message and venv in message
    assert err.value.result["before"]["state"] == "conflict"
    assert err.value.result["actions"] == [] and err.value.result["changed"] is False
    assert wf.tree(venv) == before


def test_pip_uninstall_leaves_an_empty_directory_that_is_detected(tmp_path, fa4_uninstalled):
    """The ct129 failure: after `pip uninstall flash-attn-4`, flash_attn/ stays and find_spec still finds it."""
    venv = wf.copy_venv(fa4_uninstalled, tmp_path / "venv")
    site = wf.site_packages(venv)
    assert os.listdir(os.path.join(site, "flash_attn")) == []
    spec = wf.find_spec(venv)
    assert spec is not None and spec["namespace"] and spec["locations"] == [os.path.join(site, "flash_attn")]
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "conflict"
    assert view["owners"] == []
    assert view["leftovers"] == ["flash_attn/"]
    assert any("namespace package" in p for p in view["problems"])


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_fa2_alone_is_ok_and_owns_rotary(tmp_path, fa2, installer):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2, installer=installer)
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "ok", view["problems"]
    assert _owners(view) == [("flash-attn", wf.FA2_VERSION)]
    assert view["owners"][0]["expected"] is True
    assert view["rotary_owner"] == {"name": "flash-attn", "version": wf.FA2_VERSION}
    assert ROTARY in wf.record_paths(site, "flash_attn-2.8.3.dist-info")
    assert view["leftovers"] == [] and view["damaged"] == [] and view["problems"] == []
    spec = wf.find_spec(venv)
    assert spec["origin"] == os.path.join(site, "flash_attn", "__init__.py")


def test_pyc_written_after_install_belongs_to_its_source(tmp_path, fa2):
    """uv does not compile, so RECORD lists no .pyc; the ones Python writes later are not leftovers."""
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2, installer="uv")
    assert not glob.glob(os.path.join(site, "flash_attn", "**", "*.pyc"), recursive=True)
    wf._run([wf.python_of(venv), "-m", "compileall", "-q", os.path.join(site, "flash_attn")])
    assert glob.glob(os.path.join(site, "flash_attn", "ops", "triton", "__pycache__", "rotary.*.pyc"))
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "ok", view["problems"]
    assert view["leftovers"] == []


@pytest.mark.parametrize("order", ["fa2-first", "fa4-first"])
def test_fa2_and_fa4_together_conflict_and_remove_keeps_fa2(tmp_path, fa2, fa4, order):
    venv, site = _venv(tmp_path)
    for wheel in ([fa2, fa4] if order == "fa2-first" else [fa4, fa2]):
        wf.install(venv, wheel)  # one at a time: a single pip call picks its own order
    fa2_record = wf.record_paths(site, "flash_attn-2.8.3.dist-info")
    fa4_record = wf.record_paths(site, "flash_attn_4-*.dist-info")
    shared = sorted(set(fa2_record) & set(fa4_record))
    # the reference says "disjoint RECORDs"; the real wheels share flash_attn/cute/ files
    assert "flash_attn/cute/__init__.py" in shared

    view = inspect_venv(venv).as_dict()
    assert view["state"] == "conflict"
    assert sorted(_owners(view)) == [("flash-attn", wf.FA2_VERSION), ("flash-attn-4", wf.FA4_VERSION)]
    assert view["rotary_owner"] == {"name": "flash-attn", "version": wf.FA2_VERSION}
    if order == "fa2-first":
        # flash-attn-4 overwrote the shared files: reported, not hidden
        damaged = set(d["path"] for d in view["damaged"])
        assert damaged and damaged <= set(shared)
    else:
        assert view["damaged"] == []

    before = wf.tree(site)
    outcome = guard(venv, policy="remove")
    assert outcome["changed"] is True
    assert outcome["after"]["state"] == "ok", outcome["after"]["problems"]
    assert _owners(outcome["after"]) == [("flash-attn", wf.FA2_VERSION)]
    assert outcome["after"]["leftovers"] == []
    uninstall = [a for a in outcome["actions"] if a["action"] == "uninstall"]
    assert [(a["name"], a["version"]) for a in uninstall] == [("flash-attn-4", wf.FA4_VERSION)]
    assert set(shared) <= set(uninstall[0]["kept"])

    after = wf.tree(site)
    for rel in fa2_record:  # every flash-attn 2 file still there, untouched
        assert rel in after, rel
        assert after[rel] == before[rel], rel
    assert not glob.glob(os.path.join(site, "flash_attn_4-*"))
    # nothing outside flash-attn-4's files (and their directories / .pyc) went away
    gone = set(before) - set(after)
    fa4_dist = [p for p in before if p.startswith("flash_attn_4-")]
    assert gone <= set(fa4_record) | set(fa4_dist) | set(p for p in before if before[p][0] == "dir") | \
        set(p for p in before if p.endswith(".pyc"))
    spec = wf.find_spec(venv)
    assert spec["origin"] == os.path.join(site, "flash_attn", "__init__.py") and not spec["namespace"]


def test_pip_uninstall_of_fa4_damages_fa2_and_the_guard_says_so(tmp_path, fa2, fa4):
    """Why removal reads RECORDs itself: pip deletes flash-attn-4's files even where flash-attn 2 owns them too."""
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2)
    wf.install(venv, fa4)
    wf.pip_uninstall(venv, "flash-attn-4")
    assert not os.path.exists(os.path.join(site, "flash_attn", "cute", "__init__.py"))
    view = inspect_venv(venv).as_dict()
    assert _owners(view) == [("flash-attn", wf.FA2_VERSION)]
    missing = [d["path"] for d in view["damaged"] if d["problem"] == "missing"]
    assert "flash_attn/cute/__init__.py" in missing
    # rotary.py is not shared, so vLLM's import still works: ownership is ok, the damage is reported
    assert view["state"] == "ok"


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_remove_fa4_alone_leaves_nothing_and_find_spec_is_none(tmp_path, fa4, installer):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa4, installer=installer)  # pip lists .pyc files in RECORD, uv does not
    before = wf.tree(venv)
    outcome = guard(venv, policy="remove")
    assert outcome["changed"] is True
    assert outcome["before"]["state"] == "conflict" and outcome["after"]["state"] == "absent"
    assert not os.path.lexists(os.path.join(site, "flash_attn"))
    assert not glob.glob(os.path.join(site, "flash_attn*"))
    assert wf.find_spec(venv) is None
    after = wf.tree(venv)
    assert set(after) <= set(before)
    for rel in set(before) - set(after):
        rel_site = os.path.relpath(os.path.join(venv, rel), site)
        assert rel_site.startswith("flash_attn"), rel
    # idempotent: nothing left to do
    again = guard(venv, policy="remove")
    assert again["changed"] is False and again["actions"] == [] and again["before"]["state"] == "absent"


def test_remove_leftover_directory_after_pip_uninstall(tmp_path, fa4_uninstalled):
    venv = wf.copy_venv(fa4_uninstalled, tmp_path / "venv")
    site = wf.site_packages(venv)
    outcome = guard(venv, policy="remove")
    assert outcome["actions"] == [{"action": "remove_leftover", "path": "flash_attn/",
                                   "steps": [["rmdir_if_empty", os.path.realpath(os.path.join(site, "flash_attn"))]]}]
    assert outcome["after"]["state"] == "absent"
    assert not os.path.exists(os.path.join(site, "flash_attn"))
    assert wf.find_spec(venv) is None


def test_leftovers_beside_fa2_are_removed_and_fa2_kept(tmp_path, fa2):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2)
    fa_dir = os.path.join(site, "flash_attn")
    os.makedirs(os.path.join(fa_dir, "cute_old", "sub"))
    with open(os.path.join(fa_dir, "ops", "stray.py"), "w") as handle:
        handle.write("# not from any wheel\n")
    os.makedirs(os.path.join(fa_dir, "ops", "__pycache__"), exist_ok=True)
    with open(os.path.join(fa_dir, "ops", "__pycache__", "gone.cpython-311.pyc"), "wb") as handle:
        handle.write(b"\0")
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "conflict"
    # uv wrote no .pyc, so the whole __pycache__ is unowned: reported as one directory
    assert view["leftovers"] == ["flash_attn/cute_old/", "flash_attn/ops/__pycache__/", "flash_attn/ops/stray.py"]
    before = wf.tree(site)
    outcome = guard(venv, policy="remove")
    assert outcome["after"]["state"] == "ok" and outcome["after"]["leftovers"] == []
    after = wf.tree(site)
    assert set(before) - set(after) == {"flash_attn/cute_old", "flash_attn/cute_old/sub", "flash_attn/ops/stray.py",
                                        "flash_attn/ops/__pycache__", "flash_attn/ops/__pycache__/gone.cpython-311.pyc"}
    for rel in wf.record_paths(site, "flash_attn-2.8.3.dist-info"):
        assert after[rel] == before[rel]


# ---------------------------------------------------------------------------
# policies and check mode

def test_check_mode_plans_exactly_what_remove_then_does(tmp_path, fa2, fa4):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2, fa4)
    with open(os.path.join(site, "flash_attn", "leftover.txt"), "w") as handle:
        handle.write("x")
    before = wf.tree(venv)
    planned = guard(venv, policy="remove", check_mode=True)
    assert wf.tree(venv) == before  # check mode changed nothing
    assert planned["changed"] is True
    assert planned["after"]["state"] == "ok"
    assert _owners(planned["after"]) == [("flash-attn", wf.FA2_VERSION)]
    done = guard(venv, policy="remove")
    assert done["actions"] == planned["actions"]
    assert done["after"]["state"] == planned["after"]["state"]
    assert _owners(done["after"]) == _owners(planned["after"])
    removed = set(before) - set(wf.tree(venv))
    planned_files = set(os.path.relpath(os.path.join(site, f), venv) for a in planned["actions"]
                        if a["action"] == "uninstall" for f in a["files"])
    assert planned_files <= removed


def test_report_policy_changes_nothing(tmp_path, fa4):
    venv, _site = _venv(tmp_path)
    wf.install(venv, fa4)
    before = wf.tree(venv)
    outcome = guard(venv, policy="report")
    assert outcome["before"]["state"] == "conflict" and outcome["changed"] is False and outcome["actions"] == []
    assert wf.tree(venv) == before


def test_fail_policy_passes_when_ok_or_absent(tmp_path, fa2):
    venv, _site = _venv(tmp_path, "empty")
    assert guard(venv, policy="fail")["before"]["state"] == "absent"
    venv2, _site = _venv(tmp_path, "fa2")
    wf.install(venv2, fa2)
    assert guard(venv2, policy="fail")["before"]["state"] == "ok"


def test_explicit_site_packages_path(tmp_path, fa2):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2)
    view = inspect_venv(site).as_dict()
    assert view["site_packages"] == site and view["state"] == "ok"


def test_other_major_is_an_offender_with_a_clear_message(tmp_path, fa2):
    venv, _site = _venv(tmp_path)
    wf.install(venv, fa2)
    view = inspect_venv(venv, expected_major=3).as_dict()
    assert view["state"] == "conflict"
    assert any("flash-attn 2.8.3" in p and "flash-attn 3.x is expected" in p for p in view["problems"])


def test_remove_cannot_fix_a_broken_fa2_and_says_so(tmp_path, fa2, fa4):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa2, fa4)
    os.unlink(os.path.join(site, ROTARY))
    with pytest.raises(FlashAttnGuardError) as err:
        guard(venv, policy="remove", check_mode=True)
    assert "rotary.py is missing on disk" in str(err.value) and venv in str(err.value)
    with pytest.raises(FlashAttnGuardError) as err:
        guard(venv, policy="remove")
    # flash-attn-4 went; what is left is reported and the exception still carries the actions taken
    assert err.value.result["changed"] is True
    assert _owners(err.value.result["after"]) == [("flash-attn", wf.FA2_VERSION)]


def test_flash_attn_through_a_pth_file_is_reported(tmp_path, fa4_uninstalled):
    venv = wf.copy_venv(fa4_uninstalled, tmp_path / "venv")
    site = wf.site_packages(venv)
    other = tmp_path / "image-site"
    other.mkdir()
    os.rename(os.path.join(site, "flash_attn"), str(other / "flash_attn"))
    with open(os.path.join(site, "image.pth"), "w") as handle:
        handle.write(str(other) + "\n")
    assert wf.find_spec(venv)["namespace"]  # Python finds it there too
    view = inspect_venv(venv).as_dict()
    assert view["state"] == "absent"
    assert view["other_locations"] == [str(other / "flash_attn")]


def test_errors_name_the_path(tmp_path):
    missing = str(tmp_path / "no-such-venv")
    with pytest.raises(FlashAttnGuardError, match="no-such-venv"):
        inspect_venv(missing)
    (tmp_path / "notavenv").mkdir()
    with pytest.raises(FlashAttnGuardError, match="notavenv.*not a venv"):
        inspect_venv(str(tmp_path / "notavenv"))
    venv, _site = _venv(tmp_path)
    with pytest.raises(FlashAttnGuardError, match="policy must be one of"):
        guard(venv, policy="delete")
    with pytest.raises(FlashAttnGuardError, match="expected_major"):
        inspect_venv(venv, expected_major=0)


def test_plan_never_lists_fa2_files(tmp_path, fa2, fa4):
    venv, site = _venv(tmp_path)
    wf.install(venv, fa4, installer="uv")
    wf.install(venv, fa2, installer="uv")
    fa2_paths = set(wf.record_paths(site, "flash_attn-2.8.3.dist-info"))
    actions = plan_removal(inspect_venv(venv))
    for action in actions:
        if action["action"] == "uninstall":
            assert not fa2_paths & set(action["files"])
        else:
            assert action["path"].rstrip("/") not in fa2_paths


# -------------------- broken and hostile venvs


PY = "python3.11"
FA2_DIST = "flash_attn-2.8.3.dist-info"
FA4_DIST = "flash_attn_4-4.0.0b12.dist-info"
FA2_FILES = {
    "flash_attn/__init__.py": b"__version__ = '2.8.3'\n",
    "flash_attn/flash_attn_interface.py": b"def flash_attn_func(*a): pass\n",
    "flash_attn/ops/__init__.py": b"",
    "flash_attn/ops/triton/__init__.py": b"",
    ROTARY: b"def apply_rotary(*a): pass\n",
    "flash_attn/cute/__init__.py": b"# flash-attn 2 ships this path too\n",
}
FA4_FILES = {
    "flash_attn/cute/__init__.py": b"# flash-attn 2 ships this path too\n",  # as on disk: same bytes
    "flash_attn/cute/interface.py": b"def flash_attn_func(*a): pass  # cute\n",
    "flash_attn/cute/utils.py": b"X = 4\n",
}
OTHER_FILES = {"other_pkg/__init__.py": b"Y = 1\n", "../../../bin/other-tool": b"#!/bin/sh\necho other\n"}


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode("ascii").rstrip("=")


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def _dist_info(site, dist, files, name, version, extra_lines=(), metadata=True, top_level=None):
    """Install ``files`` (rel to site-packages -> bytes) and write their dist-info with a hashed RECORD."""
    for rel, data in files.items():
        _write(os.path.normpath(os.path.join(site, rel)), data)
    meta = {"INSTALLER": b"uv\n", "WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"}
    if metadata:
        meta["METADATA"] = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n\nlong text\n" % (name, version)).encode()
    if top_level is not None:
        meta["top_level.txt"] = top_level.encode()
    lines = ["%s,%s,%d" % (rel, record_hash(data), len(data)) for rel, data in sorted(files.items())]
    for fname, data in sorted(meta.items()):
        _write(os.path.join(site, dist, fname), data)
        lines.append("%s/%s,%s,%d" % (dist, fname, record_hash(data), len(data)))
    lines.extend(extra_lines)
    lines.append("%s/RECORD,," % dist)
    _write(os.path.join(site, dist, "RECORD"), ("\n".join(lines) + "\n").encode())


def build_venv(base, fa4_extra=(), fa2_metadata=True, fa2_dist=FA2_DIST, fa4_files=None, other=True):
    """A venv at base/venv with flash-attn 2.8.3, flash-attn-4 (plus ``fa4_extra`` RECORD lines) and another
    distribution, and a sentinel directory base/outside; returns (venv, site, outside)."""
    venv = os.path.join(str(base), "venv")
    site = os.path.join(venv, "lib", PY, "site-packages")
    os.makedirs(os.path.join(venv, "bin"))
    _write(os.path.join(venv, "pyvenv.cfg"), b"home = /usr/bin\nversion_info = 3.11.7\n")
    _write(os.path.join(venv, "bin", "activate"), b"# activate\n")
    os.symlink(sys.executable, os.path.join(venv, "bin", "python"))
    _write(os.path.join(venv, "bin", "pip"), b"#!/bin/sh\n")
    os.makedirs(site)
    _dist_info(site, fa2_dist, FA2_FILES, "flash-attn", "2.8.3", metadata=fa2_metadata)
    _dist_info(site, FA4_DIST, FA4_FILES if fa4_files is None else fa4_files, "flash-attn-4", "4.0.0b12",
               extra_lines=fa4_extra, top_level="flash_attn\n")
    if other:
        _dist_info(site, "other_pkg-1.0.dist-info", OTHER_FILES, "other-pkg", "1.0")
    outside = os.path.join(str(base), "outside")
    _write(os.path.join(outside, "secret.txt"), b"keep me\n")
    _write(os.path.join(outside, "sub", "deep.txt"), b"keep me too\n")
    return venv, site, outside


def snapshot(base):
    """Every path under ``base`` -> (kind, mode, content or link target), never following a symlink
    and never opening anything but a regular file (a FIFO would block)."""
    listing = {}
    for current, dirs, files in os.walk(str(base)):
        for name in dirs + files:
            full = os.path.join(current, name)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                listing[os.path.relpath(full, str(base))] = ("link", info.st_mode, os.readlink(full))
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    listing[os.path.relpath(full, str(base))] = ("file", info.st_mode, handle.read())
            else:
                listing[os.path.relpath(full, str(base))] = ("other", info.st_mode, b"")
    return listing


def refused(venv, base, *expected_in_message):
    """Run guard(policy=remove): it must raise naming every expected text and change nothing under base."""
    before = snapshot(base)
    with pytest.raises(FlashAttnGuardError) as err:
        guard(venv, policy="remove")
    message = str(err.value)
    for text in expected_in_message:
        assert text in message, (text, message)
    assert snapshot(base) == before
    if err.value.result is not None:
        assert err.value.result["changed"] is False and err.value.result["actions"] == []
    return message


# ---------------------------------------------------------------------------
# the admin's table, row by row

@pytest.mark.parametrize("line, reason", [
    ("../../..", "names a directory"),            # the venv root: was rmtree'd
    (".", "names a directory"),                   # site-packages: was rmtree'd
    ("flash_attn", "names a directory"),          # flash-attn 2's package: rotary.py was deleted
    ("flash_attn/ops/", "names a directory"),
    ("../../../bin", "names a directory"),        # the venv's bin/: was deleted, reported as success
    ("../../../bin/../lib", "names a directory"),
    ("/", "names a directory"),
])
def test_record_line_naming_a_directory_fails_before_deleting_anything(tmp_path, line, reason):
    venv, _site, _outside = build_venv(tmp_path, fa4_extra=[line + ",,"])
    message = refused(venv, tmp_path, repr(line), reason, FA4_DIST + "/RECORD", "nothing was deleted")
    assert os.path.isfile(os.path.join(_site, ROTARY))
    assert message.count(repr(line)) == 1


def test_symlinked_directory_out_of_the_venv_is_not_followed(tmp_path):
    """site-packages/linkdir -> a directory outside the venv; RECORD lines under it must not reach it."""
    venv, site, outside = build_venv(
        tmp_path, fa4_extra=["linkdir/secret.txt,,", "linkdir/sub/deep.txt,%s," % record_hash(b"keep me too\n"),
                             "flash_attn/linkout/secret.txt,,"])
    os.symlink(outside, os.path.join(site, "linkdir"))
    os.symlink(outside, os.path.join(site, "flash_attn", "linkout"))
    message = refused(venv, tmp_path, "'linkdir/secret.txt'", "'linkdir/sub/deep.txt'",
                      "'flash_attn/linkout/secret.txt'", "lies outside the venv (at %s" % os.path.realpath(outside))
    assert "linkdir/secret.txt" in message


def test_absolute_path_outside_the_venv_is_refused(tmp_path):
    venv, _site, outside = build_venv(tmp_path)
    secret = os.path.join(outside, "secret.txt")
    with open(os.path.join(_site, FA4_DIST, "RECORD"), "a") as handle:
        handle.write("%s,%s,8\n" % (secret, record_hash(b"keep me\n")))
    refused(venv, tmp_path, repr(secret), "lies outside the venv")


@pytest.mark.parametrize("metadata", ["missing", "directory", "binary"])
@pytest.mark.parametrize("dist", [FA2_DIST, "flash_attn-2.8.3.post2.dist-info"])
def test_fa2_without_readable_metadata_is_recognised_by_its_directory_name(tmp_path, metadata, dist):
    venv, site, _outside = build_venv(tmp_path, fa2_metadata=False, fa2_dist=dist)
    if metadata == "directory":
        os.mkdir(os.path.join(site, dist, "METADATA"))
    elif metadata == "binary":
        _write(os.path.join(site, dist, "METADATA"), b"\xff\xfe\0\0garbage")
    view = inspect_venv(venv).as_dict()
    fa2 = [o for o in view["owners"] if o["name"] == "flash-attn"]
    assert fa2 and fa2[0]["version"] == dist[len("flash_attn-"):-len(".dist-info")] and fa2[0]["expected"]
    before = snapshot(tmp_path)
    outcome = guard(venv, policy="remove")
    assert [a["name"] for a in outcome["actions"] if a["action"] == "uninstall"] == ["flash-attn-4"]
    assert outcome["after"]["state"] == "ok"
    after = snapshot(tmp_path)
    for rel in FA2_FILES:  # flash-attn 2 untouched, rotary.py included
        key = os.path.relpath(os.path.join(site, rel), str(tmp_path))
        assert after[key] == before[key]
    assert os.path.isdir(os.path.join(site, dist))


@pytest.mark.parametrize("metadata", ["name not utf-8", "fifo"])
def test_fa2_with_damaged_metadata_is_recognised_by_its_directory_name(tmp_path, metadata):
    # venv_lock's METADATA reader: a Name that is not UTF-8 is damage, not another distribution
    # (which would be uninstalled), and a FIFO is never opened (the read would block)
    venv, site, _outside = build_venv(tmp_path, fa2_metadata=False)
    path = os.path.join(site, FA2_DIST, "METADATA")
    if metadata == "fifo":
        os.mkfifo(path)
    else:
        _write(path, b"Metadata-Version: 2.1\nName: flash\xffattn\nVersion: 2.8.3\n\n")
    fa2 = [o for o in inspect_venv(venv).as_dict()["owners"] if o["name"] == "flash-attn"]
    assert fa2 and fa2[0]["version"] == "2.8.3" and fa2[0]["expected"]
    outcome = guard(venv, policy="remove")
    assert [a["name"] for a in outcome["actions"] if a["action"] == "uninstall"] == ["flash-attn-4"]
    assert os.path.lexists(path) and os.path.exists(os.path.join(site, ROTARY))


def test_flash_attn_of_unreadable_version_is_not_uninstalled(tmp_path):
    venv, site, _outside = build_venv(tmp_path, fa2_metadata=False)
    _write(os.path.join(site, FA2_DIST, "METADATA"), b"Metadata-Version: 2.1\nName: flash-attn\nVersion: dev\n\n")
    refused(venv, tmp_path, "its version cannot be read", FA2_DIST)


@pytest.mark.parametrize("kind, expected", [
    ("huge field", "field larger than field limit"),     # was a _csv.Error traceback
    ("long field", "has a field of 5011 characters"),
    ("binary", "is binary"),
    ("latin-1", "is not UTF-8"),
    ("directory", "is not a regular file"),
    ("fifo", "is not a regular file"),                    # reading it would block for ever
    ("dangling symlink", "cannot read RECORD"),
    ("too many fields", "has 5 fields"),
])
def test_unreadable_record_is_a_clear_error_naming_it(tmp_path, kind, expected):
    venv, site, _outside = build_venv(tmp_path)
    record = os.path.join(site, FA4_DIST, "RECORD")
    os.unlink(record)
    if kind == "huge field":
        _write(record, ("flash_attn/cute/" + "a" * (200 * 1024) + ",,\n").encode())
    elif kind == "long field":
        _write(record, ("flash_attn/" + "b" * 5000 + ",,\n").encode())
    elif kind == "binary":
        _write(record, b"flash_attn/cute/utils.py,,\n\0\0\x7fELF")
    elif kind == "latin-1":
        _write(record, "flash_attn/cute/\xe9t\xe9.py,,\n".encode("latin-1"))
    elif kind == "directory":
        os.mkdir(record)
    elif kind == "fifo":
        os.mkfifo(record)
    elif kind == "dangling symlink":
        os.symlink(os.path.join(str(tmp_path), "nowhere"), record)
    else:
        _write(record, b"flash_attn/cute/utils.py,a,b,c,d\n")
    for policy in ("remove", "report"):
        before = snapshot(tmp_path)
        with pytest.raises(FlashAttnGuardError) as err:
            guard(venv, policy=policy)
        assert expected in str(err.value) and record in str(err.value), str(err.value)
        assert snapshot(tmp_path) == before


def test_record_over_the_size_bound_is_refused_without_reading_it(tmp_path):
    venv, site, _outside = build_venv(tmp_path)
    record = os.path.join(site, FA4_DIST, "RECORD")
    with open(record, "r+b") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: costs no disk and no time
    with pytest.raises(FlashAttnGuardError, match="RECORD %s is larger than 64 MiB" % record):
        guard(venv, policy="remove")


# ---------------------------------------------------------------------------
# what removal does delete, and how

def test_remove_deletes_fa4_file_by_file_and_keeps_every_other_distributions_files(tmp_path):
    venv, site, outside = build_venv(tmp_path)
    _write(os.path.join(site, "flash_attn", "cute", "__pycache__", "utils.cpython-311.pyc"), b"\0pyc")
    before = snapshot(tmp_path)
    outcome = guard(venv, policy="remove")
    assert outcome["after"]["state"] == "ok", outcome["after"]["problems"]
    (action,) = outcome["actions"]
    real_site = os.path.realpath(site)
    assert action["kept"] == ["flash_attn/cute/__init__.py"]  # flash-attn 2 lists it too
    assert action["outside"] == [] and action["missing"] == []
    assert action["files"] == sorted(["flash_attn/cute/interface.py", "flash_attn/cute/utils.py",
                                      "flash_attn/cute/__pycache__/utils.cpython-311.pyc"]
                                     + ["%s/%s" % (FA4_DIST, n) for n in ("INSTALLER", "METADATA", "RECORD", "WHEEL",
                                                                          "top_level.txt")])
    unlinked = [path for op, path in action["steps"] if op == "unlink_file"]
    assert all(p.startswith(os.path.join(real_site, "flash_attn", "cute") + os.sep)
               or p.startswith(os.path.join(real_site, FA4_DIST) + os.sep) for p in unlinked)
    rmdirs = [path for op, path in action["steps"] if op == "rmdir_if_empty"]
    assert os.path.join(real_site, "flash_attn") in rmdirs and os.path.join(real_site, FA4_DIST) in rmdirs
    assert real_site not in rmdirs
    after = snapshot(tmp_path)
    gone = set(before) - set(after)
    assert gone == set(os.path.relpath(p, str(tmp_path)) for p in unlinked) | {
        os.path.relpath(os.path.join(site, FA4_DIST), str(tmp_path)),
        os.path.relpath(os.path.join(site, "flash_attn", "cute", "__pycache__"), str(tmp_path))}
    assert all(after[k] == before[k] for k in after)


def test_check_mode_shows_the_exact_plan_the_real_run_carries_out(tmp_path):
    venv, site, _outside = build_venv(tmp_path, fa4_extra=["../../../bin/fa4-tool,%s,3" % record_hash(b"fa4")])
    _write(os.path.join(venv, "bin", "fa4-tool"), b"fa4")
    os.makedirs(os.path.join(site, "flash_attn", "stale", "empty"))
    os.symlink("/etc", os.path.join(site, "flash_attn", "stale", "etc-link"))
    before = snapshot(tmp_path)
    planned = guard(venv, policy="remove", check_mode=True)
    assert snapshot(tmp_path) == before
    done = guard(venv, policy="remove")
    assert done["actions"] == planned["actions"]
    steps = [step for action in planned["actions"] for step in action["steps"]]
    assert all(os.path.isabs(path) and path == os.path.realpath(os.path.dirname(path)) + os.sep
               + os.path.basename(path) for _op, path in steps)
    gone = set(os.path.join(str(tmp_path), p) for p in set(before) - set(snapshot(tmp_path)))
    assert gone <= set(path for _op, path in steps)
    for op, path in steps:  # every file went; a directory went unless it still holds what another owns
        assert path in gone or (op == "rmdir_if_empty" and os.listdir(path)), (op, path)
    assert ["unlink_symlink", os.path.join(os.path.realpath(site), "flash_attn", "stale", "etc-link")] in steps
    assert os.path.isdir("/etc")


def test_console_script_with_matching_hash_is_removed_and_a_mismatch_refused(tmp_path):
    good = ["../../../bin/fa4-tool,%s,3" % record_hash(b"fa4")]
    venv, site, _outside = build_venv(tmp_path, fa4_extra=good)
    _write(os.path.join(venv, "bin", "fa4-tool"), b"fa4")
    outcome = guard(venv, policy="remove")
    assert outcome["actions"][0]["outside"] == ["../../../bin/fa4-tool"]
    assert not os.path.lexists(os.path.join(venv, "bin", "fa4-tool")) and os.path.isdir(os.path.join(venv, "bin"))

    base = tmp_path / "mismatch"
    venv, site, _outside = build_venv(base, fa4_extra=good)
    _write(os.path.join(venv, "bin", "fa4-tool"), b"an admin's own script")
    refused(venv, base, "'../../../bin/fa4-tool'", "does not match the hash")


@pytest.mark.parametrize("line", ["../../../bin/python", "../../../bin/activate", "../../../pyvenv.cfg",
                                  FA2_DIST + "/direct_url.json"])
def test_the_venv_itself_and_other_distributions_are_never_deleted(tmp_path, line):
    """Even with a matching hash: the venv's own files, another dist-info's, a symlink."""
    venv, site, _outside = build_venv(tmp_path)
    target = os.path.normpath(os.path.join(site, line))
    if not os.path.lexists(target):
        _write(target, b"{}")
    data = open(target, "rb").read() if os.path.isfile(target) else b""
    with open(os.path.join(site, FA4_DIST, "RECORD"), "a") as handle:
        handle.write("%s,%s,%d\n" % (line, record_hash(data), len(data)))
    refused(venv, tmp_path, repr(line))


def test_a_file_another_distribution_lists_is_kept(tmp_path):
    """Not only flash-attn 2's: any other distribution's RECORD protects a path, under any name."""
    venv, site, _outside = build_venv(tmp_path, fa4_extra=["other_pkg/__init__.py,,", "../../../bin/other-tool,,",
                                                           "flash_attn/alias/triton/rotary.py,,"])
    os.symlink("ops", os.path.join(site, "flash_attn", "alias"))  # a second name for flash-attn 2's ops/
    before = snapshot(tmp_path)
    outcome = guard(venv, policy="remove")
    assert {"other_pkg/__init__.py", "../../../bin/other-tool", "flash_attn/alias/triton/rotary.py"} <= set(
        outcome["actions"][0]["kept"])
    after = snapshot(tmp_path)
    for rel in list(FA2_FILES) + list(OTHER_FILES):
        key = os.path.relpath(os.path.normpath(os.path.join(site, rel)), str(tmp_path))
        assert after[key] == before[key], rel


def test_flash_attn_that_is_a_symlink_out_of_the_venv_is_left_alone(tmp_path):
    venv, site, outside = build_venv(tmp_path, fa4_files={})
    shutil.rmtree(os.path.join(site, FA2_DIST))
    shutil.rmtree(os.path.join(site, "flash_attn"))
    os.symlink(outside, os.path.join(site, "flash_attn"))
    refused(venv, tmp_path, "'flash_attn' is a symlink to %s" % os.path.realpath(outside))


def test_leftover_symlinks_are_unlinked_never_followed(tmp_path):
    venv, site, outside = build_venv(tmp_path)
    shutil.rmtree(os.path.join(site, FA4_DIST))
    os.symlink(outside, os.path.join(site, "flash_attn", "cute", "linkdir"))
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(site, "flash_attn", "cute", "secret.py"))
    before = snapshot(os.path.join(str(tmp_path), "outside"))
    outcome = guard(venv, policy="remove")
    assert outcome["after"]["state"] == "ok"
    assert not os.path.lexists(os.path.join(site, "flash_attn", "cute", "linkdir"))
    assert snapshot(os.path.join(str(tmp_path), "outside")) == before


@pytest.mark.parametrize("swap", ["symlink", "directory", "parent symlink"])
def test_a_path_that_changed_after_planning_is_refused_not_followed(tmp_path, swap):
    venv, site, outside = build_venv(tmp_path)
    inspection = inspect_venv(venv)
    actions = plan_removal(inspection)
    victim = os.path.join(site, "flash_attn", "cute", "utils.py")
    os.unlink(victim)
    if swap == "symlink":
        os.symlink(os.path.join(outside, "secret.txt"), victim)
    elif swap == "directory":
        os.mkdir(victim)
    else:
        cute = os.path.join(site, "flash_attn", "cute")
        os.rename(cute, os.path.join(str(tmp_path), "cute-moved"))
        shutil.copytree(outside, os.path.join(str(tmp_path), "outside-copy"))
        os.symlink(os.path.join(str(tmp_path), "outside-copy"), cute)
    before = snapshot(tmp_path)
    removed = []
    with pytest.raises(FlashAttnGuardError, match="stopped at .*since the plan was made") as err:
        apply_removal(inspection, actions, removed)
    assert removed == [] and snapshot(tmp_path) == before, str(err.value)


# ---------------------------------------------------------------------------
# properties: whatever the RECORD and the symlinks, nothing outside the bounds changes

_COMPONENTS = ["..", ".", "", "flash_attn", "cute", "ops", "triton", "rotary.py", "utils.py", "linkin", "linkout",
               "bin", "linkdir", "secret.txt", "sub", FA2_DIST, FA4_DIST, "RECORD", "fa4-tool", "lib", PY,
               "site-packages", "other_pkg", "__init__.py"]
# what a real flash-attn-4 RECORD may hold besides its own files: present, missing, shared, a script
_BENIGN = ["flash_attn/cute/interface.py", "flash_attn/cute/new.py", "flash_attn/cute/__init__.py",
           "flash_attn/linkin/triton/rotary.py", FA4_DIST + "/METADATA", FA4_DIST + "/licenses/LICENSE",
           "../../../bin/fa4-tool", "other_pkg/__init__.py", "flash_attn/cute/__pycache__/utils.cpython-311.pyc"]
_HOSTILE = ["../../..", ".", "flash_attn", "../../../bin", "../../../bin/python", "../../../pyvenv.cfg",
            "flash_attn/linkout/secret.txt", "linkdir/secret.txt", "../../../bin/pip", "../../../bin/activate",
            "linkdir/sub", FA2_DIST + "/RECORD", "../../../bin/fa4-link",
            "{OUT}/secret.txt", "{OUT}", "{OUT}/sub/deep.txt", "flash_attn/cute", "flash_attn/" + "x" * 300,
            "y" * 3000]
_DIGESTS = st.sampled_from(["", "garbage", "real", "real", "sha256=bogus"])

_benign_lines = st.tuples(st.sampled_from(_BENIGN), _DIGESTS)
_hostile_lines = st.tuples(
    st.one_of(st.sampled_from(_HOSTILE),
              st.lists(st.sampled_from(_COMPONENTS), min_size=1, max_size=6).map("/".join),
              st.lists(st.sampled_from(_COMPONENTS), min_size=1, max_size=6).map(lambda c: "{OUT}/" + "/".join(c))),
    _DIGESTS)
_rarely = st.sampled_from([False, False, False, True])

_layouts = st.fixed_dictionaries({
    "linkout": st.booleans(),        # flash_attn/linkout -> the sentinel outside the venv
    "linkin": st.booleans(),         # flash_attn/linkin -> flash_attn/ops (flash-attn 2's)
    "linkdir": st.booleans(),        # site-packages/linkdir -> the sentinel
    "cute_link": _rarely,            # flash_attn/cute itself a symlink to a copy outside the venv
    "package_link": _rarely,         # flash_attn itself a symlink out of the venv
    "fa4_tool": st.booleans(),       # bin/fa4-tool exists, and bin/fa4-link -> the sentinel's secret.txt
})


@contextlib.contextmanager
def _scratch():
    base = tempfile.mkdtemp(prefix="fag-prop-")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _hostile_venv(base, lines, layout):
    venv, site, outside = build_venv(base)
    pkg = os.path.join(site, "flash_attn")
    if layout["fa4_tool"]:
        _write(os.path.join(venv, "bin", "fa4-tool"), b"fa4")
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(venv, "bin", "fa4-link"))
    if layout["linkout"]:
        os.symlink(outside, os.path.join(pkg, "linkout"))
    if layout["linkin"]:
        os.symlink("ops", os.path.join(pkg, "linkin"))
    if layout["linkdir"]:
        os.symlink(outside, os.path.join(site, "linkdir"))
    if layout["cute_link"]:
        shutil.copytree(os.path.join(pkg, "cute"), os.path.join(outside, "cute"))
        shutil.rmtree(os.path.join(pkg, "cute"))
        os.symlink(os.path.join(outside, "cute"), os.path.join(pkg, "cute"))
    if layout["package_link"]:
        os.rename(pkg, os.path.join(outside, "flash_attn"))
        os.symlink(os.path.join(outside, "flash_attn"), pkg)
    record, matched = [], set()
    for path, digest in lines:
        path = path.replace("{OUT}", outside)
        if digest == "real":
            target = os.path.join(site, path)
            digest = record_hash(open(target, "rb").read()) if os.path.isfile(target) else ""
            if digest:
                head, name = os.path.split(target)
                matched.add(os.path.join(os.path.realpath(head), name))
        record.append('"%s",%s,' % (path, digest))
    with open(os.path.join(site, FA4_DIST, "RECORD"), "a") as handle:
        handle.write("\n".join(record) + "\n")
    return venv, site, outside, matched


def _allowed(path, real_site, own, venv_root, matched):
    """Where a deletion may land: under a real flash_attn/ (itself included), in flash-attn-4's dist-info, or
    a file elsewhere in the venv whose content matches the hash flash-attn-4's RECORD gives for it."""
    pkg = os.path.join(real_site, "flash_attn")
    if not os.path.islink(pkg) and (path == pkg or path.startswith(pkg + os.sep)):
        return True
    if path == own or path.startswith(own + os.sep):
        return True
    parent, name = os.path.split(path)
    in_dist_info = path.startswith(real_site + os.sep) and os.path.relpath(path, real_site).split(os.sep)[0].endswith(
        (".dist-info", ".egg-info"))
    makes_the_venv = parent == venv_root or (parent == os.path.join(venv_root, "bin")
                                             and name.startswith(("python", "activate")))
    return path in matched and path.startswith(venv_root + os.sep) and not makes_the_venv and not in_dist_info \
        and not os.path.islink(path)


_PLAIN = {"linkout": False, "linkin": False, "linkdir": False, "cute_link": False, "package_link": False,
          "fa4_tool": True}


@example(benign=[("../../../bin/fa4-tool", "real"), ("flash_attn/linkin/triton/rotary.py", "real")], hostile=[],
         layout=dict(_PLAIN, linkin=True, linkout=True))
@example(benign=[("flash_attn/cute/utils.py", "")], hostile=[("flash_attn/linkout/secret.txt", "real")],
         layout=dict(_PLAIN, linkout=True))
@example(benign=[], hostile=[("flash_attn/cute", "")], layout=_PLAIN)
@example(benign=[], hostile=[("../../../bin/activate", "real"), ("../../../bin/python", "real")], layout=_PLAIN)
@example(benign=[], hostile=[("../../../bin/activate", "real")], layout=_PLAIN)
@example(benign=[], hostile=[("../../../bin/fa4-link", "real")], layout=_PLAIN)
@given(benign=st.lists(_benign_lines, max_size=4), hostile=st.lists(_hostile_lines, max_size=2), layout=_layouts)
def test_property_plan_stays_in_bounds_and_nothing_outside_changes(benign, hostile, layout):
    with _scratch() as base:
        venv, site, outside, matched = _hostile_venv(base, benign + hostile, layout)
        real_site = os.path.realpath(site)
        own = os.path.join(real_site, FA4_DIST)
        venv_root = os.path.realpath(venv)
        hashes = {}
        for rel, data in FA2_FILES.items():
            hashes[os.path.join(real_site, rel)] = data
        before = snapshot(base)
        try:
            actions = plan_removal(inspect_venv(venv))
        except FlashAttnGuardError as exc:
            assert "nothing was deleted" in str(exc) or "cannot" in str(exc), str(exc)
            actions = None
        for action in actions or []:
            for op, path in action["steps"]:
                head, name = os.path.split(path)
                assert path == os.path.join(os.path.realpath(head), name) and name not in ("", ".", ".."), path
                assert _allowed(path, real_site, own, venv_root, matched), (op, path)
                kind = os.lstat(path).st_mode
                # what is planned is what is there: never a directory unlinked, never a symlink followed
                assert {"unlink_file": stat.S_ISREG, "unlink_symlink": stat.S_ISLNK,
                        "rmdir_if_empty": stat.S_ISDIR}[op](kind), (op, path)
                if op != "rmdir_if_empty":
                    assert path not in hashes, path  # never a file flash-attn 2 lists
        try:
            guard(venv, policy="remove")
        except FlashAttnGuardError:
            pass
        after = snapshot(base)
        fa2_paths = set(os.path.relpath(os.path.join(site, rel), base) for rel in FA2_FILES)
        for rel, entry in before.items():
            full = os.path.join(base, rel)
            if rel in fa2_paths and not layout["package_link"] and not (layout["cute_link"] and "/cute/" in rel):
                assert after.get(rel) == entry, rel  # flash-attn 2's files: never touched
            if after.get(rel) == entry:
                continue
            # what changed lies inside the bounds
            assert _allowed(os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full)),
                            real_site, own, venv_root, matched), rel
            assert not full.startswith(outside + os.sep) and full != outside, rel
        assert set(after) <= set(before)
