# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Compare a venv with a lock file, from the files alone.
#
# Runs on the managed node with its system Python and the stdlib only: the venv
# is never imported or executed (its interpreter may not even start, e.g. a
# CUDA-only torch on a host whose driver is broken), and no installer is run, so
# a role can ask "does this venv match the lock?" in milliseconds and skip the
# resolver when it does.
#
# Reads lock/constraints files as `uv pip compile` writes them (name==version,
# --hash continuation lines, "# via" comments, extras, "; markers" from
# --universal, "name @ url" pins) and the venv's *.dist-info/METADATA (and
# legacy *.egg-info) headers. This is the collection's one METADATA reader
# (distribution_name_version; flash_attn_guard uses it too) and its one name
# normaliser (canonicalize_name).
#
# Every read is bounded and every file is decoded strictly where its content
# decides the answer: a lock file that is binary, not UTF-8 or holds control
# characters, and a METADATA whose Name/Version is not UTF-8, are errors naming
# the file. A broken direct_url.json (optional: it only tells where a URL pin
# came from) is ignored and reported in ``compare()``'s ``warnings``; the
# package then does not match a URL pin, so a role reinstalls it.

import glob
import os
import platform
import re
import stat
import sys

from ansible_collections.inference.gpu_host.plugins.module_utils._common.inputs import path_option_error
from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import describe_char, first_control

MAX_LOCK_SIZE = 16 * 1024 * 1024        # a vLLM lock with hashes is about 1 MB
MAX_METADATA_HEADER_SIZE = 1024 * 1024  # Name and Version are among the first lines
MAX_DIRECT_URL_SIZE = 64 * 1024         # {"url": ..., "dir_info"/"vcs_info"/"archive_info": {...}}
# How a direct_url.json that load_json refuses is ignored (its reason -> the problem, with the path and the detail).
_DIRECT_URL_REFUSALS = {
    "not_regular": "%s: ignored, cannot read: not a regular file%.0s",
    "too_large": "%s: ignored, larger than %d bytes",
    "not_utf8": "%s: ignored, not UTF-8 JSON: %s",
    "too_deep": "%s: ignored, its JSON nests too deeply%.0s",
    "not_json": "%s: ignored, not UTF-8 JSON: %s",
}
MAX_PYVENV_CFG_SIZE = 64 * 1024
MAX_VERSION_LENGTH = 128                # longer is no version any tool writes
MAX_MARKER_DEPTH = 32                   # nested parentheses in one environment marker


class VenvLockError(ValueError):
    """A venv or lock file that cannot be read; the message names the path."""


# ---------------------------------------------------------------------------
# names and versions

_NAME_SEP = re.compile(r"[-_.]+")


def canonicalize_name(name):
    """PEP 503 normal form: ``Flash_Attn`` -> ``flash-attn``."""
    return _NAME_SEP.sub("-", name).lower()


_VERSION_RE = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


def version_key(version):
    """A sort/equality key for a PEP 440 version, or None if it is not one.

    ``1.0`` == ``1.0.0``; ``1.0.dev1`` < ``1.0a1`` < ``1.0`` < ``1.0.post1``;
    the local label (``+cpu``) is the last element, so callers can drop it.
    """
    if len(version or "") > MAX_VERSION_LENGTH:
        return None  # and int() of a 5000-digit part would raise
    match = _VERSION_RE.match(version or "")
    if not match:
        return None
    release = [int(part) for part in match.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre_l, dev_l = match.group("pre_l"), match.group("dev_l")
    post_n = match.group("post_n1") or match.group("post_n2")
    has_post = match.group("post_n1") is not None or match.group("post_l") is not None
    if pre_l:
        pre = (0, _PRE_RANK[pre_l.lower()], int(match.group("pre_n") or 0))
    elif dev_l and not has_post:
        pre = (-1,)  # 1.0.dev0 sorts before 1.0a0
    else:
        pre = (1,)
    post = (int(post_n or 0),) if has_post else (-1,)
    dev = (int(match.group("dev_n") or 0),) if dev_l else (float("inf"),)
    local = match.group("local")
    local_key = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in re.split(r"[-_.]", local)) if local else ()
    return (int(match.group("epoch") or 0), tuple(release), pre, post, dev, local_key)


