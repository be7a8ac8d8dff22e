# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Reading files on a host the way the roles' one-call state reads do (base, python_env, drafter, vllm_service).

One home for: content hashes, lstat as Ansible's stat/file see it (owner and group by name, octal mode), the one
bounded JSON file reader (load_json: a role's record, a model's config.json, a safetensors index, a dist-info's
direct_url.json), and a small text file read leniently. Read-only, stdlib only.

Every read here opens regular files only (open_regular): a FIFO where a record or a config.json should be
would block open() forever, a device never end. Each read is bounded in size, and JSON in nesting depth,
checked before json parses it (json recurses once per level: 100,000 levels is a RecursionError).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import grp
import hashlib
import itertools
import json
import operator
import os
import pwd
import re
import stat

MAX_JSON_SIZE = 16 << 20  # records and config.json files are kilobytes; a bigger file is not one
# Records nest 3 levels, model configs 4 or 5 (text_config, rope_scaling): 64 leaves room, and json's
# recursion stays far from Python's limit.
MAX_JSON_DEPTH = 64


class NotRegularFile(OSError):
    """The path is there but is no regular file (a FIFO, a device, a socket or a directory)."""


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path):
    """A binary file object of ``path``, a regular file; NotRegularFile naming what it is otherwise.

    stat first, so that a FIFO or a device is never opened (opening some devices does something), then
    open with O_NONBLOCK, so that a FIFO swapped in meanwhile cannot block open(), and fstat what was
    opened. Symbolic links are followed: a model's config.json in a Hugging Face snapshot is a link
    into its blobs, and a read through a link changes nothing. Other OSErrors (missing, unreadable)
    are raised as they are.
    """
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile("%s is %s, not a regular file" % (path, _kind(mode)))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile("%s is %s, not a regular file" % (path, _kind(mode)))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path, limit=1 << 20):
    """The text of a small file (the first ``limit`` bytes), or "" when it is missing, unreadable or not a
    regular file (a FIFO would block, a device never end; /proc files are regular)."""
    if not path:
        return ""
    try:
        with open_regular(path) as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except (IOError, OSError):
        return ""


