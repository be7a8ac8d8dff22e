# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""tests/gpu/ct/parts.py (issue 41): the GPU proof's parts are cut, packed one folder per device call under the
transfer limit, checked against their sha256 manifest, and the printed calls are what the device tool takes; and the
wheelhouse make_parts.sh downloads holds every wheel run_site.sh's setup installs."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml
from hypothesis import given, settings, strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CT = os.path.join(ROOT, "tests", "gpu", "ct")
MIB = 1024 * 1024


def load_parts():
    spec = importlib.util.spec_from_file_location("gpu_ct_parts", os.path.join(CT, "parts.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


parts = load_parts()


def names_in(path):
    with open(path, encoding="utf-8") as handle:
        return [re.sub(r"[-_.]+", "-", line.split("==")[0].strip()).lower() for line in handle
                if line.strip() and not line.startswith("#")]


def pins_in(path):
    with open(path, encoding="utf-8") as handle:
        return dict((re.sub(r"[-_.]+", "-", name).lower(), version) for name, version in
                    (line.strip().split("==") for line in handle if "==" in line and not line.startswith("#")))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text("abc.-", min_size=1, max_size=4), st.integers(0, 100), min_size=1, max_size=12),
       st.integers(1, 120))
def test_pack_places_each_file_once_within_the_budget(sizes, budget):
    if max(sizes.values()) > budget:
        with pytest.raises(ValueError) as exc:
            parts.pack(sizes, budget)
        assert all(name in str(exc.value) for name, size in sizes.items() if size > budget)
        return
    folders = parts.pack(sizes, budget)
    placed = [name for folder in folders for name in folder]
    assert sorted(placed) == sorted(sizes)
    assert all(sum(sizes[n] for n in folder) <= budget for folder in folders)
    # First fit: no two folders could have been one.
    totals = sorted(sum(sizes[n] for n in folder) for folder in folders)
    assert len(totals) < 2 or totals[0] + totals[1] > budget


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 700))
def test_split_joins_back(tmp_path_factory, data, part_bytes):
    top = tmp_path_factory.mktemp("split")
    source = top / "blob.tar"
    source.write_bytes(data)
    cut = parts.split_file(str(source), part_bytes, str(top / "out"))
    assert b"".join(open(p, "rb").read() for p in cut) == data
    assert all(os.path.getsize(p) <= part_bytes for p in cut)
    assert [os.path.basename(p) for p in cut] == ["blob.tar.part-%02d" % i for i in range(len(cut))]


@pytest.fixture
def laid_out(tmp_path):
    rootfs = tmp_path / "rootfs.tar.xz"
    rootfs.write_bytes(os.urandom(int(2.5 * MIB)))
    wheels = tmp_path / "wheels-0.26.0.tar"
    wheels.write_bytes(os.urandom(int(1.2 * MIB)))
    code = tmp_path / "code.tar.gz"
    code.write_bytes(os.urandom(1000))
    out = tmp_path / ".gpu-parts"
    out.mkdir()
    (out / "c07").mkdir()  # a folder of an earlier layout: removed
    split = [str(rootfs), str(wheels)]
    folders, hashes, budget = parts.lay_out(str(out), split, [str(code)], part_mib=1, limit_mib=4, margin_mib=1,
                                            repo_size=int(0.5 * MIB))
    return out, split, folders, hashes, budget


def test_lay_out_one_folder_per_call_with_a_manifest(laid_out):
    out, split, folders, hashes, budget = laid_out
    assert budget == int(2.5 * MIB)
    assert sorted(os.listdir(str(out))) == ["SHA256SUMS", "c00", "c01", "cache"]
    assert sorted(n for names in folders.values() for n in names) == sorted(
        ["SHA256SUMS", "code.tar.gz", "rootfs.tar.xz.part-00", "rootfs.tar.xz.part-01", "rootfs.tar.xz.part-02",
         "wheels-0.26.0.tar.part-00", "wheels-0.26.0.tar.part-01"])
    assert parts.verify(str(out), folders, hashes, split, budget) == []
    manifest = (out / "SHA256SUMS").read_text()
    assert "code.tar.gz" in manifest and "SHA256SUMS" not in manifest
    # What the device does: every folder's files into one folder, then sha256sum -c there.
    device = out.parent / "device-parts"
    device.mkdir()
    for folder, names in folders.items():
        for name in names:
            shutil.copyfile(str(out / folder / name), str(device / name))
    check = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=str(device), capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_verify_finds_a_damaged_part(laid_out):
    out, split, folders, hashes, budget = laid_out
    folder = [f for f, names in folders.items() if "rootfs.tar.xz.part-01" in names][0]
    path = out / folder / "rootfs.tar.xz.part-01"
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    os.unlink(str(path))  # a hard link to the staged part: replace, not edit in place
    path.write_bytes(bytes(data))
    problems = parts.verify(str(out), folders, hashes, split, budget)
    assert "%s/rootfs.tar.xz.part-01: sha256 differs from SHA256SUMS" % folder in problems
    assert "rootfs.tar.xz: its parts do not join back into it" in problems