def version_matches(locked, installed, operator="=="):
    """Whether an installed version satisfies the pin ``<operator><locked>``.

    ``==`` follows PEP 440: a pin without a local label accepts any local build
    (``torch==2.11.0`` accepts ``2.11.0+cu130``); ``==X.*`` is a prefix match;
    ``===`` compares the strings.
    """
    if installed is None:
        return False
    if operator == "===":
        return locked.strip().lower() == installed.strip().lower()
    if locked.endswith(".*"):
        want, have = version_key(locked[:-2]), version_key(installed)
        if want is None or have is None:
            return False
        # compare the unstripped release prefix: 2.* matches 2.0 and 2.8.3
        want_rel = [int(p) for p in _VERSION_RE.match(locked[:-2]).group("release").split(".")]
        have_rel = [int(p) for p in _VERSION_RE.match(installed).group("release").split(".")]
        have_rel += [0] * max(0, len(want_rel) - len(have_rel))
        return want[0] == have[0] and have_rel[:len(want_rel)] == want_rel
    want, have = version_key(locked), version_key(installed)
    if want is None or have is None:
        return locked.strip().lower() == installed.strip().lower()
    if not want[5]:
        have = have[:5] + ((),)
    return want == have


# ---------------------------------------------------------------------------
# environment markers (PEP 508), enough for what `uv pip compile --universal` writes

