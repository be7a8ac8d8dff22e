# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_common/files.py: every read opens regular files only, bounded in size and JSON depth (issue 27, item 4);
read_text is the one lenient reader of small files (pyvenv.cfg, records, a cgroup, the driver version).

Real FIFOs (os.mkfifo) with no writer, where opening for reading blocks for ever: every read must come back at
once. A SIGALRM guard turns a regression into a failure instead of a hung test run.
"""

import contextlib
import os
import signal
import time

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    MAX_JSON_DEPTH, NotRegularFile, json_depth, open_regular, parse_json_bounded, path_state, read_json,
    read_record, read_text, sha256_file, stat_path)


@contextlib.contextmanager
def within(seconds):
    def expired(signum, frame):
        raise AssertionError("still blocked after %ss" % seconds)
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - start < seconds


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "inference_vllm_service_tiny.fact"
    os.mkfifo(str(path))
    return str(path)


def test_a_fifo_record_is_a_warning_naming_it_not_a_hang(fifo):
    with within(2):
        record, warning = read_record(fifo)
    assert record is None
    assert warning == "%s is a FIFO, not a regular file; expected a JSON file: it will be rewritten" % fifo


def test_a_fifo_config_json_is_an_error_naming_it(tmp_path):
    path = tmp_path / "config.json"
    os.mkfifo(str(path))
    with within(2):
        data, error = read_json(str(path))
    assert data is None and error == "%s is a FIFO, not a regular file; expected a JSON file" % path


def test_a_link_to_a_fifo_is_refused_too(tmp_path, fifo):
    link = tmp_path / "config.json"
    link.symlink_to(fifo)
    with within(2):
        assert "is a FIFO, not a regular file" in read_json(str(link))[1]


def test_every_other_read_of_a_fifo_comes_back_at_once(fifo):
    with within(2):
        assert read_text(fifo) == ""
        with pytest.raises(NotRegularFile, match="is a FIFO"):
            sha256_file(fifo)
        with pytest.raises(NotRegularFile, match="is a FIFO"):
            open_regular(fifo)
        state = stat_path(fifo, content=True)
        assert state["exists"] and not state["isreg"] and "sha256" not in state
        assert "sha256" not in path_state(fifo)


def test_directories_and_devices_are_named(tmp_path):
    assert read_json(str(tmp_path))[1] == "%s is a directory, not a regular file; expected a JSON file" % tmp_path
    assert read_json("/dev/zero")[1] == "/dev/zero is a character device, not a regular file; expected a JSON file"
    assert read_text("/dev/zero") == ""


def test_missing_and_unreadable_stay_absent(tmp_path):
    assert read_json(str(tmp_path / "missing.json")) == (None, None)
    assert read_record(str(tmp_path / "missing.fact")) == (None, None)


def test_a_100000_deep_record_is_refused_without_recursion(tmp_path):
    path = tmp_path / "deep.fact"
    path.write_text('{"a": ' + "[" * 100000 + "]" * 100000 + "}")
    with within(5):
        record, warning = read_record(str(path))
    assert record is None and warning == "%s is not JSON (nested deeper than 64 levels): it will be rewritten" % path


def test_depth_at_the_bound_is_read_and_one_more_is_not(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert read_json(str(path))[1] is None
    path.write_text("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    assert read_json(str(path))[1] == "%s is not JSON (nested deeper than 64 levels)" % path


def test_unbalanced_deep_text_is_refused_before_json_recurses():
    # json would recurse once per "[" before it finds the text is cut short: 100,000 levels.
    assert parse_json_bounded("[" * 100000) == (None, "nested deeper than 64 levels")
    assert parse_json_bounded('{"a":' * 100000) == (None, "nested deeper than 64 levels")
    assert parse_json_bounded("[[1") == (None, "Expecting ',' delimiter: line 1 column 4 (char 3)")


def test_brackets_in_strings_do_not_count_and_the_scan_is_linear():
    assert json_depth('["[[[[", "\\"[[[", {"a": "]]]]"}]') == 2
    start = time.monotonic()
    # '"\\"\\"...' unterminated: a scanner that needs the closing quote rescans from every quote (quadratic)
    assert json_depth('"' + '\\"' * 1000000) == 0
    assert time.monotonic() - start < 2


def test_size_nan_and_encoding_bounds(tmp_path):
    path = tmp_path / "r.fact"
    path.write_bytes(b'{"a": NaN}')
    assert read_json(str(path))[1] == "%s is not JSON (NaN is not a JSON value)" % path
    path.write_bytes(b'{"a": "\xff"}')
    assert read_json(str(path))[1] == "%s is not JSON (not UTF-8: byte 0xff at offset 7)" % path
    path.write_bytes(b"[" + b"1," * 600 + b"1]")
    assert read_json(str(path), limit=1000)[1] == (
        "%s is larger than 1000 bytes, too large for a record or a config.json" % path)
    path.write_text('{"model_fingerprint": "sha256:x"}')
    assert read_record(str(path)) == ({"model_fingerprint": "sha256:x"}, None)


def test_a_link_to_a_regular_file_is_read(tmp_path):
    # A Hugging Face snapshot's config.json is a link into its blobs.
    blob = tmp_path / "blob"
    blob.write_text('{"num_hidden_layers": 4}')
    (tmp_path / "config.json").symlink_to(blob)
    assert read_json(str(tmp_path / "config.json")) == ({"num_hidden_layers": 4}, None)


# ---------------------------------------------------------------- read_text

def test_reads_at_most_limit_bytes(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc\xffdef")
    assert read_text(str(path)) == "abc\ufffddef"
    assert read_text(str(path), 3) == "abc"


def test_missing_unreadable_or_not_regular_is_empty(tmp_path):
    assert read_text(str(tmp_path / "missing")) == ""
    assert read_text("") == ""
    assert read_text(str(tmp_path)) == ""          # a directory
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    assert read_text(str(fifo)) == ""              # would block without the regular-file check


# ---- issue 38: load_json, the one bounded JSON file reader, and its reasons --------------------------------------
@pytest.mark.parametrize("data, reason", [
    (b"x" * 101, "too_large"), (b'{"a": "\xff"}', "not_utf8"), (b"[" * 70, "too_deep"), (b"{", "not_json"),
    (b"[NaN]", "not_json"),
])
def test_load_json_names_its_reason(tmp_path, data, reason):
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import JsonFileError, load_json
    path = tmp_path / "f.json"
    path.write_bytes(data)
    with pytest.raises(JsonFileError) as err:
        load_json(str(path), limit=100)
    assert err.value.reason == reason


def test_load_json_returns_the_bytes_and_allows_constants_when_asked(tmp_path):
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import JsonFileError, load_json
    path = tmp_path / "f.json"
    path.write_bytes(b'{"a": NaN}')
    raw, parsed = load_json(str(path), constants=True)
    assert raw == b'{"a": NaN}' and parsed["a"] != parsed["a"]
    with pytest.raises(JsonFileError) as err:
        load_json(str(tmp_path))
    assert err.value.reason == "not_regular" and "is a directory, not a regular file" in str(err.value)
