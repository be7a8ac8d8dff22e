# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Read safetensors headers with the standard library only, never tensor data.
#
# The managed node may have no ``safetensors`` package, and a drafter or target
# checkpoint may be gigabytes: this reads the 8-byte little-endian header length,
# then exactly that many bytes of JSON, and validates the header as strictly as
# the ``safetensors`` library does when it loads the file (so a file accepted here
# is one vLLM can load), with every failure a :class:`SafetensorsHeaderError`
# that names the file.
#
# Public API:
#
# * ``read_header(path)`` -> ``{name: TensorInfo(dtype, shape), ..., "__metadata__": {str: str}}``
#   for one ``.safetensors`` file;
# * ``read_checkpoint(path)`` -> the same merged over a checkpoint: a file, a
#   directory with ``model.safetensors.index.json`` (read shard by shard), or a
#   directory holding exactly one ``*.safetensors``;
# * ``tensor_names(header)`` -> sorted tensor names (without ``__metadata__``);
# * ``json_nesting_depth(text, limit)`` -> how deeply JSON text nests, from a scan
#   of its brackets, so a caller can refuse deep nesting before ``json`` recurses.

import collections
import json
import os
import struct

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import (
    JsonFileError, NotRegularFile, json_depth, load_json, open_regular)


MAX_HEADER_SIZE = 100 * 1000 * 1000  # the safetensors library's own limit (100 MB)
# A header is an object of tensor entries (objects holding a shape list) plus
# __metadata__ (an object of strings): 3 levels; one more tolerates an extra
# key holding a list. Deeper is refused before json parses it (its recursion
# would end in RecursionError, and nothing valid needs it).
MAX_HEADER_DEPTH = 4
MAX_INDEX_SIZE = 64 * 1024 * 1024  # model.safetensors.index.json: about 100 bytes per tensor
MAX_INDEX_DEPTH = 8  # {"metadata": {...}, "weight_map": {name: shard}}, with room for extra metadata
INDEX_FILENAME = "model.safetensors.index.json"
# How an index that load_json refuses is named (its reason -> the message, with the path and the refusal's detail).
_INDEX_REFUSALS = {
    "not_regular": "%s: cannot read: not a regular file%.0s",
    "too_large": "%s: larger than the %d-byte limit for an index",
    "not_utf8": "%s: not UTF-8: %s",
    "too_deep": "%s: JSON nests deeper than %d levels; expected an object with a \"weight_map\" of tensor name -> "
                "shard file",
    "not_json": "%s: not valid JSON: %s",
}
METADATA_KEY = "__metadata__"

# Bits per element of every dtype the safetensors format defines (safetensors
# 0.8.0's Dtype enum, 22 variants). F4 and F6 are sub-byte: a tensor's size is
# numel * bits / 8 and must come out a whole number of bytes.
DTYPE_BITS = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}

TensorInfo = collections.namedtuple("TensorInfo", ["dtype", "shape"])


class SafetensorsHeaderError(ValueError):
    """A safetensors header (or checkpoint layout) that cannot be trusted."""


def json_nesting_depth(text, limit=None):
    """How many objects/arrays deep JSON ``text`` nests, from a scan of its brackets outside strings.

    The scan is host_files.json_depth (the collection's one home of the JSON depth bound): not
    recursive and linear in the text, whatever it holds (an unterminated string such as
    '"\\"\\"\\"...' included). With ``limit``, the result is capped at ``limit + 1`` (more than the
    limit, as before). On invalid JSON the count after the first error may be off, but json stops
    at that error too, so a text whose count is within a limit never makes json recurse deeper than it.
    """
    depth = json_depth(text)
    if limit is not None and depth > limit:
        return limit + 1
    return depth


def _check_unicode(path, what, text):
    # json accepts an escaped lone surrogate ("\ud800"); the library and UTF-8 do not.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SafetensorsHeaderError("%s: %s %r is not valid Unicode (it holds a lone surrogate escape)"
                                     % (path, what, text))


def _is_int(value):
    # JSON true/false decode to bool, a subclass of int: not a dimension.
    return isinstance(value, int) and not isinstance(value, bool)