_MARKER_TOKEN = re.compile(
    r"""\s*(?:
    (?P<lparen>\()|(?P<rparen>\))
    |(?P<op>===|==|!=|<=|>=|~=|<|>|not\s+in\b|in\b)
    |(?P<bool>and\b|or\b)
    |'(?P<sq>[^']*)'|"(?P<dq>[^"]*)"
    |(?P<var>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)
_VERSION_VARS = frozenset(("python_version", "python_full_version", "implementation_version", "platform_release"))


def marker_environment(site_packages=None, pyvenv_cfg=None):
    """The PEP 508 marker values of a venv on this node.

    Platform values come from the running (system) interpreter, which is on the
    same machine; the Python version and implementation come from the venv's
    ``pyvenv.cfg`` (or the ``lib/pythonX.Y`` directory name), because the venv's
    Python may differ from the one running this code.
    """
    cfg = read_pyvenv_cfg(pyvenv_cfg) if pyvenv_cfg else {}
    full = cfg.get("version_info") or cfg.get("version")
    if not full and site_packages:
        match = re.search(r"python(\d+\.\d+)", site_packages)
        full = match.group(1) if match else None
    if not full:
        full = platform.python_version()
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", full)
    short = "%s.%s" % (match.group(1), match.group(2)) if match else full
    full = match.group(0) if match else full
    impl = (cfg.get("implementation") or "CPython")
    return {
        "python_version": short,
        "python_full_version": full,
        "implementation_name": impl.lower(),
        "implementation_version": full,
        "platform_python_implementation": impl,
        "os_name": os.name,
        "sys_platform": sys.platform,
        "platform_system": platform.system(),
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_version": platform.version(),
        "extra": "",
    }


def _tokenize_marker(marker):
    pos, tokens = 0, []
    text = marker.strip()
    while pos < len(text):
        match = _MARKER_TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise VenvLockError("cannot parse environment marker %r at %r" % (marker, text[pos:]))
        pos = match.end()
        kind = match.lastgroup
        if kind in ("sq", "dq"):
            tokens.append(("str", match.group(kind)))
        elif kind == "op":
            tokens.append(("op", re.sub(r"\s+", " ", match.group(kind))))
        else:
            tokens.append((kind, match.group(kind)))
    return tokens


def _compare_marker(left, op, right, version_like):
    if op in ("in", "not in"):
        result = left in right
        return result if op == "in" else not result
    if version_like and op in ("==", "!=") and right.endswith(".*"):
        result = version_matches(right, left)
        return result if op == "==" else not result
    lkey, rkey = (version_key(left), version_key(right)) if version_like else (None, None)
    if lkey is not None and rkey is not None:
        if op == "~=":
            parts = right.split(".")
            if len(parts) < 2:
                return False
            return lkey >= rkey and version_matches(".".join(parts[:-1]) + ".*", left)
        lkey, rkey = lkey[:5], rkey[:5]
    else:
        lkey, rkey = left, right
    return {
        "==": lkey == rkey, "===": left == right, "!=": lkey != rkey,
        "<": lkey < rkey, "<=": lkey <= rkey, ">": lkey > rkey, ">=": lkey >= rkey,
        "~=": False,
    }[op]


def _paren_depth(tokens):
    # The evaluator recurses once per "(": bound it before it starts.
    depth = deepest = 0
    for kind, _text in tokens:
        if kind == "lparen":
            depth += 1
            deepest = max(deepest, depth)
        elif kind == "rparen":
            depth -= 1
    return deepest


def evaluate_marker(marker, environment):
    """Evaluate a PEP 508 marker string against a dict from ``marker_environment``."""
    tokens = _tokenize_marker(marker)
    if _paren_depth(tokens) > MAX_MARKER_DEPTH:
        raise VenvLockError("environment marker %r nests parentheses deeper than %d levels"
                            % (marker, MAX_MARKER_DEPTH))
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else (None, None)

    def take():
        tok = peek()
        if tok[0] is None:
            raise VenvLockError("environment marker %r ends too early" % marker)
        pos[0] += 1
        return tok

    def value():
        kind, text = take()
        if kind == "str":
            return text, False
        if kind == "var":
            name = text.replace(".", "_")
            if name not in environment:
                raise VenvLockError("unknown variable %r in environment marker %r" % (text, marker))
            return environment[name], name in _VERSION_VARS
        raise VenvLockError("expected a variable or a quoted string in environment marker %r, got %r" % (marker, text))

    def atom():
        if peek()[0] == "lparen":
            take()
            result = expr()
            if take()[0] != "rparen":
                raise VenvLockError("unbalanced parentheses in environment marker %r" % marker)
            return result
        left, lver = value()
        kind, op = take()
        if kind != "op":
            raise VenvLockError("expected a comparison in environment marker %r, got %r" % (marker, op))
        right, rver = value()
        return _compare_marker(left, op, right, lver or rver)

    def and_expr():
        result = atom()
        while peek() == ("bool", "and"):
            take()
            result = atom() and result
        return result

    def expr():
        result = and_expr()
        while peek() == ("bool", "or"):
            take()
            result = and_expr() or result
        return result

    result = expr()
    if pos[0] != len(tokens):
        raise VenvLockError("unexpected %r in environment marker %r" % (tokens[pos[0]][1], marker))
    return result


# ---------------------------------------------------------------------------
# lock files

_REQ_RE = re.compile(r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?\s*(?P<rest>.*)$")
_PIN_RE = re.compile(r"^(?P<op>===|==)\s*(?P<version>[^\s,;]+)$")
_HASH_OPT = re.compile(r"(?:^|\s)--hash(?:=|\s+)\S+")
_COMMENT = re.compile(r"(?:^|\s)#.*$")


def _lines(text, source):
    """The lines of ``text`` (split on \\n only, a \\r before it dropped); control characters refused."""
    for number, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        # A tab separates words in a requirement line; no other control character belongs there.
        bad = first_control(line, allow=u"\t")
        if bad:
            raise VenvLockError(
                "%s line %d: control character %s at column %d; a lock file holds printable text only "
                "(is it a lock file?)" % (source, number, describe_char(bad), line.index(bad) + 1))
        yield number, line


def _logical_lines(text, source="<lock>"):
    """Yield (first line number, text) with backslash continuations joined."""
    buf, start = [], None
    for number, line in _lines(text, source):
        if start is None:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            buf.append(stripped[:-1])
            continue
        buf.append(line)
        yield start, " ".join(buf)
        buf, start = [], None
    if buf:
        yield start, " ".join(buf)


def parse_lock_text(text, source="<lock>"):
    """Parse lock/constraints text; return a list of requirement dicts.

    Each dict: ``name`` (canonical), ``raw_name``, ``version`` (the pinned
    version, or None for a URL pin), ``operator`` (``==``/``===``/``@``),
    ``url``, ``extras`` (list), ``marker`` (str or None), ``line`` (number).
    Option lines (``-r``, ``--index-url``, ``-e`` ...) are skipped: they pin nothing
    this comparison can check. Anything else that is not an exact pin raises.
    """
    reqs = []
    for number, line in _logical_lines(text, source):
        line = _COMMENT.sub("", _HASH_OPT.sub(" ", line)).strip()
        if not line or line.startswith("-"):
            continue
        match = _REQ_RE.match(line)
        if not match:
            raise VenvLockError("%s line %d: %r is not a requirement (expected name==version)" % (source, number, line))
        rest = match.group("rest").strip()
        marker, url, operator, version = None, None, None, None
        if rest.startswith("@"):
            # PEP 508: a URL pin needs whitespace before its ';'
            parts = re.split(r"\s+;", rest[1:], maxsplit=1)
            url = parts[0].strip()
            marker = parts[1].strip() if len(parts) > 1 else None
            operator = "@"
        else:
            spec, _sep, marker = rest.partition(";")
            marker = marker.strip() or None
            pin = _PIN_RE.match(spec.strip())
            if not pin:
                raise VenvLockError(
                    "%s line %d: %r is not pinned exactly (expected %s==<version> or %s @ <url>, as uv pip compile writes)"
                    % (source, number, line, match.group("name"), match.group("name")))
            operator, version = pin.group("op"), pin.group("version")
            if len(version) > MAX_VERSION_LENGTH:
                raise VenvLockError("%s line %d: the version of %s is %d characters long; expected a version of at "
                                    "most %d" % (source, number, match.group("name"), len(version), MAX_VERSION_LENGTH))
        extras = [e.strip() for e in (match.group("extras") or "").split(",") if e.strip()]
        reqs.append({
            "name": canonicalize_name(match.group("name")),
            "raw_name": match.group("name"),
            "version": version,
            "operator": operator,
            "url": url,
            "extras": extras,
            "marker": marker,
            "line": number,
        })
    return reqs


def _read_bounded(path, limit):
    """Up to ``limit`` + 1 bytes of a regular file (a FIFO would block, a device never end)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise IOError("not a regular file")
    with open(path, "rb") as handle:
        return handle.read(limit + 1)


def read_lock_text(path):
    """A lock file's text: UTF-8 of at most MAX_LOCK_SIZE bytes, without a byte order mark (VenvLockError else)."""
    try:
        raw = _read_bounded(path, MAX_LOCK_SIZE)
    except (IOError, OSError) as exc:
        raise VenvLockError("cannot read lock file %s: %s" % (path, exc))
    if len(raw) > MAX_LOCK_SIZE:
        raise VenvLockError("lock file %s is larger than %d bytes: not a lock file?" % (path, MAX_LOCK_SIZE))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VenvLockError("lock file %s is not UTF-8 text (byte 0x%02x at offset %d): a binary file, not a lock?"
                            % (path, raw[exc.start], exc.start))
    return text[1:] if text.startswith("\ufeff") else text  # a byte order mark some editors write


def parse_lock(path):
    """Parse a lock file on disk (see ``parse_lock_text``): UTF-8 text of at most MAX_LOCK_SIZE bytes."""
    return parse_lock_text(read_lock_text(path), source=path)


# ---------------------------------------------------------------------------
# venvs

def read_pyvenv_cfg(path):
    """``key = value`` pairs of a pyvenv.cfg (empty dict if there is none)."""
    values = {}
    try:
        raw = _read_bounded(path, MAX_PYVENV_CFG_SIZE)[:MAX_PYVENV_CFG_SIZE]
    except (IOError, OSError):
        return values  # optional: the site-packages path tells the Python version too
    for line in raw.decode("utf-8", "replace").splitlines():
        key, sep, val = line.partition("=")
        if sep:
            values[key.strip().lower()] = val.strip()
    return values


def find_site_packages(path):
    """The site-packages directory of a venv, or ``path`` if it already is one.

    A venv has exactly one ``lib/python3.*/site-packages``; when several exist
    (a venv re-created over another Python), pyvenv.cfg's version picks one.
    """
    if not os.path.isdir(path):
        raise VenvLockError("venv %s does not exist (or is not a directory)" % path)
    if os.path.basename(os.path.normpath(path)) in ("site-packages", "dist-packages"):
        return os.path.normpath(path)
    found = sorted(glob.glob(os.path.join(path, "lib", "python3*", "site-packages")))
    if len(found) == 1:
        return found[0]
    if not found:
        raise VenvLockError(
            "no lib/python3.*/site-packages under %s: not a venv (give the venv directory or its site-packages)" % path)
    cfg = read_pyvenv_cfg(os.path.join(path, "pyvenv.cfg"))
    match = re.match(r"(\d+\.\d+)", cfg.get("version_info") or cfg.get("version") or "")
    if match:
        wanted = os.path.join(path, "lib", "python%s" % match.group(1), "site-packages")
        if wanted in found:
            return wanted
    raise VenvLockError("venv %s has several site-packages (%s) and its pyvenv.cfg does not say which Python it uses"
                        % (path, ", ".join(found)))


def _metadata_header_lines(path):
    """The raw header lines of a METADATA/PKG-INFO file (bytes), up to the first blank line.

    Reads at most MAX_METADATA_HEADER_SIZE bytes of a regular file; a line cut by that bound is dropped.
    Raises IOError/OSError when the file cannot be read or is not a regular file.
    """
    raw = _read_bounded(path, MAX_METADATA_HEADER_SIZE)
    lines = raw.split(b"\n")
    if len(raw) > MAX_METADATA_HEADER_SIZE:
        lines.pop()
    for line in lines:
        line = line.rstrip(b"\r")
        if not line.strip():
            break
        yield line


def _metadata_fields(path):
    """{lower-cased header: raw bytes value}, first occurrence wins; continuation lines skipped."""
    fields = {}
    for line in _metadata_header_lines(path):
        if line[:1] in (b" ", b"\t"):
            continue
        key, sep, val = line.partition(b":")
        key = key.decode("utf-8", "replace").lower()
        if sep and key not in fields:
            fields[key] = val.strip()
    return fields


def read_metadata_headers(path):
    """Name/Version (and other single headers) of a METADATA/PKG-INFO file.

    Stops at the first blank line: the long description after it is not needed.
    Never raises: an unreadable file gives {}, bytes that are not UTF-8 become U+FFFD
    (old PKG-INFO files carry Latin-1 author names).
    """
    try:
        fields = _metadata_fields(path)
    except (IOError, OSError):
        return {}
    return dict((key, val.decode("utf-8", "replace")) for key, val in fields.items())


def read_name_and_version(path):
    """(Name, Version) of a METADATA/PKG-INFO, each None when absent or the file is unreadable.

    Both decide what the venv holds, so bytes that are not UTF-8 in them are a VenvLockError naming the file.
    """
    try:
        fields = _metadata_fields(path)
    except (IOError, OSError):
        return None, None
    found = []
    for key in ("name", "version"):
        value = fields.get(key)
        if value is not None:
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise VenvLockError("%s: its %s header is not UTF-8 (%r): a damaged install; reinstall the package"
                                    % (path, key.capitalize(), value[:80]))
        found.append(value or None)
    return found[0], found[1]


def _read_direct_url(path):
    """(url or None, problem or None) from a dist-info's direct_url.json.

    The file is optional: when it is missing the package came from an index; when
    it is broken the problem is returned (not raised), the url is None, and the
    package does not match a URL pin, which makes a role reinstall it.
    """
    # Imported here: python_env's input check reaches this file from a filter, in every task's worker (BENCHMARKS.md,
    # issue 28); only the host side reads a venv.
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import JsonFileError, load_json
    try:
        data = load_json(path, MAX_DIRECT_URL_SIZE, constants=True)[1]
    except JsonFileError as exc:
        return None, _DIRECT_URL_REFUSALS[exc.reason] % (path, exc.detail)
    except (IOError, OSError) as exc:
        return None, "%s: ignored, cannot read: %s" % (path, exc)
    if not isinstance(data, dict):
        return None, "%s: ignored, expected a JSON object with \"url\", got %s" % (path, type(data).__name__)
    url = data.get("url")
    if not isinstance(url, str) or not url:
        return None, "%s: ignored, \"url\" is not a non-empty string but %r" % (path, url)
    if first_control(url, allow=u"\t"):
        return None, "%s: ignored, \"url\" holds control characters" % path
    return url, None


_DIST_DIR_RE = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+?)(?:-py[^-]*)?(?:-[^-]+)?\.(?:dist|egg)-info$")


