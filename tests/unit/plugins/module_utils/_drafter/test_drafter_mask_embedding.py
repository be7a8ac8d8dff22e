# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_drafter/mask_embedding.py: a drafter's mask_embedding.pt read without torch.

The files are written here in torch.save's own layout (a zip holding <name>/data.pkl, a protocol-2 pickle whose
opcodes are those torch 2.13 emits for a dict {"mask_token_id": int, "embedding": tensor} and for a bare tensor,
checked against torch.save's output opcode by opcode when this was written), plus hostile variants: the reader
must follow only those opcodes, never import or call anything, and fail with MaskEmbeddingError on anything else.
"""

import io
import os
import pickle
import struct
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.mask_embedding import (
    MaskEmbeddingError,
    read_mask_embedding_file,
)

STORAGE_WIDTH = {"BFloat16Storage": 2, "HalfStorage": 2, "FloatStorage": 4}


def _unicode(text):
    raw = text.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _int(value):
    if 0 <= value < 256:
        return b"K" + struct.pack("<B", value)
    return b"J" + struct.pack("<i", value)


def _tuple(values):
    body = b"".join(_int(v) for v in values)
    return {0: b")", 1: body + b"\x85", 2: body + b"\x86", 3: body + b"\x87"}.get(len(values), b"(" + body + b"t")


def tensor_pickle(shape, storage="BFloat16Storage", numel=None):
    """torch.save's opcodes for a contiguous tensor (torch._utils._rebuild_tensor_v2 of a persistent storage)."""
    numel = numel if numel is not None else _numel(shape)
    strides, step = [], 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + _unicode("storage") + b"ctorch\n" + storage.encode()
            + b"\n" + _unicode("0") + _unicode("cpu") + _int(numel) + b"tQ" + _int(0) + _tuple(shape)
            + _tuple(strides) + b"\x89" + b"ccollections\nOrderedDict\n)R" + b"tR")


def dict_pickle(mask, shape, storage="BFloat16Storage"):
    items = b""
    if mask is not None:
        items += _unicode("mask_token_id") + _int(mask)
    items += _unicode("embedding") + tensor_pickle(shape, storage)
    return b"\x80\x02}(" + items + b"u."


def _numel(shape):
    out = 1
    for dim in shape:
        out *= dim
    return out