def _reject_duplicates(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise SafetensorsHeaderError("duplicate key %r" % key)
        seen[key] = value
    return seen


def tensor_nbytes(dtype, shape):
    """Bytes a tensor of ``dtype`` and ``shape`` occupies; ValueError if not whole bytes."""
    numel = 1
    for dim in shape:
        numel *= dim
    bits = numel * DTYPE_BITS[dtype]
    if bits % 8:
        raise ValueError("%d elements of %s are %d bits, not a whole number of bytes" % (numel, dtype, bits))
    return bits // 8


def _validate_entry(path, name, entry):
    where = "%s: tensor %r" % (path, name)
    if not isinstance(entry, dict):
        raise SafetensorsHeaderError("%s: expected an object with dtype, shape, data_offsets, got %s" % (where, type(entry).__name__))
    for key in ("dtype", "shape", "data_offsets"):
        if key not in entry:
            raise SafetensorsHeaderError("%s: missing %r" % (where, key))
    dtype = entry["dtype"]
    if not isinstance(dtype, str):
        raise SafetensorsHeaderError("%s: dtype must be a string such as \"BF16\", got %s %r"
                                     % (where, type(dtype).__name__, dtype))
    if dtype not in DTYPE_BITS:
        raise SafetensorsHeaderError(
            "%s: unknown dtype %r (known: %s)" % (where, dtype, ", ".join(sorted(DTYPE_BITS))))
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise SafetensorsHeaderError("%s: shape must be a list of non-negative integers, got %r" % (where, shape))
    offsets = entry["data_offsets"]
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) and o >= 0 for o in offsets)
            or offsets[0] > offsets[1]):
        raise SafetensorsHeaderError(
            "%s: data_offsets must be [begin, end] with 0 <= begin <= end, got %r" % (where, offsets))
    try:
        nbytes = tensor_nbytes(dtype, shape)
    except ValueError as exc:
        raise SafetensorsHeaderError("%s: shape %r: %s" % (where, shape, exc))
    if offsets[1] - offsets[0] != nbytes:
        raise SafetensorsHeaderError(
            "%s: data_offsets %r span %d bytes, but shape %r of %s needs %d bytes"
            % (where, offsets, offsets[1] - offsets[0], shape, dtype, nbytes))
    return TensorInfo(dtype, tuple(shape)), (offsets[0], offsets[1])


def _open_regular(path):
    # Opening a FIFO blocks and a device never ends: only plain files are read. open_regular opens
    # with O_NONBLOCK and checks what it opened, so a FIFO swapped in after a stat cannot block either.
    try:
        return open_regular(path)
    except NotRegularFile:
        raise SafetensorsHeaderError("%s: cannot read: not a regular file" % path)
    except (IOError, OSError) as exc:
        raise SafetensorsHeaderError("%s: cannot read: %s" % (path, exc))


def _read_raw(path):
    """Return (header bytes, size of the data region) reading only the header."""
    handle = _open_regular(path)
    try:
        with handle:
            file_size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise SafetensorsHeaderError(
                    "%s: file is %d bytes, shorter than the 8-byte header length" % (path, file_size))
            (length,) = struct.unpack("<Q", prefix)
            if length == 0:
                raise SafetensorsHeaderError("%s: header length is 0" % path)
            if length > MAX_HEADER_SIZE:
                raise SafetensorsHeaderError(
                    "%s: header length %d is over the %d-byte limit (not a safetensors file?)"
                    % (path, length, MAX_HEADER_SIZE))
            if 8 + length > file_size:
                raise SafetensorsHeaderError(
                    "%s: file is %d bytes, shorter than 8 + header length %d" % (path, file_size, length))
            raw = handle.read(length)
    except (IOError, OSError) as exc:
        raise SafetensorsHeaderError("%s: cannot read: %s" % (path, exc))
    if len(raw) != length:
        raise SafetensorsHeaderError("%s: file shrank while reading its header" % path)
    return raw, file_size - 8 - length