def distribution_name_version(dist_path, damaged_ok=False):
    """(raw Name, Version) of an installed dist-info/egg-info; either is None when nothing tells it.

    From its METADATA (PKG-INFO for an egg-info; a legacy egg-info may be that file
    itself), else from the directory name (flash_attn-2.8.3.dist-info), so a
    distribution whose METADATA is lost is still known. A Name or Version that is
    not UTF-8 raises VenvLockError naming the file; with ``damaged_ok`` such a
    METADATA counts as missing instead.
    """
    entry = os.path.basename(dist_path)
    if os.path.isdir(dist_path):
        meta = os.path.join(dist_path, "METADATA" if entry.endswith(".dist-info") else "PKG-INFO")
    else:
        meta = dist_path
    try:
        name, version = read_name_and_version(meta)
    except VenvLockError:
        if not damaged_ok:
            raise
        name, version = None, None
    if not name or not version:
        match = _DIST_DIR_RE.match(entry)
        if match:
            name, version = name or match.group("name"), version or match.group("version")
    return name, version


def installed_distributions(site_packages):
    """List the distributions installed in a site-packages directory.

    Returns a list of dicts ``name`` (canonical), ``raw_name``, ``version``,
    ``path`` (the dist-info/egg-info), ``url`` (from direct_url.json, or None),
    ``problem`` (why a broken direct_url.json was ignored, or None), sorted by name.
    Raises VenvLockError for a METADATA whose Name or Version is not UTF-8.
    """
    try:
        entries = sorted(os.listdir(site_packages))
    except (IOError, OSError) as exc:
        raise VenvLockError("cannot list %s: %s" % (site_packages, exc))
    dists = []
    for entry in entries:
        if not (entry.endswith(".dist-info") or entry.endswith(".egg-info")):
            continue
        full = os.path.join(site_packages, entry)
        name, version = distribution_name_version(full)
        if not name:
            continue
        url, problem = None, None
        direct = os.path.join(full, "direct_url.json")
        if os.path.lexists(direct):
            url, problem = _read_direct_url(direct)
        dists.append({"name": canonicalize_name(name), "raw_name": name, "version": version, "path": full, "url": url,
                      "problem": problem})
    dists.sort(key=lambda d: (d["name"], d["path"]))
    return dists


