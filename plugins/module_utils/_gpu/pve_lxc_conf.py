# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Editor for Proxmox container configs (/etc/pve/lxc/<vmid>.conf), for the lxc_gpu role.
#
# What Proxmox does with this file (read in proxmox/pve-container src/PVE/LXC/Config.pm,
# parse_pct_config / write_pct_config, and pve-docs pct.conf.adoc):
# * The main section ends at the first "[name]" / "[pve:pending]" header; snapshots and
#   pending changes follow. Blank lines are ignored.
# * EVERY "#" line of a section is collected into its `description` and written back, on
#   the next `pct set` or GUI edit, as comment lines at the TOP of the section. Comments in
#   the middle do not stay where they were, so a "# BEGIN ... / # END ..." block cannot
#   mark ownership: after one Proxmox write the markers sit at the top, away from the lines.
# * Plain keys are written sorted (Perl string order: dev0, dev1, dev10, dev2, ...), then
#   the lxc.* keys in their original order, as "key: value".
#
# Ownership rule (so only our lines are touched, robust to Proxmox rewriting the file):
# in the main section, this editor owns
#   1. `devN:` entries whose path is /dev/nvidia* (Proxmox 8.1+ device passthrough);
#   2. `lxc.mount.entry` lines whose source is /dev/nvidia*;
#   3. `lxc.cgroup.devices.allow` / `lxc.cgroup2.devices.allow` lines for a character
#      major that /proc/devices gives to an nvidia* driver now, or for a dynamic major
#      (234-254, 384-511; where the kernel puts nvidia-uvm and nvidia-caps) that no driver
#      has registered now: a leftover from an earlier driver load, which would otherwise
#      grant the container whatever driver gets that number next;
#   4. the `lxc.mount.entry` for dev/shm, only when shm_size is managed;
#   5. legacy "# BEGIN/END inference.gpu_host lxc_gpu" marker lines (dropped).
# Everything else, and everything in snapshot and pending sections, stays byte-for-byte.
#
# devN syntax (pve-docs generated/pct.conf.5-opts.adoc): `dev[n]: [[path=]<Path>]
# [,deny-write=<1|0>] [,gid=<integer>] [,mode=<Octal access mode>] [,uid=<integer>]`,
# n < 256; the path must be a character or block device (PVE::LXC::Tools::
# get_device_mode_and_rdev), so the /dev/nvidia-caps directory is passed as its nodes.
# Proxmox stats each devN path at container start and writes the cgroup2 allow rule
# itself, so devN entries do not go stale when majors change; raw lines do.
#
# Bytes: the file is read and written as bytes and handled as UTF-8 with surrogateescape
# (decode_conf / encode_conf), which maps every byte string to a str and back exactly, so a
# description in Latin-1, CRLF line ends, a missing final newline or trailing spaces survive.
# Lines are split at "\n" only (never str.splitlines(), which also splits at \x0b, \x0c,
# \x1c-\x1e, \x85, U+2028/2029: a comment holding one of them would turn into two lines, one
# of which could look like ours). Added lines take the dominant line end of the lines kept.
# Text shown to people (diff, removed lines, messages) is decoded with backslashreplace, so a
# byte that is not UTF-8 shows as \xNN and never reaches what is written.
#
# Public API (stdlib only; every failure a PveLxcConfError):
# * decode_conf(data) -> str ; encode_conf(text) -> bytes ; display(text_or_bytes) -> printable str
# * read_bounded(path, what, limit=MAX_CONF_BYTES) -> bytes (a regular file, at most limit bytes)
# * split_sections(text) -> (main, rest); main + rest == text (str or bytes)
# * config_lock(text) -> the main section's `lock:` value or None
# * detect_cgroup_layout(mounts_text) -> "cgroup2" | "cgroup"
# * cgroup_allow_key(layout) -> "lxc.cgroup2.devices.allow" | "lxc.cgroup.devices.allow"
# * classify_line(line, proc_devices, manage_shm=False) -> "dev" | "lxc" | "marker" | None
# * render_lines(mode, gpu_minors, proc_devices, cgroup_layout="cgroup2", control_devices=...,
#                dir_entries=None, dev_options=None, shm_size=None, dev_indices=None) -> [line]
# * update_conf(text, mode, gpu_minors, proc_devices, cgroup_layout="cgroup2", control_devices=...,
#               dir_entries=None, dev_options=None, shm_size=None, state="present", path="conf")
#       -> {text, changed, diff, lines, removed, majors}; text is bytes when the input was bytes
# * majors_drift(text, proc_devices) -> {drift, checked, messages, conf_majors, majors}
# * shm_line(shm_size) -> the dev/shm tmpfs mount entry
# * unified_diff(before, after, path) -> str (for display)
# * write_atomic(path, data, expected_before=None) ; lock_config(lock_path, timeout=10) (context manager)