def read_header(path):
    """Read and validate the header of one ``.safetensors`` file.

    Returns ``{tensor name: TensorInfo(dtype, shape)}`` plus the key
    ``"__metadata__"`` (a dict of strings, empty when the file has none).
    Shapes are tuples of ints. Raises SafetensorsHeaderError naming ``path``.
    """
    path = os.fspath(path)
    raw, data_size = _read_raw(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorsHeaderError("%s: header is not UTF-8: %s" % (path, exc))
    if json_nesting_depth(text, MAX_HEADER_DEPTH) > MAX_HEADER_DEPTH:
        raise SafetensorsHeaderError(
            "%s: header JSON nests deeper than %d levels; a safetensors header is an object of tensor entries "
            "(dtype, shape, data_offsets) and __metadata__ strings" % (path, MAX_HEADER_DEPTH))
    try:
        parsed = json.loads(text, object_pairs_hook=_reject_duplicates)
    except SafetensorsHeaderError as exc:
        raise SafetensorsHeaderError("%s: header JSON has a %s" % (path, exc))
    except ValueError as exc:
        raise SafetensorsHeaderError("%s: header is not valid JSON: %s" % (path, exc))
    if not isinstance(parsed, dict):
        raise SafetensorsHeaderError("%s: header is not a JSON object but %s" % (path, type(parsed).__name__))

    metadata = parsed.pop(METADATA_KEY, None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsHeaderError("%s: __metadata__ must be an object of strings, got %r" % (path, metadata))
    for key, value in metadata.items():
        _check_unicode(path, "__metadata__ key", key)
        _check_unicode(path, "__metadata__[%r]" % key, value)

    result = {}
    spans = []
    for name, entry in parsed.items():
        _check_unicode(path, "tensor name", name)
        info, span = _validate_entry(path, name, entry)
        result[name] = info
        spans.append((span, name))

    # The library requires the tensors to tile the data region exactly: in
    # offset order, each starts where the previous ended, and the last ends at
    # the end of the file. Check in the order a person can act on.
    spans.sort()
    for (begin, end), name in spans:
        if end > data_size:
            raise SafetensorsHeaderError(
                "%s: tensor %r data_offsets [%d, %d] run past the end of the data region (%d bytes)"
                % (path, name, begin, end, data_size))
    position, previous = 0, None
    for (begin, end), name in spans:
        if begin < position:
            raise SafetensorsHeaderError(
                "%s: tensor %r data_offsets [%d, %d] overlap tensor %r (which ends at %d)"
                % (path, name, begin, end, previous, position))
        if begin > position:
            raise SafetensorsHeaderError(
                "%s: gap of %d bytes before tensor %r (data_offsets [%d, %d]); safetensors requires contiguous tensors"
                % (path, begin - position, name, begin, end))
        position, previous = end, name
    if position != data_size:
        raise SafetensorsHeaderError(
            "%s: %d bytes after the last tensor are not covered by any tensor" % (path, data_size - position))

    result[METADATA_KEY] = metadata
    return result


def tensor_names(header):
    """Sorted tensor names of a header dict (``__metadata__`` left out)."""
    return sorted(name for name in header if name != METADATA_KEY)


def _read_index(directory, index_path):
    try:
        index = load_json(index_path, MAX_INDEX_SIZE, MAX_INDEX_DEPTH, constants=True)[1]
    except JsonFileError as exc:
        raise SafetensorsHeaderError(_INDEX_REFUSALS[exc.reason] % (index_path, exc.detail))
    except (IOError, OSError) as exc:
        raise SafetensorsHeaderError("%s: cannot read: %s" % (index_path, exc))
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise SafetensorsHeaderError("%s: expected an object with a non-empty \"weight_map\"" % index_path)
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or os.path.isabs(shard) or os.path.normpath(shard).startswith(".."):
            raise SafetensorsHeaderError(
                "%s: weight_map[%r] = %r is not a file name inside %s" % (index_path, name, shard, directory))
    return weight_map


def read_checkpoint(path):
    """Read every tensor header of a checkpoint, headers only.

    ``path`` is a ``.safetensors`` file, a directory with
    ``model.safetensors.index.json`` (each shard's header is read and checked
    against the index), or a directory holding exactly one ``*.safetensors``.
    Returns the same shape as :func:`read_header`; for sharded checkpoints
    ``__metadata__`` is the shards' metadata merged (first shard wins a key).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SafetensorsHeaderError("%s: no such file or directory" % path)
    if not os.path.isdir(path):
        return read_header(path)

    index_path = os.path.join(path, INDEX_FILENAME)
    if not os.path.exists(index_path):
        try:
            candidates = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        except (IOError, OSError) as exc:
            raise SafetensorsHeaderError("%s: cannot list: %s" % (path, exc))
        if len(candidates) != 1:
            raise SafetensorsHeaderError(
                "%s: expected %s or exactly one *.safetensors file, found %s"
                % (path, INDEX_FILENAME, ", ".join(candidates) if candidates else "none"))
        return read_header(os.path.join(path, candidates[0]))

    weight_map = _read_index(path, index_path)
    merged, metadata, owner = {}, {}, {}
    for shard in sorted(set(weight_map.values())):
        shard_path = os.path.join(path, shard)
        if not os.path.isfile(shard_path):
            raise SafetensorsHeaderError("%s: names shard %s, which is missing" % (index_path, shard_path))
        header = read_header(shard_path)
        for key, value in header.pop(METADATA_KEY).items():
            metadata.setdefault(key, value)
        for name, info in header.items():
            if name in merged:
                raise SafetensorsHeaderError(
                    "%s: tensor %r is in both %s and %s" % (path, name, owner[name], shard))
            if name not in weight_map:
                raise SafetensorsHeaderError(
                    "%s: tensor %r is in %s, but %s does not list it" % (path, name, shard, INDEX_FILENAME))
            if weight_map[name] != shard:
                raise SafetensorsHeaderError(
                    "%s: tensor %r is in %s, but %s maps it to %r"
                    % (path, name, shard, INDEX_FILENAME, weight_map[name]))
            merged[name] = info
            owner[name] = shard
    missing = sorted(set(weight_map) - set(merged))
    if missing:
        raise SafetensorsHeaderError(
            "%s: %s lists %d tensor(s) that no shard holds, e.g. %r (in %s)"
            % (path, INDEX_FILENAME, len(missing), missing[0], weight_map[missing[0]]))
    merged[METADATA_KEY] = metadata
    return merged
