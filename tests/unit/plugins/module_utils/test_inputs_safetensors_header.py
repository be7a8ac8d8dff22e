# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""safetensors_header on hostile and random input: only SafetensorsHeaderError, never a traceback."""

import json
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import headers as sh
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import (
    DTYPE_BITS,
    MAX_HEADER_DEPTH,
    METADATA_KEY,
    SafetensorsHeaderError,
    TensorInfo,
    json_nesting_depth,
    read_checkpoint,
    read_header,
)


def write_file(path, header, data=b"", length=None):
    """The safetensors layout by hand: 8-byte little-endian header length, header bytes, data."""
    with open(str(path), "wb") as handle:
        handle.write(struct.pack("<Q", len(header) if length is None else length))
        handle.write(header)
        handle.write(data)
    return str(path)


def rejected(path):
    """The message of the SafetensorsHeaderError read_header raises for path (which it must name)."""
    with pytest.raises(SafetensorsHeaderError) as err:
        read_header(path)
    assert path in str(err.value)
    return str(err.value)


# ------------------------------------------------------------ regressions ---

@pytest.mark.parametrize("header", [
    b"[" * 100000,
    b'{"a":' * 50000,
    b'{"x": {"dtype": "F32", "shape": ' + b"[" * 5000 + b"]" * 5000 + b', "data_offsets": [0, 0]}}',
    b'{"__metadata__": {"a": {"b": {"c": {"d": "e"}}}}}',
], ids=["arrays", "objects", "in-shape", "in-metadata"])
def test_deep_nesting_is_refused_before_json_recurses(tmp_path, header):
    message = rejected(write_file(tmp_path / "deep.safetensors", header))
    assert "nests deeper than %d levels" % MAX_HEADER_DEPTH in message


def test_brackets_inside_strings_do_not_count(tmp_path):
    name = "[[[[[[{{{{{{ \\\" ]]"
    header = json.dumps({name: {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                         METADATA_KEY: {"k": "[[[[[[[["}}).encode()
    assert read_header(write_file(tmp_path / "s.safetensors", header, b"\0"))[name] == ("U8", (1,))


@pytest.mark.parametrize("dtype", [["F32"], {"a": 1}, 32, None, True])
def test_dtype_not_a_string(tmp_path, dtype):
    header = json.dumps({"w": {"dtype": dtype, "shape": [1], "data_offsets": [0, 4]}}).encode()
    message = rejected(write_file(tmp_path / "t.safetensors", header, b"\0" * 4))
    assert "tensor 'w': dtype must be a string" in message


@pytest.mark.parametrize("entry,expected", [
    ({"dtype": "F32", "shape": [[1]], "data_offsets": [0, 4]}, "shape must be a list of non-negative integers"),
    ({"dtype": "F32", "shape": {"0": 1}, "data_offsets": [0, 4]}, "shape must be a list of non-negative integers"),
    ({"dtype": "F32", "shape": [1], "data_offsets": {"0": 0}}, "data_offsets must be [begin, end]"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0]}, "data_offsets must be [begin, end]"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 4.0]}, "data_offsets must be [begin, end]"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}, "run past the end of the data region"),
    ("F32", "expected an object with dtype"),
])
def test_wrong_types_name_file_and_tensor(tmp_path, entry, expected):
    header = json.dumps({"w": entry}).encode()
    message = rejected(write_file(tmp_path / "t.safetensors", header, b"\0" * 4))
    assert "tensor 'w'" in message and expected in message


@pytest.mark.parametrize("header,expected", [
    (b'{"\\ud800": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}}', "tensor name"),
    (b'{"__metadata__": {"k": "\\udfff"}}', "__metadata__['k']"),
])
def test_lone_surrogate_escapes_are_refused(tmp_path, header, expected):
    message = rejected(write_file(tmp_path / "u.safetensors", header))
    assert expected in message and "lone surrogate" in message