def write_pt(path, pickled, numel=8, storage="BFloat16Storage", name="mask_embedding", data_bytes=None):
    """A zip in torch.save's layout around ``pickled`` (data.pkl) and one storage of ``numel`` values."""
    with zipfile.ZipFile(str(path), "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("%s/data.pkl" % name, pickled)
        archive.writestr("%s/byteorder" % name, "little")
        archive.writestr("%s/data/0" % name, b"\0" * (numel * STORAGE_WIDTH[storage]) if data_bytes is None
                         else data_bytes)
        archive.writestr("%s/version" % name, "3\n")
    return str(path)


def test_dict_with_mask_token(tmp_path):
    path = write_pt(tmp_path / "mask_embedding.pt", dict_pickle(151669, [8]))
    assert read_mask_embedding_file(path) == {"path": path, "mask_token_id": 151669, "shape": [8], "numel": 8,
                                              "storage": "BFloat16Storage", "layout": "dict"}


def test_bare_tensor_and_dict_without_token(tmp_path):
    bare = write_pt(tmp_path / "a.pt", b"\x80\x02" + tensor_pickle([1, 8], "FloatStorage") + b".",
                    storage="FloatStorage")
    found = read_mask_embedding_file(bare)
    assert (found["mask_token_id"], found["shape"], found["numel"], found["layout"]) == (None, [1, 8], 8, "tensor")
    untagged = write_pt(tmp_path / "b.pt", dict_pickle(None, [8], "HalfStorage"), storage="HalfStorage")
    assert read_mask_embedding_file(untagged)["mask_token_id"] is None


def test_matches_torch_save_output():
    # The opcodes torch 2.13.0 wrote for torch.save({"mask_token_id": 151669, "embedding": bf16 arange(8)}),
    # without its BINPUT memo writes (which the reader follows too: see test_memo_references).
    ops = dict_pickle(151669, [8])
    assert ops.startswith(b"\x80\x02}(X\r\x00\x00\x00mask_token_idJ") and ops.endswith(b"tRu.")


def test_memo_references(tmp_path):
    # BINPUT / BINGET as torch writes them: the storage class reused through the memo.
    pickled = (b"\x80\x02}q\x00(X\x09\x00\x00\x00embeddingq\x01ctorch._utils\n_rebuild_tensor_v2\nq\x02((X\x07\x00"
               b"\x00\x00storageq\x03ctorch\nBFloat16Storage\nq\x04X\x01\x00\x00\x000q\x05X\x03\x00\x00\x00cpuq\x06"
               b"K\x08tq\x07QK\x00K\x08\x85q\x08K\x01\x85q\x09\x89ccollections\nOrderedDict\nq\x0a)Rq\x0btq\x0cR"
               b"q\x0dh\x01h\x01\x86q\x0e0u.")
    with pytest.raises(MaskEmbeddingError, match="opcode POP"):
        read_mask_embedding_file(write_pt(tmp_path / "m.pt", pickled))
    pickled = pickled.replace(b"h\x01h\x01\x86q\x0e0", b"")
    assert read_mask_embedding_file(write_pt(tmp_path / "n.pt", pickled))["numel"] == 8


BAD = [
    ("not-zip", b"\x80\x02K\x01.", "not a zip written by torch.save"),
    ("os-system", b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.", "only torch._utils._rebuild_tensor_v2 is read"),
    ("list", b"\x80\x02]q\x00.", "pickle opcode EMPTY_LIST"),
    ("int", b"\x80\x02K\x05.", "holds a int, not a tensor"),
    ("dict-no-embedding", b"\x80\x02}(X\x01\x00\x00\x00aK\x01u.", "a dict without 'embedding'"),
    ("no-stop", b"\x80\x02}", "not a readable pickle"),
    ("two-values", b"\x80\x02K\x01K\x02.", "ends with 2 values"),
    ("setitems-no-mark", b"\x80\x02}u.", "needs a MARK"),
    ("bad-persid", b"\x80\x02X\x01\x00\x00\x00aQ.", "a persistent id that is not a torch storage"),
    ("bad-get", b"\x80\x02h\x07.", "a memo reference 7 to nothing"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_refused(tmp_path, case):
    _id, pickled, message = case
    path = tmp_path / "mask_embedding.pt"
    if _id == "not-zip":
        path.write_bytes(pickled)
    else:
        write_pt(path, pickled)
    with pytest.raises(MaskEmbeddingError) as err:
        read_mask_embedding_file(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_mask_token_not_int_and_storage_short(tmp_path):
    pickled = dict_pickle(5, [8]).replace(_int(5), b"X\x01\x00\x00\x005")
    with pytest.raises(MaskEmbeddingError, match="mask_token_id is '5', not an integer"):
        read_mask_embedding_file(write_pt(tmp_path / "a.pt", pickled))
    with pytest.raises(MaskEmbeddingError, match="the tensor's storage mask_embedding/data/0 is 4 bytes"):
        read_mask_embedding_file(write_pt(tmp_path / "b.pt", dict_pickle(5, [8]), data_bytes=b"\0" * 4))


def test_not_a_regular_file_and_two_pickles(tmp_path):
    with pytest.raises(MaskEmbeddingError, match="not a regular file"):
        read_mask_embedding_file(str(tmp_path))
    path = tmp_path / "two.pt"
    with zipfile.ZipFile(str(path), "w") as archive:
        archive.writestr("a/data.pkl", dict_pickle(5, [8]))
        archive.writestr("b/data.pkl", dict_pickle(5, [8]))
    with pytest.raises(MaskEmbeddingError, match="2 <name>/data.pkl members"):
        read_mask_embedding_file(str(path))


def test_legacy_pickle_file_is_named(tmp_path):
    path = tmp_path / "legacy.pt"
    path.write_bytes(pickle.dumps({"mask_token_id": 5}, protocol=2))
    with pytest.raises(MaskEmbeddingError, match="a legacy .non-zip. torch file cannot be read without torch"):
        read_mask_embedding_file(str(path))


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300), cut=st.integers(0, 400), mask=st.integers(0, 2 ** 31 - 1),
       shape=st.lists(st.integers(0, 9), max_size=3))
def test_property_never_crashes(tmp_path_factory, data, cut, mask, shape):
    # Any data.pkl - random bytes, or a real one cut short or with bytes flipped - is read or refused cleanly.
    base = tmp_path_factory.mktemp("pt")
    real = dict_pickle(mask, shape)
    mutated = real[:cut] + data[:8] + real[cut + 8:] if data else real[:cut]
    for index, pickled in enumerate((data, mutated)):
        path = write_pt(base / ("m%d.pt" % index), pickled, numel=max(_numel(shape), 1))
        try:
            found = read_mask_embedding_file(path)
        except MaskEmbeddingError as exc:
            assert path in str(exc)
        else:
            assert isinstance(found["numel"], int) and found["layout"] in ("dict", "tensor")
    whole = write_pt(base / "whole.pt", real, numel=_numel(shape))
    found = read_mask_embedding_file(whole)
    assert (found["mask_token_id"], found["shape"], found["numel"]) == (mask, shape, _numel(shape))


def test_property_random_zip_bytes(tmp_path):
    # A file that is not a zip at all, or a truncated one, is named as such.
    good = io.BytesIO()
    with zipfile.ZipFile(good, "w") as archive:
        archive.writestr("m/data.pkl", dict_pickle(5, [8]))
    raw = good.getvalue()
    for cut in range(0, len(raw), 7):
        path = tmp_path / ("t%d.pt" % cut)
        path.write_bytes(raw[:cut])
        with pytest.raises(MaskEmbeddingError):
            read_mask_embedding_file(str(path))
    assert os.path.getsize(str(tmp_path / "t0.pt")) == 0
