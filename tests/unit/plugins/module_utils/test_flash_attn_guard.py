# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""flash_attn_guard on real flash-attn wheels installed in real venvs.

flash-attn-4 is the real 4.0.0b12 wheel from the index; flash-attn 2.8.3 is its real sdist built
without CUDA (see _wheel_fixtures). Nothing here imports flash_attn: only RECORDs, the file
system, and ``find_spec`` at the top level (which does not run the package).
"""

import glob
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_guard import (  # noqa: E402
    FlashAttnGuardError,
    ROTARY,
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