import contextlib
import difflib
import errno
import fcntl
import os
import re
import stat
import time

from ansible_collections.inference.gpu_host.plugins.module_utils._common.text import first_control
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import (
    char_major_registered,
    nvidia_char_majors,
)

MODES = ("devices", "raw")
CGROUP_KEYS = {"cgroup2": "lxc.cgroup2.devices.allow", "cgroup": "lxc.cgroup.devices.allow"}
LEGACY_MARKERS = ("# BEGIN inference.gpu_host lxc_gpu", "# END inference.gpu_host lxc_gpu")
MAX_DEVICES = 256  # $MAX_DEVICES in PVE/LXC/Config.pm
DEFAULT_CONTROL_DEVICES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps")
GPU_MAJOR_NAMES = ("nvidia", "nvidia-frontend")
# control device -> (its major's names in /proc/devices, by preference; node kind)
CONTROL_DEVICES = {
    "nvidiactl": (("nvidiactl", "nvidia", "nvidia-frontend"), "file"),
    "nvidia-modeset": (("nvidia-modeset", "nvidia", "nvidia-frontend"), "file"),
    "nvidia-uvm": (("nvidia-uvm",), "file"),
    "nvidia-uvm-tools": (("nvidia-uvm",), "file"),
    "nvidia-caps": (("nvidia-caps",), "dir"),
    "nvidia-caps-imex-channels": (("nvidia-caps-imex-channels",), "dir"),
}
# Linux allocates dynamic character majors from 234-254, then 511 down to 384
# (CHRDEV_MAJOR_DYN_END / CHRDEV_MAJOR_DYN_EXT_START.._END in fs/char_dev.c).
DYNAMIC_CHAR_MAJORS = frozenset(list(range(234, 255)) + list(range(384, 512)))

MAX_CONF_BYTES = 1024 * 1024  # far above any real container config; a bigger file is not one
# ASCII whitespace only, as Proxmox's Perl \s on bytes: str.strip() would also eat \x1c-\x1f, \x85, \xa0.
_WS = " \t\n\r\f\v"

# Parsing patterns are matched against a line without its line end, ASCII-only (\d must not
# take other scripts' digits, which int() would accept).
_HEADER_RE = re.compile(r"\[[^\]\n]+\]\s*", re.ASCII)
_LXC_RE = re.compile(r"(lxc\.[A-Za-z0-9_.\-]+)(?::|\s*=)\s*(.*?)\s*", re.ASCII)   # as parse_pct_config
_PLAIN_RE = re.compile(r"([a-z][a-z_]*\d*):\s*(.*?)\s*", re.ASCII)
_DEV_KEY_RE = re.compile(r"dev(\d+)", re.ASCII)
_ALLOW_RE = re.compile(r"([abc])\s+(\d+|\*):(\d+|\*)\s+([rwm]+)", re.ASCII)
# Input values become parts of conf lines: always re.fullmatch (re.match with "$" lets a
# trailing "\n" through, which would split the written line in two).
_DEV_OPTION_RE = re.compile(r"mode=0[0-7]{3}|uid=[0-9]+|gid=[0-9]+|deny-write=[01]")
_SHM_SIZE_RE = re.compile(r"[0-9]+[kKmMgG%]?")
_NODE_NAME_RE = re.compile(r"[A-Za-z0-9._-]+")


class PveLxcConfError(ValueError):
    """The container config or the inputs for it are not usable; the message says which and why."""


def decode_conf(data):
    """bytes -> str, reversibly for any bytes (encode_conf gives them back exactly)."""
    return data.decode("utf-8", "surrogateescape")


def encode_conf(text):
    return text.encode("utf-8", "surrogateescape")


def display(text):
    """Printable text for messages and diffs: bytes that are not UTF-8 show as \\xNN."""
    if not isinstance(text, bytes):
        try:
            text = encode_conf(text)
        except UnicodeEncodeError:  # a surrogate that did not come from decode_conf
            text = text.encode("utf-8", "backslashreplace")
    return text.decode("utf-8", "backslashreplace")


