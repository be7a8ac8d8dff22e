# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_lock on broken and hostile files: a VenvLockError naming the file, or a warning for an optional one.

The venvs here are laid out by hand (lib/pythonX.Y/site-packages/<name>-<version>.dist-info/METADATA):
what venv_lock reads is files, and these files are the broken ones a real installer never writes.
"""

import json
import os

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._venv import lock as venv_lock
from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import (
    VenvLockError,
    compare,
    evaluate_marker,
    installed_distributions,
    marker_environment,
    parse_lock,
    parse_lock_text,
    read_metadata_headers,
    version_key,
    version_matches,
)

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
