# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/lock.py: real locks written by `uv pip compile` and real venvs installed from them;
compare(exact=True), the venv holding the lock and nothing else but what keep allows and what flash_attn_guard
judges; and broken and hostile files, a VenvLockError naming the file or a warning for an optional one.

The hostile venvs are laid out by hand (lib/pythonX.Y/site-packages/<name>-<version>.dist-info/METADATA):
what the lock reader reads is files, and these files are the broken ones a real installer never writes.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import sys
import tempfile
import time

import pytest
from hypothesis import given, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))
sys.path.insert(0, HERE)
import _wheel_fixtures as wf  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._venv import lock as venv_lock  # noqa: E402
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import (  # noqa: E402
    GUARDED_BY_FLASH_ATTN_GUARD,
    VenvLockError,
    canonicalize_name,
    compare,
    evaluate_marker,
    find_site_packages,
    installed_distributions,
    marker_environment,
    parse_lock,
    parse_lock_text,
    read_metadata_headers,
    version_key,
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


# -------------------- compare(exact=True) (property tests)


names = st.from_regex(r"[a-z][a-z0-9]{0,6}(?:[-_.][a-z0-9]{1,4})?", fullmatch=True)


def _site(root, installed):
    site = os.path.join(root, "site-packages")
    os.makedirs(site)
    for name in installed:
        info = os.path.join(site, "%s-1.0.dist-info" % name.replace("-", "_"))
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name)
    return site


@given(locked=st.sets(names, max_size=4), extra=st.sets(names, max_size=4), keep=st.sets(names, max_size=3),
       guarded=st.sets(st.sampled_from(GUARDED_BY_FLASH_ATTN_GUARD)))
def test_property_unexpected_is_extra_minus_keep_and_guarded(locked, extra, keep, guarded):
    locked = set(canonicalize_name(n) for n in locked)
    extra = (set(canonicalize_name(n) for n in extra) | guarded) - locked
    root = tempfile.mkdtemp()
    try:
        site = _site(root, sorted(locked | extra))
        lock = os.path.join(root, "lock.txt")
        with open(lock, "w") as handle:
            handle.write("".join("%s==1.0\n" % n for n in sorted(locked)))
        loose = compare(site, lock)
        exact = compare(site, lock, exact=True, keep=sorted(keep))
    finally:
        shutil.rmtree(root)
    want = sorted(extra - set(canonicalize_name(n) for n in keep) - set(GUARDED_BY_FLASH_ATTN_GUARD))
    assert [u["name"] for u in exact["unexpected"]] == want
    assert exact["in_sync"] is (not want) and loose["in_sync"] is True and loose["unexpected"] == []


# -------------------- broken and hostile files


URL = "file:///srv/wheels/local_wheel-1.0-py3-none-any.whl"