def _text(text):
    return decode_conf(text) if isinstance(text, bytes) else text


def _lines(text):
    """Lines split at LF only, each with its line end; "".join(_lines(text)) == text."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _bare(line):
    """The line without its line end (LF or CRLF)."""
    return line.rstrip("\r\n")


def read_bounded(path, what, limit=MAX_CONF_BYTES):
    """The bytes of a regular file of at most limit bytes; anything else is a PveLxcConfError naming it.

    Opened non-blocking so that a FIFO in its place cannot hang the run; /proc files report size 0,
    so the bound is checked on what is read, not on st_size.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            raise PveLxcConfError("%s %s does not exist" % (what, path))
        raise PveLxcConfError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise PveLxcConfError("%s %s is a directory, expected a file" % (what, path))
        if not stat.S_ISREG(mode):
            raise PveLxcConfError("%s %s is not a regular file (a device, FIFO or socket), expected a file"
                                  % (what, path))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (IOError, OSError) as exc:
        raise PveLxcConfError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    finally:
        os.close(fd)
    if size > limit:
        raise PveLxcConfError("%s %s is larger than %d bytes, far more than a real one; refusing to use it"
                              % (what, path, limit))
    return b"".join(chunks)


def split_sections(text):
    """(main, rest): main ends before the first '[...]' header line; main + rest == text (str or bytes)."""
    if isinstance(text, bytes):
        main, rest = split_sections(decode_conf(text))
        return encode_conf(main), encode_conf(rest)
    offset = 0
    for line in _lines(text):
        if _HEADER_RE.fullmatch(_bare(line)):
            return text[:offset], text[offset:]
        offset += len(line)
    return text, ""


def _parse_line(line):
    """(key, value) for a config line, or (None, None) for blank/comment/unknown lines."""
    stripped = _bare(line)
    if not stripped.strip(_WS) or stripped.lstrip(_WS).startswith("#"):
        return None, None
    match = _LXC_RE.fullmatch(stripped) or _PLAIN_RE.fullmatch(stripped)
    if not match:
        return None, None
    return match.group(1), match.group(2)


def config_lock(text):
    """The main section's `lock:` value (str) or None."""
    main, _rest = split_sections(_text(text))
    for line in _lines(main):
        key, value = _parse_line(line)
        if key == "lock":
            return value
    return None


def detect_cgroup_layout(mounts_text, source="/proc/mounts"):
    """Which devices-cgroup key this node's LXC reads.

    "cgroup" when a cgroup v1 hierarchy carries the devices controller (legacy or
    hybrid layout: LXC then ignores lxc.cgroup2.* with "Ignoring cgroup2 limits on
    legacy cgroup system", test-host.md), else "cgroup2" when a cgroup2 filesystem is
    mounted (Proxmox VE 7+ boots unified-only).
    """
    has_v2 = False
    for line in _lines(mounts_text or ""):
        fields = _fields(line)
        if len(fields) < 4:
            continue
        fstype, options = fields[2], fields[3].split(",")
        if fstype == "cgroup" and "devices" in options:
            return "cgroup"
        if fstype == "cgroup2":
            has_v2 = True
    if has_v2:
        return "cgroup2"
    raise PveLxcConfError("%s: no cgroup2 mount and no cgroup v1 mount with the devices controller; "
                          "cannot tell which lxc.cgroup*.devices.allow key LXC reads here" % source)


def cgroup_allow_key(layout):
    if layout not in CGROUP_KEYS:
        raise PveLxcConfError("cgroup layout: expected one of %s, got %r" % (sorted(CGROUP_KEYS), layout))
    return CGROUP_KEYS[layout]


def _dev_path(value):
    """The path of a devN value ('/dev/x,gid=44' or 'path=/dev/x,...')."""
    for part in value.split(","):
        part = part.strip(_WS)
        if part.startswith("path="):
            return part[len("path="):]
        if "=" not in part:
            return part
    return None


def _owned_allow(value, proc_devices):
    match = _ALLOW_RE.fullmatch(value.strip(_WS))
    if not match or match.group(1) != "c" or match.group(2) == "*":
        return False
    major = int(match.group(2))
    if major in nvidia_char_majors(proc_devices).values():
        return True
    return major in DYNAMIC_CHAR_MAJORS and not char_major_registered(proc_devices, major)


