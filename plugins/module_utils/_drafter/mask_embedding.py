# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# A drafter's mask_embedding.pt, read without torch (the managed node has none), and checked against the config.
# vLLM loads it (the versions table's mask_embedding column) from the drafter's directory (qwen3_dflash.py
# DFlashQwen3ForCausalLM._read_mask_embedding): torch.load(..., weights_only=True) of either a tensor or a dict
# {"mask_token_id": int, "embedding": tensor}; a dict whose mask_token_id differs from dflash_config.mask_token_id is
# a ValueError at load, and the tensor, flattened, replaces the drafter's embedding of the mask token (hidden_size
# values). torch.save writes a zip holding <name>/data.pkl (a protocol-2 pickle) and <name>/data/<key> (the
# storages). This reads data.pkl's opcodes with pickletools.genops and follows the few that torch.save emits on a
# small stack of plain values: nothing is imported or called, and anything else is refused.
#
# Public API: read_mask_embedding_file(path) -> {"path", "mask_token_id" (int or None), "shape", "numel", "storage",
# "layout" ("dict" | "tensor")}; every failure a MaskEmbeddingError naming the file.
# check_mask_embedding(found, mask, mask_where, hidden, vllm_version, record, warnings): what was read against the
# config's mask token, the drafter's hidden size and the vLLM that will load it (a DflashConfigError).

import os
import pickletools
import struct
import zipfile

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import NotRegularFile, open_regular
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import served
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.checks import DflashConfigError, fmt_shape

MASK_EMBEDDING_FILENAME = "mask_embedding.pt"
MAX_FILE_BYTES = 64 * 1024 * 1024   # one hidden_size vector (16384 x 4 bytes) plus the zip's few KiB
MAX_PICKLE_BYTES = 64 * 1024        # torch.save's data.pkl of a dict and one tensor is ~200 bytes
MAX_OPS = 10000
STORAGE_BYTES = {"BFloat16Storage": 2, "HalfStorage": 2, "FloatStorage": 4, "DoubleStorage": 8}
_REBUILD = ("torch._utils", "_rebuild_tensor_v2")
_ORDERED_DICT = ("collections", "OrderedDict")


class MaskEmbeddingError(ValueError):
    """A mask_embedding.pt this module cannot read as torch.save's tensor or {mask_token_id, embedding} dict."""


class _Global(object):
    def __init__(self, module, name):
        self.module, self.name = module, name


class _Storage(object):
    def __init__(self, kind, key, numel):
        self.kind, self.key, self.numel = kind, key, numel


class _Tensor(object):
    def __init__(self, storage, offset, shape):
        self.storage, self.offset, self.shape = storage, offset, shape


class _Empty(object):
    """collections.OrderedDict() (torch's backward hooks): nothing in it matters here."""


_MARK = object()


def _persistent(pid):
    # ('storage', <torch.XStorage>, key, location, numel), as torch.save writes a tensor's storage.
    if (not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage" or not isinstance(pid[1], _Global)
            or pid[1].module != "torch" or pid[1].name not in STORAGE_BYTES or not isinstance(pid[2], str)
            or not isinstance(pid[4], int) or pid[4] < 0):
        raise MaskEmbeddingError("a persistent id that is not a torch storage: %r" % (pid,))
    return _Storage(pid[1].name, pid[2], pid[4])


def _reduce(func, args):
    if not isinstance(func, _Global) or not isinstance(args, tuple):
        raise MaskEmbeddingError("a call of something other than a torch tensor rebuild")
    if (func.module, func.name) == _ORDERED_DICT and args == ():
        return _Empty()
    if (func.module, func.name) != _REBUILD or len(args) < 4:
        raise MaskEmbeddingError("a call of %s.%s: only torch._utils._rebuild_tensor_v2 is read"
                                 % (func.module, func.name))
    storage, offset, shape = args[0], args[1], args[2]
    if (not isinstance(storage, _Storage) or not isinstance(offset, int) or not isinstance(shape, tuple)
            or not all(isinstance(d, int) and d >= 0 for d in shape)):
        raise MaskEmbeddingError("a tensor rebuild with arguments other than (storage, offset, shape, ...)")
    return _Tensor(storage, offset, list(shape))


def _pop_mark(stack):
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is _MARK:
            items = stack[index + 1:]
            del stack[index:]
            return items
    raise MaskEmbeddingError("an opcode needs a MARK that is not there")


def _pop(stack, count=1):
    if len(stack) < count or any(item is _MARK for item in stack[len(stack) - count:]):
        raise MaskEmbeddingError("the pickle's stack runs out")
    items = stack[len(stack) - count:]
    del stack[len(stack) - count:]
    return items