def test_fifo_is_refused_without_blocking(tmp_path):
    path = str(tmp_path / "pipe.safetensors")
    os.mkfifo(path)
    assert "not a regular file" in rejected(path)
    with pytest.raises(SafetensorsHeaderError, match="not a regular file"):
        read_checkpoint(path)


def _checkpoint_with_index(tmp_path, index_bytes):
    directory = tmp_path / "ck"
    directory.mkdir()
    write_file(directory / "a.safetensors", json.dumps({"x": {"dtype": "U8", "shape": [1],
                                                              "data_offsets": [0, 1]}}).encode(), b"\0")
    index = directory / sh.INDEX_FILENAME
    if index_bytes is not None:
        index.write_bytes(index_bytes)
    return str(directory), str(index)


@pytest.mark.parametrize("index_bytes,expected", [
    (b'{"weight_map": ' + b"[" * 100000 + b"}", "nests deeper than"),
    (b'{"weight_map": {"x": "a.safetensors"}, "metadata": "\xff"}', "not UTF-8"),
    (b'["weight_map"]', "non-empty \"weight_map\""),
    (b'{"weight_map": {"x": ["a.safetensors"]}}', "is not a file name inside"),
])
def test_bad_index_is_named(tmp_path, index_bytes, expected):
    directory, index = _checkpoint_with_index(tmp_path, index_bytes)
    with pytest.raises(SafetensorsHeaderError) as err:
        read_checkpoint(directory)
    assert index in str(err.value) and expected in str(err.value)


def test_huge_index_is_refused_unread(tmp_path):
    directory, index = _checkpoint_with_index(tmp_path, b"")
    with open(index, "r+b") as handle:
        handle.truncate(sh.MAX_INDEX_SIZE + 1)  # sparse: no disk spent
    with pytest.raises(SafetensorsHeaderError, match="larger than the %d-byte limit" % sh.MAX_INDEX_SIZE):
        read_checkpoint(directory)


def test_index_that_is_a_directory(tmp_path):
    directory, index = _checkpoint_with_index(tmp_path, None)
    os.mkdir(index)
    with pytest.raises(SafetensorsHeaderError, match="not a regular file"):
        read_checkpoint(directory)


@pytest.mark.parametrize("text,depth", [
    ("1", 0), ("[]", 1), ("{}", 1), ('{"a": [1, {"b": []}]}', 4), ('"[[[["', 0), ('["\\"[", [[]]]', 3),
    ('["\\\\", [[]]]', 3), ("[[[", 3), ("]]][", 0),
])
def test_json_nesting_depth(text, depth):
    assert json_nesting_depth(text) == depth


def test_json_nesting_depth_stops_at_the_limit():
    assert json_nesting_depth("[" * 10 ** 6, limit=4) == 5


# ------------------------------------------------------------- properties ---

def _depth(value):
    if isinstance(value, dict):
        return 1 + max([_depth(v) for v in value.values()] or [0])
    if isinstance(value, list):
        return 1 + max([_depth(v) for v in value] or [0])
    return 0


_scalars = st.none() | st.booleans() | st.integers(-2, 2 ** 70) | st.floats(allow_nan=False) | st.text(max_size=6)
_json = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=12)


@given(value=_json)
def test_property_scan_depth_is_the_parsed_depth(value):
    assert json_nesting_depth(json.dumps(value)) == _depth(value)


def _nested_text(value, levels, as_object):
    """json.dumps(value) inside ``levels`` objects or arrays, built as text (json.dumps itself would recurse)."""
    head, tail = ('{"k": ', "}") if as_object else ("[", "]")
    return head * levels + json.dumps(value) + tail * levels


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=64), length=st.one_of(st.none(), st.integers(0, 2 ** 64 - 1)),
       data=st.binary(max_size=16))
def test_property_random_bytes_only_our_error(tmp_path, body, length, data):
    path = write_file(tmp_path / "r.safetensors", body, data, length)
    try:
        header = read_header(path)
    except SafetensorsHeaderError as exc:
        assert path in str(exc)
        return
    assert isinstance(header, dict) and isinstance(header[METADATA_KEY], dict)