def classify_line(line, proc_devices, manage_shm=False):
    """'dev', 'lxc' or 'marker' when the line is owned by this editor, else None."""
    stripped = _bare(line).strip(_WS)
    if stripped in LEGACY_MARKERS:
        return "marker"
    key, value = _parse_line(line)
    if key is None:
        return None
    if _DEV_KEY_RE.fullmatch(key):
        path = _dev_path(value)
        return "dev" if path and path.startswith("/dev/nvidia") else None
    if key == "lxc.mount.entry":
        fields = _fields(value)
        if fields and fields[0].startswith("/dev/nvidia"):
            return "lxc"
        if manage_shm and len(fields) > 1 and fields[1].strip("/") == "dev/shm":
            return "lxc"
        return None
    if key in CGROUP_KEYS.values():
        return "lxc" if _owned_allow(value, proc_devices) else None
    return None


def _major_for(names, proc_devices, what):
    majors = nvidia_char_majors(proc_devices)
    for name in names:
        if name in majors:
            return majors[name]
    raise PveLxcConfError(
        "/proc/devices has no character device %s, needed for %s: load the driver first "
        "(nvidia-uvm appears only after `nvidia-modprobe -u -c 0` or the first CUDA use on the node)"
        % (" or ".join(repr(n) for n in names), what))


def _fields(value):
    """Whitespace-separated fields as LXC and the kernel split them (space, tab), never Unicode spaces."""
    return [field for field in re.split(r"[ \t]+", value.strip(_WS)) if field]


def check_options(mode, control_devices=DEFAULT_CONTROL_DEVICES, dev_options=None, shm_size=None):
    """Refuse an option value that is not exactly what a conf line may hold (whatever the state)."""
    if mode not in MODES:
        raise PveLxcConfError("mode: expected one of %s, got %r" % (list(MODES), mode))
    for name in control_devices:
        if name not in CONTROL_DEVICES:
            raise PveLxcConfError("control_devices: %r is not one of %s" % (name, sorted(CONTROL_DEVICES)))
    if dev_options:
        if not isinstance(dev_options, str):
            raise PveLxcConfError("dev_options: expected a comma-separated string, got %r" % (dev_options,))
        keys = []
        for part in dev_options.split(","):
            if not _DEV_OPTION_RE.fullmatch(part):
                raise PveLxcConfError("dev_options: %r is not one of mode=0NNN, uid=N, gid=N, deny-write=0|1 "
                                      "(the devN options of pct.conf; comma-separated, no spaces or line breaks)"
                                      % part)
            keys.append(part.split("=", 1)[0])
            if keys.count(keys[-1]) > 1:
                raise PveLxcConfError("dev_options: %r sets %s twice; Proxmox refuses a duplicate key"
                                      % (dev_options, keys[-1]))
    if shm_size is not None and not _SHM_SIZE_RE.fullmatch(str(shm_size)):
        raise PveLxcConfError("shm_size: expected a tmpfs size like 16G, 512M or 50%% (digits, then k, m, g or %%; "
                              "no spaces or line breaks), got %r" % (shm_size,))


def _check_minors(gpu_minors):
    minors = []
    for minor in gpu_minors or []:
        if isinstance(minor, bool) or not isinstance(minor, int) or minor < 0 or minor > 254:
            raise PveLxcConfError("gpus: expected device minors 0-254 (/dev/nvidiaN), got %r" % (minor,))
        if minor not in minors:
            minors.append(minor)
    if not minors:
        raise PveLxcConfError("gpus: no GPU selected; select at least one /dev/nvidiaN")
    return sorted(minors)


def check_node_name(name, where):
    """A device node name that can stand in a /dev path of a conf line (no '/', '..', spaces, line breaks)."""
    if not isinstance(name, str) or not _NODE_NAME_RE.fullmatch(name) or name in (".", ".."):
        raise PveLxcConfError("%s: %r is not a plain device node name (letters, digits, '.', '_', '-')"
                              % (where, name))


def shm_line(shm_size):
    return "lxc.mount.entry: tmpfs dev/shm tmpfs rw,nosuid,nodev,size=%s,create=dir 0 0" % shm_size