def _set_items(target, items):
    if not isinstance(target, dict) or len(items) % 2:
        raise MaskEmbeddingError("SETITEMS on something other than a dict")
    for key, value in zip(items[0::2], items[1::2]):
        if not isinstance(key, (str, int)):
            raise MaskEmbeddingError("a dict key that is not a string or an integer")
        target[key] = value


_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_LITERALS = ("BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8")
_TUPLES = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


def _step(name, arg, stack, memo):
    """One opcode on the stack; the value at STOP is returned by _evaluate."""
    if name in ("PROTO", "FRAME"):
        return
    if name in _CONSTANTS:
        stack.append(_CONSTANTS[name])
    elif name in _LITERALS:
        stack.append(arg)
    elif name == "EMPTY_DICT":
        stack.append({})
    elif name == "EMPTY_TUPLE":
        stack.append(())
    elif name == "MARK":
        stack.append(_MARK)
    elif name == "TUPLE":
        stack.append(tuple(_pop_mark(stack)))
    elif name in _TUPLES:
        stack.append(tuple(_pop(stack, _TUPLES[name])))
    elif name == "GLOBAL":
        module, _sep, attr = str(arg).partition(" ")
        stack.append(_Global(module, attr))
    elif name in ("BINPUT", "LONG_BINPUT"):
        memo[arg] = _pop(stack)[0]
        stack.append(memo[arg])
    elif name == "MEMOIZE":
        memo[len(memo)] = _pop(stack)[0]
        stack.append(memo[len(memo) - 1])
    elif name in ("BINGET", "LONG_BINGET"):
        if arg not in memo:
            raise MaskEmbeddingError("a memo reference %r to nothing" % (arg,))
        stack.append(memo[arg])
    elif name == "BINPERSID":
        stack.append(_persistent(_pop(stack)[0]))
    elif name == "REDUCE":
        func, args = _pop(stack, 2)
        stack.append(_reduce(func, args))
    elif name == "SETITEM":
        key, value = _pop(stack, 2)
        _set_items(stack[-1] if stack else None, [key, value])
    elif name == "SETITEMS":
        items = _pop_mark(stack)
        _set_items(stack[-1] if stack else None, items)
    else:
        raise MaskEmbeddingError("pickle opcode %s, which torch.save does not write for a tensor or a dict" % name)


def _evaluate(data):
    """The value data.pkl describes, as _Tensor / dict / plain values; MaskEmbeddingError for anything else."""
    stack, memo = [], {}
    try:
        for count, (opcode, arg, _pos) in enumerate(pickletools.genops(data)):
            if count > MAX_OPS:
                raise MaskEmbeddingError("more than %d pickle opcodes" % MAX_OPS)
            if opcode.name == "STOP":
                if len(stack) != 1 or stack[0] is _MARK:
                    raise MaskEmbeddingError("the pickle ends with %d values on its stack, not one" % len(stack))
                return stack[0]
            _step(opcode.name, arg, stack, memo)
    except MaskEmbeddingError:
        raise
    except (ValueError, struct.error, TypeError, IndexError, KeyError, OverflowError) as exc:
        raise MaskEmbeddingError("not a readable pickle: %s" % exc)
    raise MaskEmbeddingError("the pickle has no STOP")


def _read_zip(path):
    """(data.pkl bytes, {member name: size}, the archive's prefix) of a torch.save zip."""
    try:
        handle = open_regular(path)
    except NotRegularFile:
        raise MaskEmbeddingError("%s: not a regular file" % path)
    except (IOError, OSError) as exc:
        raise MaskEmbeddingError("%s: cannot read: %s" % (path, getattr(exc, "strerror", None) or exc))
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise MaskEmbeddingError("%s: %d bytes, more than the %d a mask embedding needs" % (path, size,
                                                                                                MAX_FILE_BYTES))
        try:
            archive = zipfile.ZipFile(handle)
            infos = archive.infolist()
            pickles = [i for i in infos if i.filename.endswith("/data.pkl") and i.filename.count("/") == 1]
            if len(pickles) != 1:
                raise MaskEmbeddingError("%s: %d <name>/data.pkl members, expected one (torch.save's zip format)"
                                         % (path, len(pickles)))
            if pickles[0].file_size > MAX_PICKLE_BYTES:
                raise MaskEmbeddingError("%s: data.pkl is %d bytes, more than %d" % (path, pickles[0].file_size,
                                                                                     MAX_PICKLE_BYTES))
            data = archive.read(pickles[0])
        except (zipfile.BadZipfile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
                ValueError, struct.error, OSError) as exc:
            if isinstance(exc, MaskEmbeddingError):
                raise
            raise MaskEmbeddingError("%s: not a zip written by torch.save (%s); a legacy (non-zip) torch file "
                                     "cannot be read without torch" % (path, exc))
    prefix = pickles[0].filename[:-len("data.pkl")]
    return data, dict((i.filename, i.file_size) for i in infos), prefix


