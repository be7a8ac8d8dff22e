# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Issue 27 follow-ups: the JSON depth scan is linear on any input, and the bounded JSON reads
(safetensors headers and indexes, drafter_config.read_json_file) cannot block on a FIFO swapped in after a stat."""

import json
import os
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import dflash
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import drafter_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import target
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import headers as sh
from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import json_depth
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import (
    SafetensorsHeaderError, json_nesting_depth, read_checkpoint, read_header,
)


def _safetensors(path, header_bytes):
    with open(str(path), "wb") as handle:
        handle.write(struct.pack("<Q", len(header_bytes)) + header_bytes)
    return str(path)


# ------------------------------------------------------ a: a linear scan ---

# '"' then '\"' pairs: an unterminated string. The former pattern needed the closing quote, so it
# rescanned the rest of the text from every quote (1 s for 10k pairs, 16 s for 40k).
_QUOTE_SOUP = '"' + '\\"' * 40000


def test_unterminated_string_scan_is_linear():
    start = time.monotonic()
    assert json_nesting_depth(_QUOTE_SOUP) == 0
    assert json_nesting_depth(_QUOTE_SOUP + "[" * 10, limit=4) == 0  # inside the unterminated string
    assert json_nesting_depth("[" * 10 + _QUOTE_SOUP, limit=4) == 5
    assert time.monotonic() - start < 2


def test_unterminated_string_header_is_refused_quickly(tmp_path):
    path = _safetensors(tmp_path / "soup.safetensors", _QUOTE_SOUP.encode())
    start = time.monotonic()
    with pytest.raises(SafetensorsHeaderError, match="header is not valid JSON: Unterminated string"):
        read_header(path)
    assert time.monotonic() - start < 2


def test_unterminated_string_config_json_is_refused_quickly(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a": ' + _QUOTE_SOUP)
    start = time.monotonic()
    with pytest.raises(dflash.DflashConfigError, match="config.json: not valid JSON: Unterminated string"):
        target.read_target_config(str(path))
    assert time.monotonic() - start < 2


def test_the_limit_caps_the_result():
    assert json_nesting_depth("[" * 10 ** 6, limit=4) == 5
    assert json_nesting_depth("[[[]]]", limit=4) == 3
    assert json_nesting_depth("[" * 7) == 7


_SOUP = st.text(alphabet='"\\[]{}:, a1', max_size=80)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_SOUP)
def test_property_quote_bracket_soup_only_our_error(tmp_path, text):
    # one home: safetensors_header's scan is host_files.json_depth, capped at limit + 1
    assert json_nesting_depth(text) == json_depth(text)
    assert json_nesting_depth(text, limit=2) == min(json_depth(text), 3)
    try:
        parsed = json.loads(text)
    except ValueError:
        pass
    else:  # whatever json accepts, the scan counts at least as deep as json recursed
        assert json_depth(text) >= json_depth(json.dumps(parsed))
    path = _safetensors(tmp_path / "s.safetensors", text.encode())
    try:
        read_header(path)
    except SafetensorsHeaderError as exc:
        assert path in str(exc)
    config = tmp_path / "config.json"
    config.write_text(text)
    try:
        target.read_target_config(str(config))
    except dflash.DflashConfigError as exc:
        assert str(config) in str(exc)


# ------------------------------------------- b: a FIFO swapped in after the stat ---

@pytest.fixture
def swapped_fifo(tmp_path, monkeypatch):
    """A FIFO whose os.stat says "a regular file": what a stat-then-open read sees when the FIFO is
    swapped in between the two. Yields (make, call): make(name) makes the FIFO tmp_path/d/name and
    returns its path; call(fn) runs fn in a thread and returns the exception it raised, failing the
    test if it blocks."""
    directory = tmp_path / "d"
    directory.mkdir()
    regular = tmp_path / "regular"
    regular.write_text("{}")
    fifos = set()
    real_stat = os.stat

    def fake_stat(path, *args, **kwargs):
        return real_stat(str(regular)) if os.fspath(path) in fifos else real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", fake_stat)

    def make(name):
        path = str(directory / name)
        os.mkfifo(path)
        fifos.add(path)
        return path

    def call(function):
        outcome = []

        def target():
            try:
                function()
            except Exception as exc:  # pylint: disable=broad-except
                outcome.append(exc)
            else:
                outcome.append(None)

        start = time.monotonic()
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(5)
        if thread.is_alive():  # blocked in open(): give it a writer so that the thread ends
            for path in fifos:
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                except OSError:
                    pass
            thread.join(5)
            pytest.fail("the read blocked on a FIFO")
        assert time.monotonic() - start < 2
        return outcome[0]

    yield make, call


def test_read_json_file_does_not_block_on_a_swapped_fifo(swapped_fifo):
    make, call = swapped_fifo
    fifo = make("config.json")
    assert os.path.isfile(fifo)  # what a stat before the swap saw
    exc = call(lambda: drafter_config.read_json_file(fifo))
    assert isinstance(exc, ValueError) and str(exc) == "not a regular file"
    exc = call(lambda: target.read_target_config(fifo))
    assert isinstance(exc, dflash.DflashConfigError)
    assert str(exc).startswith("target config %s: not a regular file" % fifo)


def test_read_header_does_not_block_on_a_swapped_fifo(swapped_fifo):
    make, call = swapped_fifo
    fifo = make("model.safetensors")
    exc = call(lambda: read_header(fifo))
    assert isinstance(exc, SafetensorsHeaderError) and str(exc) == "%s: cannot read: not a regular file" % fifo
    exc = call(lambda: read_checkpoint(os.path.dirname(fifo)))  # the directory's one *.safetensors
    assert isinstance(exc, SafetensorsHeaderError) and str(exc) == "%s: cannot read: not a regular file" % fifo


def test_read_index_does_not_block_on_a_swapped_fifo(swapped_fifo):
    make, call = swapped_fifo
    index = make(sh.INDEX_FILENAME)
    exc = call(lambda: read_checkpoint(os.path.dirname(index)))
    assert isinstance(exc, SafetensorsHeaderError) and str(exc) == "%s: cannot read: not a regular file" % index


def test_missing_file_is_still_named(tmp_path):
    missing = str(tmp_path / "none.safetensors")
    with pytest.raises(SafetensorsHeaderError, match="^%s: cannot read: .*No such file" % missing):
        read_header(missing)
    with pytest.raises(dflash.DflashConfigError, match="^target config %s: cannot read: No such file" % missing):
        target.read_target_config(missing)