def render_lines(mode, gpu_minors, proc_devices, cgroup_layout="cgroup2", control_devices=DEFAULT_CONTROL_DEVICES,
                 dir_entries=None, dev_options=None, shm_size=None, dev_indices=None):
    """The passthrough lines for a mode, without newlines, in the order they are written.

    raw: one allow rule per distinct major (GPU major first), then one bind mount per
    GPU and control device (directories with create=dir), then the dev/shm mount.
    devices: devN entries for /dev/nvidiaN, the control nodes, and for directory
    devices (nvidia-caps) the node names given in dir_entries[name]; indices come from
    dev_indices (free devN numbers, ascending) and lines are in Proxmox's key order.
    """
    check_options(mode, control_devices, dev_options, shm_size)
    minors = _check_minors(gpu_minors)
    lines = []
    if mode == "raw":
        key = cgroup_allow_key(cgroup_layout)
        majors = [_major_for(GPU_MAJOR_NAMES, proc_devices, "/dev/nvidia%d" % minors[0])]
        for name in control_devices:
            major = _major_for(CONTROL_DEVICES[name][0], proc_devices, "/dev/%s" % name)
            if major not in majors:
                majors.append(major)
        lines.extend("%s: c %d:* rwm" % (key, major) for major in majors)
        nodes = [("nvidia%d" % m, "file") for m in minors] + [(n, CONTROL_DEVICES[n][1]) for n in control_devices]
        lines.extend("lxc.mount.entry: /dev/%s dev/%s none bind,optional,create=%s" % (node, node, kind)
                     for node, kind in nodes)
    else:
        paths = ["/dev/nvidia%d" % m for m in minors]
        for name in control_devices:
            if CONTROL_DEVICES[name][1] == "dir":
                for entry in (dir_entries or {}).get(name) or []:
                    check_node_name(entry, "dir_entries[%r]" % name)
                paths.extend("/dev/%s/%s" % (name, entry) for entry in sorted((dir_entries or {}).get(name) or []))
            else:
                paths.append("/dev/%s" % name)
        indices = list(dev_indices) if dev_indices is not None else list(range(MAX_DEVICES))
        if len(indices) < len(paths):
            raise PveLxcConfError("devN: %d device entries needed but only %d of dev0-dev%d are free"
                                  % (len(paths), len(indices), MAX_DEVICES - 1))
        suffix = "," + dev_options if dev_options else ""
        entries = [("dev%d" % index, "%s%s" % (path, suffix)) for index, path in zip(indices, paths)]
        lines.extend("%s: %s" % entry for entry in sorted(entries))
    if shm_size is not None:
        lines.append(shm_line(shm_size))
    for line in lines:
        # Every value was checked above; this keeps a future input from ever splitting a line.
        if first_control(line) is not None or any(ord(char) > 0x7e for char in line):
            raise PveLxcConfError("refusing to write a line with a control or non-ASCII character: %r" % line)
    return lines


def unified_diff(before, after, path):
    """The exact change as a unified diff, for display (str or bytes in; bytes not UTF-8 as \\xNN)."""
    out = []
    for line in difflib.unified_diff([display(l) for l in _lines(_text(before))],
                                     [display(l) for l in _lines(_text(after))],
                                     "a/%s" % path, "b/%s" % path):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _dominant_eol(lines):
    """CRLF when more of the lines end in CRLF than in a bare LF, else LF; None when no line has a line end."""
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    lf = sum(1 for line in lines if line.endswith("\n")) - crlf
    if not crlf and not lf:
        return None
    return "\r\n" if crlf > lf else "\n"


def _dev_insert_position(dev_key, kept, end):
    """Where Proxmox's sorted key order puts a devN line among the kept lines: before the first
    plain key that sorts after it, or the first lxc.* line; else at the end of the content."""
    for index, kept_line in enumerate(kept[:end]):
        key, _value = _parse_line(kept_line)
        if key and (key.startswith("lxc.") or key > dev_key):
            return index
    return end


