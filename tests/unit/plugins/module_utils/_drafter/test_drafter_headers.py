# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_drafter/headers.py: against the real safetensors library on real files, and on hostile and
random input (only SafetensorsHeaderError, never a traceback)."""

import json
import os
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

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
    tensor_names,
)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # _dflash_fixtures, shared
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position


# ----------------------------------------------- the safetensors library ---

def library_view(path):
    """What safetensors.safe_open sees: names, dtype codes, shapes, metadata."""
    with safe_open(str(path), framework="numpy") as handle:
        tensors = {}
        for name in handle.keys():
            view = handle.get_slice(name)
            tensors[name] = (view.get_dtype(), tuple(view.get_shape()))
        return tensors, handle.metadata() or {}


def our_view(header):
    return dict((n, (i.dtype, tuple(i.shape))) for n, i in header.items() if n != METADATA_KEY), header[METADATA_KEY]


def assert_agrees(path):
    header = read_header(path)
    assert our_view(header) == library_view(path)
    for name in tensor_names(header):
        dtype, shape = header[name]  # a (dtype, shape) pair
        assert isinstance(dtype, str) and isinstance(shape, tuple)
    return header


def library_rejects(path):
    try:
        library_view(path)
    except SafetensorError:
        return True
    return False


# ------------------------------------------------------------ agreement ---

NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.uint16, np.uint32, np.uint64, np.bool_, np.complex64]


def test_every_numpy_dtype_agrees(tmp_path):
    tensors = dict(("t_%s" % np.dtype(t).name, np.zeros((2, 3), dtype=t)) for t in NUMPY_DTYPES)
    tensors["scalar"] = np.zeros((), dtype=np.float32)
    tensors["empty"] = np.zeros((0, 4), dtype=np.float16)
    tensors["empty2"] = np.zeros((3, 0), dtype=np.int8)
    path = str(tmp_path / "all.safetensors")
    save_file(tensors, path, metadata={"format": "pt", "note": "x"})
    header = assert_agrees(path)
    assert header["scalar"] == ("F32", ())
    assert header["t_complex64"] == ("C64", (2, 3))
    assert header["t_bool"] == ("BOOL", (2, 3))
    assert header[METADATA_KEY] == {"format": "pt", "note": "x"}


def test_no_metadata_gives_empty_dict(tmp_path):
    path = str(tmp_path / "a.safetensors")
    save_file({"a": np.zeros((1,), np.float32)}, path)
    assert assert_agrees(path)[METADATA_KEY] == {}


def test_empty_file_header(tmp_path):
    path = fx.write_raw(tmp_path / "e.safetensors", b"{}", 0)
    assert read_header(path) == {METADATA_KEY: {}}
    assert our_view(read_header(path)) == library_view(path)


@pytest.mark.parametrize("dtype,shape,nbytes", [
    ("F4", [2, 3], 3),
    ("F4", [8], 4),
    ("F6_E2M3", [4], 3),
    ("F6_E3M2", [8, 4], 24),
    ("F8_E8M0", [3], 3),
    ("F8_E4M3", [2, 2], 4),
    ("F8_E5M2", [5], 5),
    ("F8_E4M3FNUZ", [1], 1),
    ("F8_E5M2FNUZ", [1], 1),
    ("BF16", [3], 6),
    ("C64", [3], 24),
])
def test_hand_written_dtypes_agree_with_library(tmp_path, dtype, shape, nbytes):
    header = {"x": {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}}
    path = fx.write_raw(tmp_path / "h.safetensors", json.dumps(header).encode(), nbytes)
    assert assert_agrees(path)["x"] == (dtype, tuple(shape))


def test_dtype_table_is_the_libraries_full_list():
    # safetensors 0.8.0's Dtype enum has 22 variants.
    assert len(DTYPE_BITS) == 22
    assert {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "BOOL", "U8", "U16", "U32", "U64",
            "I8", "I16", "I32", "I64", "F16", "BF16", "F32", "F64", "C64"} <= set(DTYPE_BITS)


def test_dflash_drafter_agrees(tmp_path):
    path = fx.write_tiny_drafter(tmp_path / "d.safetensors")
    header = assert_agrees(path)
    assert len(tensor_names(header)) == 3 + 11 * 2
    assert header["fc.weight"] == ("F16", (256, 512))


def test_seed_sized_sparse_file_agrees_and_reads_only_the_header(tmp_path, monkeypatch):
    path = fx.write_seed_drafter(tmp_path / "seed.safetensors")
    assert os.path.getsize(path) > 3 * 10 ** 9  # the real size of ct129's drafter
    reads = []
    real_open = open

    class Counting(object):
        def __init__(self, handle):
            self.handle = handle

        def read(self, size=-1):
            data = self.handle.read(size)
            reads.append(len(data))
            return data

        def fileno(self):
            return self.handle.fileno()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    real_open_regular = sh.open_regular  # every read of a header goes through it (never a FIFO)
    monkeypatch.setattr(sh, "open_regular", lambda path: Counting(real_open_regular(path)))
    header = read_header(path)
    monkeypatch.undo()
    (length,) = struct.unpack("<Q", real_open(path, "rb").read(8))
    assert sum(reads) == 8 + length  # never a byte of tensor data
    assert our_view(header) == library_view(path)
    assert header["fc.weight"] == ("BF16", (5120, 25600))


def test_path_like_accepted(tmp_path):
    path = tmp_path / "p.safetensors"
    save_file({"a": np.zeros((2,), np.float32)}, str(path))
    assert read_header(path)["a"] == ("F32", (2,))
    assert read_checkpoint(path)["a"] == ("F32", (2,))


# -------------------------------------------------------------- property ---

_names = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_characters='"\\'),
                 min_size=1, max_size=12).filter(lambda n: n != METADATA_KEY)
_tensor = st.tuples(st.sampled_from(NUMPY_DTYPES), st.lists(st.integers(0, 4), min_size=0, max_size=4))
_metadata = st.one_of(st.none(), st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tensors=st.dictionaries(_names, _tensor, min_size=1, max_size=8), metadata=_metadata)
def test_property_reader_agrees_with_safe_open(tmp_path, tensors, metadata):
    path = str(tmp_path / "prop.safetensors")
    arrays = dict((name, np.zeros(shape, dtype=dtype)) for name, (dtype, shape) in tensors.items())
    save_file(arrays, path, metadata=metadata)
    assert our_view(read_header(path)) == library_view(path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_property_corrupted_header_is_rejected_or_agrees(tmp_path, data):
    """Any byte edit of the header: our reader raises SafetensorsHeaderError, or the library agrees with it."""
    path = str(tmp_path / "mut.safetensors")
    save_file({"a": np.zeros((2, 3), np.float16), "b": np.zeros((4,), np.int32), "c": np.zeros((0,), np.uint8)},
              path, metadata={"format": "pt"})
    raw = bytearray(open(path, "rb").read())
    (length,) = struct.unpack("<Q", bytes(raw[:8]))
    for _edit in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, 8 + length - 1))
        raw[pos] = data.draw(st.sampled_from(list(b'0123456789{}[]",: ') + [data.draw(st.integers(0, 255))]))
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    with open(path, "wb") as handle:
        handle.write(bytes(raw))
    try:
        header = read_header(path)
    except SafetensorsHeaderError as exc:
        assert path in str(exc)
        return
    assert our_view(header) == library_view(path)


# ---------------------------------------------------------------- errors ---

def _hdr(entries, metadata=None):
    header = dict(entries)
    if metadata is not None:
        header[METADATA_KEY] = metadata
    return json.dumps(header).encode()


F32_3 = {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}

# (id, header bytes, data size, length override, expected message part, the library rejects it too)
ERROR_CASES = [
    ("length-zero", b"", 0, 0, "header length is 0", True),
    ("length-over-100MB", b"{}", 0, 100 * 1000 * 1000 + 1, "over the 100000000-byte limit", True),
    ("shorter-than-header", _hdr({"x": F32_3}), 12, 10 ** 6, "shorter than 8 + header length 1000000", True),
    ("not-utf8", b'{"\xff": 1}', 0, None, "not UTF-8", True),
    ("not-json", b'{"x": {"dtype": ', 0, None, "not valid JSON", True),
    ("json-array", b"[1, 2]", 0, None, "not a JSON object but list", True),
    ("json-number", b"42", 0, None, "not a JSON object but int", True),
    ("duplicate-key", b'{"x": %s, "x": %s}' % (json.dumps(F32_3).encode(), json.dumps(F32_3).encode()), 12, None,
     "duplicate key 'x'", False),
    ("metadata-not-strings", _hdr({}, {"a": 1}), 0, None, "__metadata__ must be an object of strings", True),
    ("entry-not-object", _hdr({"x": [1]}), 0, None, "expected an object with dtype", True),
    ("missing-dtype", _hdr({"x": {"shape": [1], "data_offsets": [0, 4]}}), 4, None, "missing 'dtype'", True),
    ("unknown-dtype", _hdr({"x": {"dtype": "F12", "shape": [1], "data_offsets": [0, 4]}}), 4, None,
     "unknown dtype 'F12'", True),
    ("lowercase-dtype", _hdr({"x": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}}), 4, None,
     "unknown dtype 'f32'", True),
    ("shape-not-list", _hdr({"x": {"dtype": "F32", "shape": 3, "data_offsets": [0, 12]}}), 12, None,
     "shape must be a list of non-negative integers", True),
    ("shape-negative", _hdr({"x": {"dtype": "F32", "shape": [-1, 3], "data_offsets": [0, 12]}}), 12, None,
     "shape must be a list of non-negative integers", True),
    ("shape-float", _hdr({"x": {"dtype": "F32", "shape": [3.0], "data_offsets": [0, 12]}}), 12, None,
     "shape must be a list of non-negative integers", True),
    ("shape-bool", _hdr({"x": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}), 4, None,
     "shape must be a list of non-negative integers", True),
    ("offsets-three", _hdr({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12, 12]}}), 12, None,
     "data_offsets must be [begin, end]", True),
    ("offsets-reversed", _hdr({"x": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}}), 4, None,
     "data_offsets must be [begin, end]", True),
    ("offsets-not-int", _hdr({"x": {"dtype": "F32", "shape": [3], "data_offsets": ["0", 12]}}), 12, None,
     "data_offsets must be [begin, end]", True),
    ("size-mismatch", _hdr({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}), 8, None,
     "span 8 bytes, but shape [3] of F32 needs 12 bytes", True),
    ("size-mismatch-bf16", _hdr({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 16]}}), 16, None,
     "needs 8 bytes", True),
    ("sub-byte-not-whole", _hdr({"x": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}), 2, None,
     "3 elements of F4 are 12 bits, not a whole number of bytes", True),
    ("sub-byte-f6", _hdr({"x": {"dtype": "F6_E2M3", "shape": [3], "data_offsets": [0, 3]}}), 3, None,
     "18 bits", True),
    ("out-of-file", _hdr({"x": F32_3}), 8, None, "run past the end of the data region (8 bytes)", True),
    ("overlap", _hdr({"x": F32_3, "y": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}), 16, None,
     "overlap tensor 'x'", True),
    ("overlap-empty-inside", _hdr({"x": F32_3, "y": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}), 12,
     None, "overlap", True),
    ("gap", _hdr({"x": {"dtype": "F32", "shape": [3], "data_offsets": [4, 16]}}), 16, None,
     "gap of 4 bytes before tensor 'x'", True),
    ("trailing-bytes", _hdr({"x": F32_3}), 20, None, "8 bytes after the last tensor", True),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_corrupted_file_errors(tmp_path, case):
    _id, header, data_size, length, expected, lib_rejects = case
    path = fx.write_raw(tmp_path / "bad.safetensors", header, data_size, length)
    with pytest.raises(SafetensorsHeaderError) as err:
        read_header(path)
    assert path in str(err.value)
    assert expected in str(err.value)
    assert isinstance(err.value, ValueError)
    if lib_rejects:
        assert library_rejects(path)


@pytest.mark.parametrize("size", [0, 3, 7])
def test_file_shorter_than_length_prefix(tmp_path, size):
    path = str(tmp_path / "short.safetensors")
    with open(path, "wb") as handle:
        handle.write(b"\x01" * size)
    with pytest.raises(SafetensorsHeaderError, match="shorter than the 8-byte header length"):
        read_header(path)


def test_truncated_real_file(tmp_path):
    path = fx.write_tiny_drafter(tmp_path / "d.safetensors")
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) - 1)
    with pytest.raises(SafetensorsHeaderError, match="run past the end of the data region"):
        read_header(path)


def test_unreadable_and_missing(tmp_path):
    with pytest.raises(SafetensorsHeaderError, match="no such file or directory"):
        read_checkpoint(str(tmp_path / "nope.safetensors"))
    with pytest.raises(SafetensorsHeaderError, match="cannot read"):
        read_header(str(tmp_path / "nope.safetensors"))
    with pytest.raises(SafetensorsHeaderError, match="cannot read"):
        read_header(str(tmp_path))  # a directory is not a file


# --------------------------------------------------------------- sharded ---

def _write_sharded(directory, shards, weight_map=None):
    os.makedirs(str(directory), exist_ok=True)
    built = {}
    for shard, names in shards.items():
        tensors = dict((n, np.zeros((2, 2), np.float16)) for n in names)
        save_file(tensors, os.path.join(str(directory), shard), metadata={"format": "pt", "shard": shard})
        for n in names:
            built[n] = shard
    index = {"metadata": {"total_size": 1}, "weight_map": built if weight_map is None else weight_map}
    with open(os.path.join(str(directory), sh.INDEX_FILENAME), "w") as handle:
        json.dump(index, handle)
    return str(directory)


SHARDS = {"model-00001-of-00002.safetensors": ["fc.weight", "norm.weight"],
          "model-00002-of-00002.safetensors": ["layers.0.mlp.up_proj.weight"]}


def test_sharded_directory_reads_every_shard(tmp_path):
    directory = _write_sharded(tmp_path / "ck", SHARDS)
    merged = read_checkpoint(directory)
    expected = {}
    for shard in SHARDS:
        tensors, _meta = library_view(os.path.join(directory, shard))
        expected.update(tensors)
    assert our_view(merged)[0] == expected
    assert merged[METADATA_KEY] == {"format": "pt", "shard": "model-00001-of-00002.safetensors"}


def test_directory_with_one_file(tmp_path):
    path = fx.write_tiny_drafter(tmp_path / "model.safetensors")
    assert read_checkpoint(str(tmp_path)) == read_header(path)


@pytest.mark.parametrize("files", [[], ["a.safetensors", "b.safetensors"]])
def test_directory_without_index_needs_exactly_one_file(tmp_path, files):
    for name in files:
        save_file({"x": np.zeros((1,), np.float32)}, str(tmp_path / name))
    with pytest.raises(SafetensorsHeaderError, match="exactly one"):
        read_checkpoint(str(tmp_path))


def _break_index(tmp_path, mutate):
    directory = _write_sharded(tmp_path / "ck", SHARDS)
    index_path = os.path.join(directory, sh.INDEX_FILENAME)
    index = json.load(open(index_path))
    text = mutate(index, directory)
    with open(index_path, "w") as handle:
        handle.write(text if isinstance(text, str) else json.dumps(index))
    return directory


def _missing_shard(index, directory):
    os.remove(os.path.join(directory, "model-00002-of-00002.safetensors"))


def _tensor_not_mapped(index, directory):
    del index["weight_map"]["norm.weight"]


def _mapped_to_other(index, directory):
    index["weight_map"]["norm.weight"] = "model-00002-of-00002.safetensors"


def _listed_not_present(index, directory):
    index["weight_map"]["ghost.weight"] = "model-00001-of-00002.safetensors"


def _escape(index, directory):
    index["weight_map"]["fc.weight"] = "../elsewhere.safetensors"


def _no_map(index, directory):
    del index["weight_map"]


@pytest.mark.parametrize("mutate,expected", [
    (_missing_shard, "which is missing"),
    (_tensor_not_mapped, "model.safetensors.index.json does not list it"),
    (_mapped_to_other, "tensor 'norm.weight' is in model-00001-of-00002.safetensors, but"),
    (_listed_not_present, "lists 1 tensor(s) that no shard holds, e.g. 'ghost.weight'"),
    (_escape, "is not a file name inside"),
    (_no_map, "non-empty \"weight_map\""),
    (lambda index, directory: "{not json", "not valid JSON"),
])
def test_sharded_errors(tmp_path, mutate, expected):
    directory = _break_index(tmp_path, mutate)
    with pytest.raises(SafetensorsHeaderError) as err:
        read_checkpoint(directory)
    assert expected in str(err.value)


def test_tensor_in_two_shards(tmp_path):
    shards = {"a.safetensors": ["x"], "b.safetensors": ["x", "y"]}
    directory = _write_sharded(tmp_path / "ck", shards, weight_map={"x": "a.safetensors", "y": "b.safetensors"})
    with pytest.raises(SafetensorsHeaderError, match="tensor 'x' is in both a.safetensors and b.safetensors"):
        read_checkpoint(directory)


def test_corrupt_shard_is_named(tmp_path):
    directory = _write_sharded(tmp_path / "ck", SHARDS)
    shard = os.path.join(directory, "model-00002-of-00002.safetensors")
    with open(shard, "r+b") as handle:
        handle.write(struct.pack("<Q", 0))
    with pytest.raises(SafetensorsHeaderError) as err:
        read_checkpoint(directory)
    assert shard in str(err.value) and "header length is 0" in str(err.value)


# ---------------------------------------------- hostile and random input ---

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


_hostile_names = st.text(min_size=1, max_size=10).filter(lambda name: name != METADATA_KEY)
_specs = st.dictionaries(
    _hostile_names, st.tuples(st.sampled_from(sorted(DTYPE_BITS)), st.lists(st.integers(0, 4), max_size=3)), max_size=6)


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