def sha256_text(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path):
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def owner_name(lookup, ident):
    """A user or group name (pwd.getpwuid / grp.getgrgid), or the number when it has none."""
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def stat_path(path, content=False):
    """lstat of a path as Ansible's stat (follow: false) sees it; sha256 of a regular file with ``content``
    (None when it cannot be read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return {"exists": False}
    out = {
        "exists": True,
        "isdir": stat.S_ISDIR(st.st_mode),
        "isreg": stat.S_ISREG(st.st_mode),
        "size": st.st_size,
        "mtime": st.st_mtime,
        "uid": st.st_uid,
        "gid": st.st_gid,
        "owner": owner_name(pwd.getpwuid, st.st_uid),
        "group": owner_name(grp.getgrgid, st.st_gid),
        "mode": "%04o" % stat.S_IMODE(st.st_mode),
    }
    if content and out["isreg"]:
        try:
            out["sha256"] = sha256_file(path)
        except (IOError, OSError):
            out["sha256"] = None
    return out


def path_state(path):
    """exists/isdir/owner/group/mode (octal string) of a path, and sha256 of a regular file."""
    full = stat_path(path, content=True)
    return dict((k, v) for k, v in full.items() if k in ("exists", "isdir", "owner", "group", "mode", "sha256"))


# One JSON string, its closing quote optional: an unterminated string then matches to the end in one go,
# so that no input makes the scan go back (a pattern that needs the quote rescans the rest of the text from
# every quote of '"\\"\\"\\"...': quadratic).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_OPENERS = bytes.maketrans(b"[{]}", b"\x01\x01\x00\x00")


def json_depth(text):
    """The deepest nesting of brackets outside strings in ``text``: json.loads recurses at most this deep.

    Not recursive and linear, in C code: strings dropped, then all but brackets (re), then the running
    count of open brackets (depth after i brackets = 2 * openers so far - i) by itertools. On invalid
    JSON the count is an upper bound: json stops at the first error, and up to there counts as it does.
    """
    marks = _NOT_BRACKETS.sub("", _STRING.sub("", text)).encode("ascii").translate(_OPENERS)
    # depth after the i-th bracket = 2 * openers among the first i - i
    return max(itertools.chain((0,), map(operator.sub, map((2).__mul__, itertools.accumulate(marks)),
                                         range(1, len(marks) + 1))))


def _no_constant(name):
    raise ValueError("%s is not a JSON value" % name)


class JsonFileError(ValueError):
    """A JSON file refused by load_json. ``reason``: not_regular, too_large, not_utf8, too_deep or not_json;
    ``detail``: the NotRegularFile, the size limit, the UnicodeDecodeError, the depth limit or json's message.
    The message (str) is why, without the path (not_regular's names it)."""

    def __init__(self, reason, message, detail=None):
        ValueError.__init__(self, message)
        self.reason = reason
        self.detail = detail


def _utf8(data):
    try:
        return data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    except UnicodeDecodeError as exc:
        raise JsonFileError("not_utf8", "not UTF-8: byte 0x%02x at offset %d" % (data[exc.start], exc.start), exc)


def _parse(text, depth, constants):
    if json_depth(text) > depth:
        raise JsonFileError("too_deep", "nested deeper than %d levels" % depth, depth)
    try:
        return json.loads(text) if constants else json.loads(text, parse_constant=_no_constant)
    except RecursionError:  # not reached after the scan; kept so that no input can become a traceback
        raise JsonFileError("too_deep", "nested too deep", depth)
    except ValueError as exc:
        raise JsonFileError("not_json", str(exc), str(exc))


def parse_json_bounded(data, depth=MAX_JSON_DEPTH):
    """(object, None) or (None, why): UTF-8 JSON bytes or text, nested at most ``depth`` levels.

    The depth is counted by a scan of the brackets outside strings before json parses anything, so
    no input makes json recurse deeper than ``depth``; NaN and Infinity (which json accepts, JSON does
    not) are refused.
    """
    try:
        return _parse(_utf8(data), depth, False), None
    except JsonFileError as exc:
        return None, str(exc)


def load_json(path, limit=MAX_JSON_SIZE, depth=MAX_JSON_DEPTH, constants=False):
    """(raw bytes, parsed object) of the JSON file ``path``: the collection's one bounded JSON file reader.

    A regular file only (open_regular: a FIFO would block, a device never end), at most ``limit`` bytes of UTF-8,
    nested at most ``depth`` levels (counted before json parses it), NaN and Infinity refused unless ``constants``.
    Raises JsonFileError (its ``reason`` lets a caller word the refusal its own way) or the OSError of a file that
    cannot be read.
    """
    try:
        handle = open_regular(path)
    except NotRegularFile as exc:
        raise JsonFileError("not_regular", str(exc), exc)
    with handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise JsonFileError("too_large", "larger than %d bytes" % limit, limit)
    return raw, _parse(_utf8(raw), depth, constants)


def read_json(path, limit=MAX_JSON_SIZE, depth=MAX_JSON_DEPTH):
    """(object, error): a JSON file parsed, None when absent or unreadable; error (naming the file) when it is
    not a regular file, larger than ``limit`` bytes, nested deeper than ``depth`` or not JSON."""
    try:
        return load_json(path, limit, depth)[1], None
    except JsonFileError as exc:
        if exc.reason == "not_regular":
            return None, "%s; expected a JSON file" % exc
        if exc.reason == "too_large":
            return None, "%s is larger than %d bytes, too large for a record or a config.json" % (path, limit)
        return None, "%s is not JSON (%s)" % (path, exc)
    except (IOError, OSError):
        return None, None


def read_record(path, consequence="it will be rewritten"):
    """(record, warning): a role's record (a JSON object) or None when absent or unreadable, and why not."""
    data, error = read_json(path)
    if error:
        return None, "%s: %s" % (error, consequence)
    if data is not None and not isinstance(data, dict):
        return None, "%s does not hold a JSON object: %s" % (path, consequence)
    return data, None