def update_conf(text, mode, gpu_minors, proc_devices, cgroup_layout="cgroup2", control_devices=DEFAULT_CONTROL_DEVICES,
                dir_entries=None, dev_options=None, shm_size=None, state="present", path="conf"):
    """Replace the owned lines of the main section; keep every other byte.

    text is bytes (as read; the result's text is then bytes) or str from decode_conf.
    state 'absent' removes the owned lines. New devN lines go where Proxmox's sorted key
    order puts them; new lxc.* lines go where the first owned lxc.* line was, else at the
    end of the main section. Added lines end like most kept lines do (CRLF or LF).
    Returns {text, changed, diff, lines, removed, majors}.
    """
    if state not in ("present", "absent"):
        raise PveLxcConfError("state: expected 'present' or 'absent', got %r" % (state,))
    check_options(mode, control_devices, dev_options, shm_size)
    as_bytes = isinstance(text, bytes)
    text = _text(text)
    main, rest = split_sections(text)
    manage_shm = shm_size is not None
    kept, owned = [], []
    first_lxc = None
    used_dev = set()
    for line in _lines(main):
        kind = classify_line(line, proc_devices, manage_shm)
        if kind is None:
            key, _value = _parse_line(line)
            match = _DEV_KEY_RE.fullmatch(key or "")
            if match:
                used_dev.add(int(match.group(1)))
            kept.append(line)
            continue
        owned.append(line)
        if kind == "lxc" and first_lxc is None:
            first_lxc = len(kept)
    # From the kept lines (then the owned ones), so the choice is the same on the next run.
    eol = _dominant_eol(kept + _lines(rest)) or _dominant_eol(owned) or "\n"

    new_lines = []
    if state == "present":
        free = [i for i in range(MAX_DEVICES) if i not in used_dev]
        new_lines = render_lines(mode, gpu_minors, proc_devices, cgroup_layout, control_devices,
                                 dir_entries, dev_options, shm_size, free)
    dev_block = [line + eol for line in new_lines if _DEV_KEY_RE.fullmatch(line.split(":", 1)[0])]
    lxc_block = [line + eol for line in new_lines if line.startswith("lxc.")]

    # End of the main section's content: after its last non-blank line.
    end = 0
    for index, line in enumerate(kept):
        if line.strip(_WS):
            end = index + 1
    inserts = {}
    # devN lines as Proxmox would order them, so a later Proxmox rewrite leaves them in place.
    for line in dev_block:
        inserts.setdefault(_dev_insert_position(line.split(":", 1)[0], kept, end), []).append(line)
    # lxc.* lines: where the first owned one was (so a block keeps its place), else at the end.
    if lxc_block:
        inserts.setdefault(first_lxc if first_lxc is not None else end, []).extend(lxc_block)
    # Appending after a last line without a line end needs one (and only then).
    if end and end in inserts and not kept[end - 1].endswith("\n"):
        kept[end - 1] += eol
    out = []
    for index in range(len(kept) + 1):
        out.extend(inserts.get(index, []))
        if index < len(kept):
            out.append(kept[index])
    new_main = "".join(out)
    if rest and new_main and not new_main.endswith("\n"):
        new_main += eol
    new_text = new_main + rest
    changed = new_text != text
    return {
        "text": encode_conf(new_text) if as_bytes else new_text,
        "changed": changed,
        "diff": unified_diff(text, new_text, path) if changed else "",
        "lines": new_lines,
        "removed": [display(_bare(line)) for line in owned],
        "majors": nvidia_char_majors(proc_devices),
    }


def _mounted_device_major_names(node):
    """/proc/devices names that serve a mounted /dev/<node>, or None when not ours to check."""
    if re.fullmatch(r"nvidia[0-9]+", node):
        return GPU_MAJOR_NAMES
    if node in CONTROL_DEVICES:
        return CONTROL_DEVICES[node][0]
    return None