_field = st.one_of(_json, st.sampled_from(sorted(DTYPE_BITS)), st.lists(st.integers(-2, 6), max_size=3))
_entry = st.one_of(_json, st.fixed_dictionaries({"dtype": _field, "shape": _field, "data_offsets": _field}))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.dictionaries(st.text(max_size=5), _entry, max_size=3), metadata=_json,
       levels=st.sampled_from([0, 0, 1, 3, 4, 50, 3000]), as_object=st.booleans(), data_size=st.integers(0, 24))
def test_property_random_json_only_our_error(tmp_path, entries, metadata, levels, as_object, data_size):
    document = dict(entries, **{METADATA_KEY: metadata}) if levels % 2 else entries
    path = write_file(tmp_path / "j.safetensors", _nested_text(document, levels, as_object).encode(), b"\0" * data_size)
    try:
        header = read_header(path)
    except SafetensorsHeaderError as exc:
        assert path in str(exc)
        return
    assert levels == 0 and set(header) <= set(document) | {METADATA_KEY}
    for name, info in header.items():
        if name != METADATA_KEY:
            assert info == TensorInfo(document[name]["dtype"], tuple(document[name]["shape"]))


_names = st.text(min_size=1, max_size=10).filter(lambda name: name != METADATA_KEY)
_specs = st.dictionaries(
    _names, st.tuples(st.sampled_from(sorted(DTYPE_BITS)), st.lists(st.integers(0, 4), max_size=3)), max_size=6)


def _whole_bytes(dtype, shape):
    """shape, or shape with a last dimension of 8 added when its elements are not a whole number of bytes."""
    numel = 1
    for dim in shape:
        numel *= dim
    return list(shape) + [8] if numel * DTYPE_BITS[dtype] % 8 else list(shape)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=_specs, data=st.data(),
       metadata=st.one_of(st.none(), st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3)), pad=st.integers(0, 7), ascii_only=st.booleans())
def test_property_valid_header_round_trips(tmp_path, specs, metadata, data, pad, ascii_only):
    specs = dict((name, (dtype, _whole_bytes(dtype, shape))) for name, (dtype, shape) in specs.items())
    order = data.draw(st.permutations(sorted(specs)))
    header, offset = {}, 0
    for name in order:
        dtype, shape = specs[name]
        size = sh.tensor_nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    if metadata is not None:
        header[METADATA_KEY] = metadata
    raw = json.dumps(header, ensure_ascii=ascii_only).encode("utf-8") + b" " * pad
    path = write_file(tmp_path / "v.safetensors", raw, b"\0" * offset)
    expected = dict((name, TensorInfo(dtype, tuple(shape))) for name, (dtype, shape) in specs.items())
    expected[METADATA_KEY] = metadata or {}
    assert read_header(path) == expected


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=_specs, data=st.data())
def test_property_random_offsets_accepted_only_when_they_tile(tmp_path, specs, data):
    specs = dict((name, (dtype, _whole_bytes(dtype, shape))) for name, (dtype, shape) in specs.items())
    total = sum(sh.tensor_nbytes(dtype, shape) for dtype, shape in specs.values())
    header = {}
    for name, (dtype, shape) in sorted(specs.items()):
        begin = data.draw(st.integers(0, total + 2))
        end = data.draw(st.integers(0, total + 2))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    data_size = data.draw(st.integers(max(0, total - 2), total + 2))
    path = write_file(tmp_path / "o.safetensors", json.dumps(header).encode(), b"\0" * data_size)
    try:
        read_header(path)
    except SafetensorsHeaderError as exc:
        assert path in str(exc)
        return
    spans = sorted(tuple(entry["data_offsets"]) for entry in header.values())
    position = 0
    for (begin, end), name in zip(spans, sorted(header, key=lambda n: tuple(header[n]["data_offsets"]))):
        assert begin == position and end - begin == sh.tensor_nbytes(header[name]["dtype"], header[name]["shape"])
        position = end
    assert position == data_size