def _strip_fragment(url):
    return (url or "").split("#", 1)[0].rstrip("/")


# flash_attn_guard judges these (which of them may own flash_attn, and what its policy does with the other);
# the exact comparison leaves them to it.
GUARDED_BY_FLASH_ATTN_GUARD = ("flash-attn", "flash-attn-4")


def compare(venv, lock, include_extra=True, exact=False, keep=()):
    """Compare the venv (directory or site-packages) with a lock file.

    ``exact``: the venv must hold the lock's packages and nothing else; the extra packages not in ``keep``
    (names, any spelling) nor GUARDED_BY_FLASH_ATTN_GUARD are ``unexpected`` and make it out of sync.

    Returns a dict:
    - ``in_sync``: nothing missing and nothing differing (and, with ``exact``, nothing unexpected;
      without it extra packages are reported but do not count);
    - ``unexpected``: ``[{name, installed}]`` the extra packages ``exact`` does not allow (empty without it);
    - ``missing``: ``[{name, locked}]`` locked but not installed;
    - ``differing``: ``[{name, locked, installed}]`` installed at another version
      (or, for a URL pin, from another source);
    - ``extra``: ``[{name, installed}]`` installed but not locked (empty when
      ``include_extra`` is false);
    - ``site_packages``, ``locked_count``, ``installed_count``;
    - ``warnings``: sentences on broken optional files that were ignored.
    Requirements whose marker is false for this venv are ignored.
    """
    site = find_site_packages(venv)
    # <venv>/lib/pythonX.Y/site-packages -> <venv>/pyvenv.cfg, also when given the site-packages path
    env = marker_environment(site, os.path.join(site, os.pardir, os.pardir, os.pardir, "pyvenv.cfg"))
    reqs = parse_lock(lock)
    wanted = {}
    for req in reqs:
        if req["marker"]:
            try:
                applies = evaluate_marker(req["marker"], env)
            except VenvLockError as exc:
                raise VenvLockError("%s line %d: %s" % (lock, req["line"], exc))
            if not applies:
                continue
        if req["name"] in wanted:
            raise VenvLockError("%s pins %s twice for this venv (lines %d and %d)"
                                % (lock, req["raw_name"], wanted[req["name"]]["line"], req["line"]))
        wanted[req["name"]] = req
    installed, warnings = {}, []
    for dist in installed_distributions(site):
        installed.setdefault(dist["name"], []).append(dist)
        if dist["problem"]:
            warnings.append(dist["problem"])
    missing, differing, extra = [], [], []
    for name in sorted(wanted):
        req = wanted[name]
        locked = req["version"] if req["operator"] != "@" else req["url"]
        have = installed.get(name)
        if not have:
            missing.append({"name": name, "locked": locked})
            continue
        versions = sorted(d["version"] for d in have)
        if len(have) > 1:
            # two dist-info directories for one name: a broken install, never "in sync"
            differing.append({"name": name, "locked": locked, "installed": ", ".join(versions)})
        elif req["operator"] == "@":
            if _strip_fragment(have[0]["url"]) != _strip_fragment(req["url"]):
                differing.append({"name": name, "locked": locked,
                                  "installed": "%s (%s)" % (versions[0], have[0]["url"] or "not from a URL")})
        elif not version_matches(req["version"], versions[0], req["operator"]):
            differing.append({"name": name, "locked": locked, "installed": versions[0]})
    if include_extra or exact:
        for name in sorted(installed):
            if name not in wanted:
                extra.append({"name": name, "installed": ", ".join(sorted(d["version"] for d in installed[name]))})
    allowed = set(canonicalize_name(name) for name in keep) | set(GUARDED_BY_FLASH_ATTN_GUARD)
    unexpected = [e for e in extra if e["name"] not in allowed] if exact else []
    return {
        "in_sync": not missing and not differing and not unexpected,
        "unexpected": unexpected,
        "missing": missing,
        "differing": differing,
        "extra": extra,
        "site_packages": site,
        "locked_count": len(wanted),
        "installed_count": sum(len(v) for v in installed.values()),
        "warnings": warnings,
    }