def majors_drift(text, proc_devices):
    """Do the raw allow rules of the main section still match /proc/devices?

    Drift when a mounted /dev/nvidia* node's major (per /proc/devices now) is not
    allowed, when its driver is not in /proc/devices at all, or when an allow rule
    names a dynamic major no driver has now. devN entries never drift: Proxmox reads
    their majors at container start. checked is False when the conf has no raw
    NVIDIA lines.
    """
    main, _rest = split_sections(_text(text))
    majors = nvidia_char_majors(proc_devices)
    allowed, allow_all, mounts, owned_allow = set(), False, [], []
    for line in _lines(main):
        key, value = _parse_line(line)
        if key in CGROUP_KEYS.values():
            match = _ALLOW_RE.fullmatch(value.strip(_WS))
            if not match:
                continue
            if match.group(1) == "a" or (match.group(1) == "c" and match.group(2) == "*"):
                allow_all = True
            elif match.group(1) == "c":
                allowed.add(int(match.group(2)))
                if _owned_allow(value, proc_devices):
                    owned_allow.append(int(match.group(2)))
        elif key == "lxc.mount.entry":
            fields = _fields(value)
            if fields and fields[0].startswith("/dev/nvidia"):
                mounts.append(fields[0][len("/dev/"):].split("/")[0])
    messages = []
    for node in sorted(set(mounts)):
        names = _mounted_device_major_names(node)
        if names is None:
            continue
        major = next((majors[n] for n in names if n in majors), None)
        if major is None:
            messages.append("the conf mounts /dev/%s, but /proc/devices has no %s now (driver not loaded?)"
                            % (node, " or ".join(names)))
        elif not allow_all and major not in allowed:
            messages.append("the conf mounts /dev/%s, whose major is now %d (%s in /proc/devices), but no "
                            "devices.allow rule allows c %d:*; NVIDIA majors the conf allows: %s"
                            % (node, major, next(n for n in names if n in majors), major,
                               sorted(set(owned_allow)) or "none"))
    for major in sorted(set(owned_allow)):
        if not char_major_registered(proc_devices, major):
            messages.append("the conf allows c %d:* but no driver has character major %d now "
                            "(a leftover from an earlier driver load: the major moved)" % (major, major))
    return {
        "drift": bool(messages),
        "checked": bool(mounts or owned_allow),
        "messages": messages,
        "conf_majors": sorted(set(owned_allow)),
        "majors": majors,
    }


@contextlib.contextmanager
def lock_config(lock_path, timeout=10.0):
    """flock() the file Proxmox locks for the same container (PVE::LXC::Config->config_file_lock:
    /run/lock/lxc/pve-config-<vmid>.lock), so `pct set` and this editor do not interleave."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.time() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.time() >= deadline:
                    raise PveLxcConfError("%s: could not lock within %ss (%s); is a pct command holding it?"
                                          % (lock_path, timeout, exc))
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def write_atomic(path, data, expected_before=None):
    """Write data to path by a temp file in the same directory plus rename().

    Why this is atomic on /etc/pve (pmxcfs), from the sources:
    * Proxmox writes its own configs this way: cfs_write_file -> PVE::Tools::file_set_contents
      (proxmox/pve-cluster src/PVE/Cluster.pm, proxmox/pve-common src/PVE/File.pm) opens
      "<file>.tmp.<pid>" O_CREAT|O_EXCL, writes, and rename()s it over the file.
    * pmxcfs's rename (proxmox/pve-cluster src/pmxcfs/memdb.c memdb_rename) replaces the
      target entry under the memdb mutex with one database write (bdb_backend_write), and
      in a cluster the rename is one replicated DCDB_MESSAGE_CFS_RENAME; readers see the
      old file or the new one. Rewriting in place would not be: the pmxcfs docs note
      "O_TRUNC creates are not atomic (FUSE restriction)".
    * "<vmid>.conf.tmp.<pid>" is not taken for a guest config (name_is_vm_config() wants
      the name to end in ".conf"), so the temp file does not touch the VM list.
    * pmxcfs refuses chmod to anything but 0640 (0600 under priv/) (cfs_fuse_chmod), so a
      failing chmod is ignored; elsewhere the original mode is kept.
    data and expected_before are bytes (str is taken as decode_conf text), written as they are.
    expected_before: when given, the file must still hold exactly those bytes, or nothing
    is written (someone changed it meanwhile).
    """
    payload = data if isinstance(data, bytes) else encode_conf(data)
    if expected_before is not None:
        if not isinstance(expected_before, bytes):
            expected_before = encode_conf(expected_before)
        if read_bounded(path, "container config", max(MAX_CONF_BYTES, len(expected_before))) != expected_before:
            raise PveLxcConfError("%s changed while it was being edited; run again" % path)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mode = 0o640
    try:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            while payload:
                written = os.write(fd, payload)
                payload = payload[written:]
            try:
                os.fsync(fd)
            except OSError as exc:
                # A FUSE filesystem may not implement fsync; the rename still orders the write.
                if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
                    raise
            if (os.fstat(fd).st_mode & 0o7777) != mode:
                try:
                    os.fchmod(fd, mode)
                except OSError:
                    pass  # pmxcfs: modes follow the path
        finally:
            os.close(fd)
        os.rename(tmp, path)
    except (IOError, OSError) as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise PveLxcConfError("%s: could not write atomically via %s: %s" % (path, tmp, exc))