def make_venv(tmp_path, dists):
    """A venv directory with one dist-info per (name, version, METADATA bytes or None, direct_url bytes or None)."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion_info = 3.11.7\n")
    for name, version, metadata, direct_url in dists:
        info = site / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
        info.mkdir()
        if metadata is None:
            metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n\nDescription\n" % (name, version)).encode()
        (info / "METADATA").write_bytes(metadata)
        if direct_url is not None:
            (info / "direct_url.json").write_bytes(direct_url)
    return str(tmp_path / "venv"), str(site)


def write_lock(tmp_path, data, name="lock.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# ------------------------------------------------------------- lock files ---

@pytest.mark.parametrize("data,expected", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not UTF-8 text (byte 0x89 at offset 0)"),
    (b"six==1.17.0\nidna==3.10 \xe9\n", "is not UTF-8 text (byte 0xe9 at offset 23)"),
])
def test_binary_or_non_utf8_lock_is_named(tmp_path, data, expected):
    lock = write_lock(tmp_path, data)
    with pytest.raises(VenvLockError) as err:
        parse_lock(lock)
    assert str(err.value) == "lock file %s %s: a binary file, not a lock?" % (lock, expected)


@pytest.mark.parametrize("line,char,column", [
    ("six==1.17.0\x00", 0x00, 12),
    ("six==1.17.0 ; \x1b[31m", 0x1B, 15),
    ("si\rx==1.17.0", 0x0D, 3),
    ("six==1.17.0\x0cidna==3.10", 0x0C, 12),   # str.splitlines() would have made two lines of it
    ("six==1.17.0\u2028idna==3.10", 0x2028, 12),
    ("six==1.17.0\x85", 0x85, 12),
])
def test_control_characters_in_a_lock_line_are_refused(tmp_path, line, char, column):
    lock = write_lock(tmp_path, ("idna==3.10\n" + line + "\n").encode("utf-8"))
    with pytest.raises(VenvLockError) as err:
        parse_lock(lock)
    assert str(err.value).startswith("%s line 2: control character U+%04X at column %d" % (lock, char, column))


def test_crlf_bom_and_tabs_are_fine(tmp_path):
    lock = write_lock(tmp_path, b"\xef\xbb\xbfsix==1.17.0\t\\\r\n    --hash=sha256:abc\r\nidna==3.10\r\n")
    parsed = [(r["name"], r["version"], r["line"]) for r in parse_lock(lock)]
    assert parsed == [("six", "1.17.0", 1), ("idna", "3.10", 3)]


def test_lock_that_is_not_a_regular_file(tmp_path):
    fifo = str(tmp_path / "fifo.txt")
    os.mkfifo(fifo)
    with pytest.raises(VenvLockError, match="cannot read lock file .*fifo.txt: not a regular file"):
        parse_lock(fifo)
    with pytest.raises(VenvLockError, match="cannot read lock file .*: not a regular file"):
        parse_lock(str(tmp_path))


def test_huge_lock_is_refused_unparsed(tmp_path):
    lock = write_lock(tmp_path, b"")
    with open(lock, "r+b") as handle:
        handle.truncate(venv_lock.MAX_LOCK_SIZE + 1)  # sparse
    with pytest.raises(VenvLockError, match="larger than %d bytes" % venv_lock.MAX_LOCK_SIZE):
        parse_lock(lock)


def test_absurd_version_is_refused_with_line(tmp_path):
    with pytest.raises(VenvLockError, match=r"my.lock line 1: the version of six is 5004 characters long"):
        parse_lock_text("six==1." + "0" * 5000 + ".0\n", "my.lock")


def test_version_key_survives_absurd_versions():
    huge = "1" * 5000
    assert version_key(huge) is None
    assert version_matches("1.0", huge) is False
    assert version_matches(huge + ".*", "1.0") is False


def test_deeply_nested_marker_is_refused():
    env = marker_environment(pyvenv_cfg=None)
    marker = "(" * 5000 + "os_name == 'posix'" + ")" * 5000
    with pytest.raises(VenvLockError, match="nests parentheses deeper than 32 levels"):
        evaluate_marker(marker, env)
    assert evaluate_marker("(" * 32 + "os_name == 'posix'" + ")" * 32, env) is (os.name == "posix")


# --------------------------------------------------------------- METADATA ---

def test_metadata_name_not_utf8_is_named(tmp_path):
    metadata = b"Metadata-Version: 2.1\nName: s\xffx\nVersion: 1.17.0\n"
    venv, site = make_venv(tmp_path, [("six", "1.17.0", metadata, None)])
    lock = write_lock(tmp_path, b"six==1.17.0\n")
    with pytest.raises(VenvLockError) as err:
        compare(venv, lock)
    metadata = os.path.join(site, "six-1.17.0.dist-info", "METADATA")
    assert str(err.value).startswith("%s: its Name header is not UTF-8" % metadata)


def test_metadata_other_headers_not_utf8_are_tolerated(tmp_path):
    latin1 = "Metadata-Version: 1.0\nName: six\nVersion: 1.17.0\nAuthor: Jos\xe9\n\n".encode("latin-1")
    venv, site = make_venv(tmp_path, [("six", "1.17.0", latin1, None)])
    assert compare(venv, write_lock(tmp_path, b"six==1.17.0\n"))["in_sync"] is True
    headers = read_metadata_headers(os.path.join(site, "six-1.17.0.dist-info", "METADATA"))
    assert headers["author"] == "Jos\ufffd" and headers["name"] == "six"


def test_metadata_reads_are_bounded(tmp_path):
    # one header line far longer than the bound: dropped, Name/Version before it still read
    huge = b"Name: six\nVersion: 1.17.0\nSummary: " + b"x" * (venv_lock.MAX_METADATA_HEADER_SIZE + 10)
    venv, site = make_venv(tmp_path, [("six", "1.17.0", huge, None)])
    path = os.path.join(site, "six-1.17.0.dist-info", "METADATA")
    assert read_metadata_headers(path) == {"name": "six", "version": "1.17.0"}
    assert compare(venv, write_lock(tmp_path, b"six==1.17.0\n"))["in_sync"] is True


def test_read_metadata_headers_never_raises(tmp_path):
    assert read_metadata_headers(str(tmp_path / "missing")) == {}
    assert read_metadata_headers(str(tmp_path)) == {}
    binary = tmp_path / "METADATA"
    binary.write_bytes(b"\xff\xfe\x00Name: \xff\n")
    assert read_metadata_headers(str(binary)) == {"\ufffd\ufffd\x00name": "\ufffd"}


def test_metadata_that_is_a_fifo_is_not_read_and_the_directory_name_tells(tmp_path):
    # reading a FIFO would block the module for ever; it counts as an unreadable METADATA
    venv, site = make_venv(tmp_path, [("six", "1.17.0", None, None)])
    metadata = os.path.join(site, "six-1.17.0.dist-info", "METADATA")
    os.unlink(metadata)
    os.mkfifo(metadata)
    assert read_metadata_headers(metadata) == {}
    assert [(d["name"], d["version"]) for d in installed_distributions(site)] == [("six", "1.17.0")]
    assert compare(venv, write_lock(tmp_path, b"six==1.17.0\n"))["in_sync"] is True


@pytest.mark.parametrize("metadata,expected", [
    (b"Name: Flash_Attn\nVersion: 2.8.3.post1\n\n", ("Flash_Attn", "2.8.3.post1")),   # METADATA wins
    (b"Name: flash-attn\n\n", ("flash-attn", "2.8.3")),                              # version from the name
    (None, ("flash_attn", "2.8.3")),                                                   # lost: the directory name
    (b"Name: fl\xffsh\nVersion: 2.8.3\n", VenvLockError),
])
def test_distribution_name_version(tmp_path, metadata, expected):
    info = tmp_path / "flash_attn-2.8.3.dist-info"
    info.mkdir()
    if metadata is not None:
        (info / "METADATA").write_bytes(metadata)
    if expected is VenvLockError:
        with pytest.raises(VenvLockError, match="its Name header is not UTF-8"):
            venv_lock.distribution_name_version(str(info))
        # a caller that must still know the distribution counts the damaged METADATA as missing
        assert venv_lock.distribution_name_version(str(info), damaged_ok=True) == ("flash_attn", "2.8.3")
    else:
        assert venv_lock.distribution_name_version(str(info)) == expected


# --------------------------------------------------------- direct_url.json ---

@pytest.mark.parametrize("direct_url,reason", [
    (json.dumps([{"url": URL}]).encode(), 'expected a JSON object with "url", got list'),
    (b"{not json", "not UTF-8 JSON"),
    (b'{"url": "\xff"}', "not UTF-8 JSON"),
    (b"[" * 60000, "nests too deeply"),
    (b" " * (64 * 1024 + 1), "larger than 65536 bytes"),
    (json.dumps({"url": ["x"]}).encode(), '"url" is not a non-empty string'),
    (json.dumps({"url": URL + "\n"}).encode(), '"url" holds control characters'),
])
def test_broken_direct_url_is_ignored_with_a_warning(tmp_path, direct_url, reason):
    venv, site = make_venv(tmp_path, [("local-wheel", "1.0", None, direct_url), ("six", "1.17.0", None, None)])
    lock = write_lock(tmp_path, ("local-wheel @ %s\nsix==1.17.0\n" % URL).encode())
    result = compare(venv, lock)
    path = os.path.join(site, "local_wheel-1.0.dist-info", "direct_url.json")
    assert result["warnings"] == ["%s: ignored, %s" % (path, result["warnings"][0].split(": ignored, ", 1)[1])]
    assert reason in result["warnings"][0]
    # unknown source: the URL pin is not satisfied, so a role reinstalls the package
    assert result["in_sync"] is False
    assert result["differing"] == [{"name": "local-wheel", "locked": URL, "installed": "1.0 (not from a URL)"}]


def test_direct_url_that_is_a_directory_or_fifo(tmp_path):
    venv, site = make_venv(tmp_path, [("a", "1.0", None, None), ("b", "1.0", None, None)])
    os.mkdir(os.path.join(site, "a-1.0.dist-info", "direct_url.json"))
    os.mkfifo(os.path.join(site, "b-1.0.dist-info", "direct_url.json"))
    dists = installed_distributions(site)
    assert [d["url"] for d in dists] == [None, None]
    assert all("ignored, cannot read: not a regular file" in d["problem"] for d in dists)


def test_good_direct_url_still_matches(tmp_path):
    venv, _site = make_venv(tmp_path, [("local-wheel", "1.0", None, json.dumps({"url": URL}).encode())])
    result = compare(venv, write_lock(tmp_path, ("local-wheel @ %s\n" % URL).encode()))
    assert result["in_sync"] is True and result["warnings"] == []


def test_pyvenv_cfg_is_optional_and_bounded(tmp_path):
    venv, _site = make_venv(tmp_path, [("six", "1.17.0", None, None)])
    cfg = os.path.join(venv, "pyvenv.cfg")
    with open(cfg, "wb") as handle:
        handle.write(b"\xff\x00\nversion_info = 3.11.7\n")
        handle.truncate(venv_lock.MAX_PYVENV_CFG_SIZE * 4)
    env = marker_environment(os.path.join(venv, "lib", "python3.11", "site-packages"), cfg)
    assert env["python_full_version"] == "3.11.7"