def lock_step(params):
    """The python_venv_lock module's work, from its parameters: {"failed", "result", "warnings"}.

    Read-only. Relative paths are refused: they would be read in the module's temporary working directory.
    """
    venv, lock = params.get("venv"), params.get("lock")
    try:
        error = path_option_error(params, ("venv", "lock"))
        if error:
            raise VenvLockError(error)
        outcome = compare(venv, lock, exact=params.get("exact", False), keep=params.get("keep") or ())
    except VenvLockError as exc:
        return {"failed": True, "result": {"msg": str(exc)}, "warnings": []}
    differences = [dict(name=m["name"], locked=m["locked"], installed=None) for m in outcome["missing"]]
    differences += [dict(d) for d in outcome["differing"]]
    differences += [dict(name=u["name"], locked=None, installed=u["installed"]) for u in outcome["unexpected"]]
    differences.sort(key=lambda d: d["name"])
    if outcome["in_sync"]:
        msg = "venv %s matches %s (%d package(s))" % (venv, lock, outcome["locked_count"])
    else:
        msg = "venv %s differs from %s in %d package(s)" % (venv, lock, len(differences))
    result = dict(changed=False, in_sync=outcome["in_sync"], differences=differences,
                  missing=[m["name"] for m in outcome["missing"]], extra=outcome["extra"],
                  unexpected=outcome["unexpected"], site_packages=outcome["site_packages"],
                  locked_count=outcome["locked_count"], installed_count=outcome["installed_count"], msg=msg)
    return {"failed": False, "result": result, "warnings": outcome["warnings"]}