def test_parts_larger_than_a_call_are_refused(tmp_path):
    with pytest.raises(ValueError) as exc:
        parts.lay_out(str(tmp_path), [], [], part_mib=50, limit_mib=64, margin_mib=4, repo_size=11 * MIB)
    assert "parts of 50 MiB do not fit beside the repository (11.0 MiB) under 64 MiB less a 4 MiB margin: take " \
           "--part-mib 49 or less" in str(exc.value)


def test_the_device_calls():
    calls = parts.device_calls(["c00", "c01"], ".gpu-parts")
    assert calls[0] == {"carry": [".gpu-parts/c00"], "timeout_s": 120, "command":
                        "mkdir -p /root/igh/parts && cp .gpu-parts/c00/* /root/igh/parts/ && du -sh /root/igh/parts"}
    assert len(calls) == 4 and all(len(c["command"]) <= 2000 and c["timeout_s"] <= 600 for c in calls)
    assert calls[2]["command"].startswith("cd /root/igh/parts && sha256sum -c --quiet SHA256SUMS && ")
    with open(os.path.join(CT, "run_site.sh"), encoding="utf-8") as handle:
        stages = set(re.findall(r"^stage_(\w+)\(\)", handle.read(), re.M))
    for call in calls[2:]:
        asked = re.search(r'STAGES="([^"]+)"', call["command"]).group(1).split()
        assert set(asked) <= stages, asked


def test_main_writes_the_calls(tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("x\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "README.md"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    blob = tmp_path / "rootfs.tar.xz"
    blob.write_bytes(os.urandom(2 * MIB + 5))
    assert parts.main([str(repo / ".gpu-parts"), "--split", str(blob), "--part-mib", "1", "--limit-mib", "3",
                       "--margin-mib", "1", "--root", str(repo)]) == 0
    printed = capsys.readouterr().out
    written = (repo / ".gpu-parts" / "device-calls.txt").read_text()
    assert written in printed
    calls = [json.loads(line) for line in written.splitlines() if line.startswith("{")]
    assert [c.get("carry") for c in calls] == [[".gpu-parts/c00"], [".gpu-parts/c01"], None, None]


def test_outside_the_repository_is_refused(tmp_path):
    with pytest.raises(SystemExit) as exc:
        parts.main([str(tmp_path / "elsewhere"), "--root", ROOT])
    assert "a call carries only folders of the repository" in str(exc.value)


def test_the_wheelhouse_holds_what_run_site_installs():
    gpu = os.path.join(ROOT, "tests", "gpu")
    pins = set(names_in(os.path.join(gpu, "wheels-0.26.0.txt"))) - {"flash-attn-4"}
    pins |= set(names_in(os.path.join(CT, "wheels-ct-extra.txt")))
    with open(os.path.join(CT, "run_site.sh"), encoding="utf-8") as handle:
        loop = re.search(r"for n in ([\w ]+); do\s*\n?\s*a\+=", handle.read()).group(1).split()
    assert loop, "run_site.sh's list of controller wheels moved: read it again here"
    assert {re.sub(r"[-_.]+", "-", n).lower() for n in loop} <= pins
    # python_env installs uv from the wheelhouse (no index): the version its defaults pin.
    with open(os.path.join(ROOT, "roles", "python_env", "defaults", "main.yml"), encoding="utf-8") as handle:
        uv = yaml.safe_load(handle)["python_env_uv_version"]
    extra = pins_in(os.path.join(CT, "wheels-ct-extra.txt"))
    assert extra["uv"] == uv
    # The lock's carried closure comes from the wheelhouse.
    assert set(names_in(os.path.join(CT, "carried-closure-0.26.0.txt"))) <= pins
    # ansible-runner and its dependencies at the dev lock's versions.
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as handle:
        dev = dict((m.group(1).lower(), m.group(2)) for m in re.finditer(r"^([\w.-]+)==([\w.]+)", handle.read(), re.M))
    for name in ("ansible-runner", "pexpect", "ptyprocess", "python-daemon", "lockfile"):
        assert extra[name] == dev[name], name