def read_mask_embedding_file(path):
    """What vLLM would load from ``path`` (a mask_embedding.pt), checked as far as the file tells without torch."""
    data, members, prefix = _read_zip(path)
    try:
        value = _evaluate(data)
    except MaskEmbeddingError as exc:
        raise MaskEmbeddingError("%s: %s" % (path, exc))
    layout, mask = "tensor", None
    if isinstance(value, dict):
        layout = "dict"
        if "embedding" not in value:
            raise MaskEmbeddingError("%s holds a dict without 'embedding' (keys %s): vLLM reads state['embedding']"
                                     % (path, ", ".join(sorted(repr(k) for k in value))))
        mask = value.get("mask_token_id")
        if mask is not None and (not isinstance(mask, int) or isinstance(mask, bool)):
            raise MaskEmbeddingError("%s: mask_token_id is %r, not an integer" % (path, mask))
        value = value["embedding"]
    if not isinstance(value, _Tensor):
        raise MaskEmbeddingError("%s holds a %s, not a tensor or a dict with 'embedding' (what vLLM loads)"
                                 % (path, type(value).__name__.lstrip("_")))
    numel = 1
    for dim in value.shape:
        numel *= dim
    storage = value.storage
    stored = members.get("%sdata/%s" % (prefix, storage.key))
    width = STORAGE_BYTES[storage.kind]
    if stored is None or stored < storage.numel * width or value.offset + numel > storage.numel:
        raise MaskEmbeddingError("%s: the tensor's storage %sdata/%s is %s, its %s need %d values of %d bytes"
                                 % (path, prefix, storage.key, "missing" if stored is None else "%d bytes" % stored,
                                    storage.kind, max(storage.numel, value.offset + numel), width))
    return {"path": path, "mask_token_id": mask, "shape": value.shape, "numel": numel, "storage": storage.kind,
            "layout": layout}


def check_mask_embedding(found, mask, mask_where, hidden, vllm_version, record, warnings):
    """mask_embedding.pt (mask_embedding.read_mask_embedding_file summary) against the config's mask token and H."""
    if found is None:
        return
    path = found["path"]
    if found["mask_token_id"] is not None and found["mask_token_id"] != mask:
        raise DflashConfigError(
            "%s says mask_token_id %d but the config's dflash_config.mask_token_id is %d (%s): vLLM refuses to load "
            "it ('mask_embedding.pt mask_token_id does not match dflash_config.mask_token_id'). The drafter was "
            "trained with mask token %d: set mask_token_id to it, or remove the file if it belongs to another drafter"
            % (path, found["mask_token_id"], mask, mask_where, found["mask_token_id"]))
    if found["numel"] != hidden:
        raise DflashConfigError(
            "%s holds a tensor of shape %s (%d values), but vLLM loads it as the drafter's mask embedding of "
            "hidden_size %d: it fails at load. Wrong file for this drafter?"
            % (path, fmt_shape(found["shape"]), found["numel"], hidden))
    first = served.first_serving("mask_embedding")
    if vllm_version is not None and not served.serves(vllm_version, "mask_embedding"):
        raise DflashConfigError(
            "%s: vLLM %s ignores mask_embedding.pt (read from %s, qwen3_dflash.py _read_mask_embedding), so the "
            "drafter would embed its mask slots with the target's row for token %d instead of its trained embedding, "
            "silently. Upgrade vLLM to >= %s" % (path, vllm_version, first, mask, first))
    checked = ["%d values = hidden_size" % hidden]
    if found["mask_token_id"] is None:
        warnings.append("%s does not name its mask token (%s): vLLM uses it for mask_token_id %d unchecked; the "
                        "file cannot tell whether that is the token it was trained for"
                        % (path, "a bare tensor" if found["layout"] == "tensor" else "no mask_token_id key", mask))
    else:
        checked.append("its mask_token_id %d = dflash_config.mask_token_id" % mask)
    if vllm_version is None:
        warnings.append("%s is loaded by vLLM >= %s only; the vLLM version was not given (vllm_version or venv)"
                        % (path, first))
    record("mask_embedding", {"path": path, "shape": found["shape"], "mask_token_id": found["mask_token_id"]},
           "%s read without torch (torch.save zip, data.pkl opcodes): %s" % (path, ", ".join(checked)))
