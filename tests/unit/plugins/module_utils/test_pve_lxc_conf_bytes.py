# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""pve_lxc_conf byte for byte: CRLF, a missing final newline, bytes that are not UTF-8, lines split
only at "\\n", option values that must match whole, and files that are not a readable config.
Real files in tmp_path, exact bytes before and after."""

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import parse_proc_devices
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_conf import (
    MAX_CONF_BYTES,
    PveLxcConfError,
    classify_line,
    config_lock,
    decode_conf,
    display,
    read_bounded,
    render_lines,
    split_sections,
    unified_diff,
    update_conf,
    write_atomic,
)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
CAPS = {"nvidia-caps": ["nvidia-cap1", "nvidia-cap2"]}
CONTROL = ["nvidiactl", "nvidia-uvm"]


def _devices(name="pve_a6000.txt"):
    with open(os.path.join(DATA, "proc_devices", name)) as handle:
        return parse_proc_devices(handle.read())


PVE = _devices()
RAW_LINES = [
    b"lxc.cgroup2.devices.allow: c 195:* rwm",
    b"lxc.cgroup2.devices.allow: c 509:* rwm",
    b"lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    b"lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
    b"lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
]


def added(eol):
    return b"".join(line + eol for line in RAW_LINES)


def apply(data, mode="raw", **kwargs):
    kwargs.setdefault("dir_entries", CAPS)
    kwargs.setdefault("control_devices", CONTROL)
    return update_conf(data, mode, [0], PVE, **kwargs)


def edit_file(path, **kwargs):
    """What the module does: read the bytes, plan, write atomically only when changed."""
    before = read_bounded(str(path), "container config")
    result = apply(before, **kwargs)
    if result["changed"]:
        write_atomic(str(path), result["text"], expected_before=before)
    return result


def conf_file(tmp_path, data):
    path = tmp_path / "129.conf"
    path.write_bytes(data)
    return path


# --- line ends, final newline, trailing spaces ------------------------------------------------------

def test_crlf_file_keeps_crlf_and_adds_crlf_lines(tmp_path):
    before = b"arch: amd64\r\ncores: 16\r\nhostname: ct129\r\nmemory: 4096  \r\n"
    path = conf_file(tmp_path, before)
    result = edit_file(path)
    assert path.read_bytes() == before + added(b"\r\n")
    # The diff is the exact change: only additions, each with its CR.
    assert result["diff"] == ("--- a/conf\n+++ b/conf\n@@ -2,3 +2,8 @@\n cores: 16\r\n hostname: ct129\r\n"
                              " memory: 4096  \r\n"
                              + "".join("+%s\r\n" % line.decode() for line in RAW_LINES))
    again = edit_file(path)
    assert again["changed"] is False and again["diff"] == "" and path.read_bytes() == before + added(b"\r\n")


def test_crlf_owned_lines_replaced_in_place(tmp_path):
    before = (b"arch: amd64\r\nlxc.cgroup2.devices.allow: c 507:* rwm\r\n"
              b"lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\r\nswap: 0\r\n")
    path = conf_file(tmp_path, before)
    result = edit_file(path)
    assert path.read_bytes() == b"arch: amd64\r\n" + added(b"\r\n") + b"swap: 0\r\n"
    assert result["removed"][0] == "lxc.cgroup2.devices.allow: c 507:* rwm"


def test_mixed_line_ends_follow_the_dominant_one(tmp_path):
    crlf_mostly = b"arch: amd64\r\ncores: 2\r\nhostname: a\nmemory: 512\r\n"
    path = conf_file(tmp_path, crlf_mostly)
    edit_file(path)
    assert path.read_bytes() == crlf_mostly + added(b"\r\n")
    lf_mostly = b"arch: amd64\ncores: 2\nhostname: a\r\nmemory: 512\n"
    path = conf_file(tmp_path, lf_mostly)
    edit_file(path)
    assert path.read_bytes() == lf_mostly + added(b"\n")


def test_line_end_choice_is_stable_when_many_owned_lines_had_the_other_one(tmp_path):
    # Owned CRLF lines outnumber the kept LF lines: the kept lines decide, so run two changes nothing.
    before = b"arch: amd64\ncores: 2\n" + b"".join(
        b"lxc.cgroup2.devices.allow: c %d:* rwm\r\n" % major for major in (500, 501, 502, 503, 504, 505))
    path = conf_file(tmp_path, before)
    edit_file(path)
    assert path.read_bytes() == b"arch: amd64\ncores: 2\n" + added(b"\n")
    assert edit_file(path)["changed"] is False


def test_missing_final_newline_crlf(tmp_path):
    before = b"arch: amd64\r\nswap: 512"
    path = conf_file(tmp_path, before)
    edit_file(path)
    # The last line needs a line end before lines can follow it; it gets the file's own.
    assert path.read_bytes() == b"arch: amd64\r\nswap: 512\r\n" + added(b"\r\n")
    assert edit_file(path)["changed"] is False


def test_missing_final_newline_kept_when_nothing_follows(tmp_path):
    before = b"arch: amd64\r\nlxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\r\nswap: 512"
    path = conf_file(tmp_path, before)
    edit_file(path)
    assert path.read_bytes() == b"arch: amd64\r\n" + added(b"\r\n") + b"swap: 512"
    edit_file(path, state="absent")
    assert path.read_bytes() == b"arch: amd64\r\nswap: 512"


def test_trailing_spaces_and_tabs_kept(tmp_path):
    before = b"arch: amd64 \ncores: 2\t\nlxc.cap.drop: \n#note   \n"
    path = conf_file(tmp_path, before)
    edit_file(path)
    assert path.read_bytes() == before + added(b"\n")


# --- bytes that are not UTF-8, and characters str.splitlines() would split at ----------------------------

def test_non_utf8_description_kept_and_shown_escaped(tmp_path):
    before = b"#caf\xe9 \xff\xfe owner: \xc3\xa9quipe\narch: amd64\ncores: 2\n"
    path = conf_file(tmp_path, before)
    result = edit_file(path)
    assert path.read_bytes() == before + added(b"\n")
    assert "#caf\\xe9 \\xff\\xfe owner: \u00e9quipe" in display(path.read_bytes())
    assert "\ufffd" not in result["diff"]
    assert edit_file(path)["changed"] is False


def test_non_utf8_in_an_owned_line_is_removed_and_shown_escaped(tmp_path):
    before = b"arch: amd64\nlxc.mount.entry: /dev/nvidia9\xff dev/nvidia9 none bind,optional,create=file\n"
    path = conf_file(tmp_path, before)
    result = edit_file(path)
    assert path.read_bytes() == b"arch: amd64\n" + added(b"\n")
    assert result["removed"] == ["lxc.mount.entry: /dev/nvidia9\\xff dev/nvidia9 none bind,optional,create=file"]
    assert "-lxc.mount.entry: /dev/nvidia9\\xff dev/nvidia9" in result["diff"]


@pytest.mark.parametrize("separator", [b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\r", b"\xc2\x85",
                                       b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\x85"])
def test_comment_is_one_line_whatever_it_holds(tmp_path, separator):
    # Split anywhere but at "\n", the tail of this comment would look like a line of ours and be removed.
    comment = b"#see" + separator + b"lxc.cgroup2.devices.allow: c 195:* rwm\n"
    before = comment + b"arch: amd64\n"
    path = conf_file(tmp_path, before)
    result = edit_file(path)
    assert path.read_bytes() == before + added(b"\n")
    assert result["removed"] == []


def test_unicode_digits_and_spaces_are_not_ascii_ones():
    # int() takes other scripts' digits and str.split() other spaces; Proxmox and LXC do not.
    assert classify_line(u"lxc.cgroup2.devices.allow: c \u0661\u0669\u0665:* rwm\n", PVE) is None
    assert classify_line(u"lxc.mount.entry: tmpfs\u2003dev/shm tmpfs rw 0 0\n", PVE, manage_shm=True) is None
    assert classify_line(u"\xa0# BEGIN inference.gpu_host lxc_gpu\n", PVE) is None


def test_config_lock_from_bytes():
    assert config_lock(b"#\xff\r\nlock: backup\r\narch: amd64\r\n") == "backup"


# --- sections after the first header ---------------------------------------------------------------

def test_everything_from_the_first_header_is_byte_exact(tmp_path):
    main = b"arch: amd64\r\ncores: 2\r\n\r\n"
    rest = (b"[before_gpu]\r\n#snap \xff\r\nlxc.cgroup2.devices.allow: c 507:* rwm\r\ndev0: /dev/nvidia0\r\n"
            b"snaptime: 1700000000  \r\n\n[pve:pending]\nlxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind\n"
            b"delete: swap")
    path = conf_file(tmp_path, main + rest)
    edit_file(path)
    assert path.read_bytes() == b"arch: amd64\r\ncores: 2\r\n" + added(b"\r\n") + b"\r\n" + rest
    assert split_sections(path.read_bytes())[1] == rest
    edit_file(path, state="absent")
    assert path.read_bytes() == main + rest


# --- option values: a whole match, no line breaks or control characters ----------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(shm_size="16G\n"), r"shm_size: expected a tmpfs size .*got '16G\\n'"),
    (dict(shm_size="16G\nlxc.apparmor.profile: unconfined"), r"shm_size: expected"),
    (dict(shm_size="16G "), r"shm_size: expected"),
    (dict(shm_size="1\u0666G"), r"shm_size: expected"),
    (dict(mode="devices", dev_options="gid=44\n"), r"dev_options: 'gid=44\\n' is not one of"),
    (dict(mode="devices", dev_options="gid=44\r"), r"dev_options: 'gid=44\\r' is not one of"),
    (dict(mode="devices", dev_options="gid=4\x004"), r"dev_options: .* is not one of"),
    (dict(mode="devices", dev_options="gid=44,gid=45"), r"dev_options: 'gid=44,gid=45' sets gid twice"),
    (dict(mode="devices", control_devices=["nvidia-caps"], dir_entries={"nvidia-caps": ["nvidia-cap1\n"]}),
     r"dir_entries\['nvidia-caps'\]: 'nvidia-cap1\\n' is not a plain"),
    (dict(mode="devices", control_devices=["nvidia-caps"], dir_entries={"nvidia-caps": [".."]}),
     r"'\.\.' is not a plain device node name"),
    (dict(control_devices=["nvidiactl\n"]), r"control_devices: 'nvidiactl\\n' is not one of"),
    (dict(mode="raw\n"), r"mode: expected one of"),
])
def test_bad_value_refused_and_nothing_written(tmp_path, kwargs, match):
    before = b"arch: amd64\r\n#\xff\r\ncores: 2"
    path = conf_file(tmp_path, before)
    with pytest.raises(PveLxcConfError, match=match):
        edit_file(path, **kwargs)
    assert path.read_bytes() == before
    assert sorted(os.listdir(str(tmp_path))) == ["129.conf"]


def test_bad_value_refused_for_absent_too(tmp_path):
    path = conf_file(tmp_path, b"arch: amd64\n")
    with pytest.raises(PveLxcConfError, match="shm_size: expected"):
        edit_file(path, state="absent", shm_size="4G\n")
    assert path.read_bytes() == b"arch: amd64\n"


def test_rendered_lines_are_printable_ascii():
    for mode in ("raw", "devices"):
        lines = render_lines(mode, [0, 1], PVE, dir_entries=CAPS, shm_size="16G",
                             dev_options="gid=44,mode=0660" if mode == "devices" else None)
        assert all(re.fullmatch(r"[ -~]+", line) for line in lines)


# --- files that are not a readable config ---------------------------------------------------------

def test_conf_is_a_directory(tmp_path):
    path = tmp_path / "129.conf"
    path.mkdir()
    with pytest.raises(PveLxcConfError, match=r"container config .*129.conf is a directory, expected a file"):
        read_bounded(str(path), "container config")
    assert os.listdir(str(path)) == []


def test_conf_missing(tmp_path):
    with pytest.raises(PveLxcConfError, match=r"container config .*130.conf does not exist"):
        read_bounded(str(tmp_path / "130.conf"), "container config")


def test_conf_is_a_fifo(tmp_path):
    path = tmp_path / "129.conf"
    os.mkfifo(str(path))                                  # a blocking open would hang the run
    with pytest.raises(PveLxcConfError, match=r"is not a regular file"):
        read_bounded(str(path), "container config")


def test_conf_under_a_file_is_unreadable(tmp_path):
    (tmp_path / "lxc").write_bytes(b"")
    with pytest.raises(PveLxcConfError, match=r"cannot read container config .*lxc/129.conf: Not a directory"):
        read_bounded(str(tmp_path / "lxc" / "129.conf"), "container config")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_conf_without_read_permission(tmp_path):
    path = conf_file(tmp_path, b"arch: amd64\n")
    os.chmod(str(path), 0)
    with pytest.raises(PveLxcConfError, match=r"cannot read container config .*129.conf: Permission denied"):
        read_bounded(str(path), "container config")


def test_conf_over_the_size_bound(tmp_path):
    big = b"#" + b"x" * MAX_CONF_BYTES + b"\n"
    path = conf_file(tmp_path, big)
    with pytest.raises(PveLxcConfError, match=r"129.conf is larger than 1048576 bytes"):
        read_bounded(str(path), "container config")
    path.write_bytes(big[:MAX_CONF_BYTES])
    assert read_bounded(str(path), "container config") == big[:MAX_CONF_BYTES]


def test_write_refused_when_the_conf_turned_into_a_directory(tmp_path):
    path = tmp_path / "129.conf"
    path.mkdir()
    with pytest.raises(PveLxcConfError, match="is a directory"):
        write_atomic(str(path), b"arch: amd64\n", expected_before=b"arch: amd64\r\n")
    assert sorted(os.listdir(str(tmp_path))) == ["129.conf"]


def test_write_atomic_writes_bytes_as_they_are(tmp_path):
    path = conf_file(tmp_path, b"#\xff\r\n")
    write_atomic(str(path), b"#\xff\r\narch: amd64\r\n", expected_before=b"#\xff\r\n")
    assert path.read_bytes() == b"#\xff\r\narch: amd64\r\n"


def test_unified_diff_is_exact():
    diff = unified_diff(b"a: 1\r\n#\xff\r\n", b"a: 1\n#\xff\r\n", "x")
    assert diff == "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a: 1\r\n+a: 1\n #\\xff\r\n"


# --- property: random confs keep their bytes; a second run changes nothing -----------------------------

_HEADER = re.compile(rb"\[[^\]\n]+\][ \t\r\n\f\v]*")
_TEMPLATES = [
    b"arch: amd64", b"cores: 4", b"memory: 2048", b"swap: 0", b"dev0: /dev/dri/card0", b"dev3: /dev/nvidia1",
    b"dev7: path=/dev/nvidia-uvm,mode=0666", b"lxc.apparmor.profile: unconfined", b"lxc.cap.drop: ",
    b"lxc.cgroup2.devices.allow: c 10:200 rwm", b"lxc.cgroup2.devices.allow: c 195:* rwm",
    b"lxc.cgroup.devices.allow: c 507:* rwm", b"lxc.cgroup2.devices.allow = c 511:0 rw",
    b"lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    b"lxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir",
    b"lxc.mount.entry: tmpfs dev/shm tmpfs rw,size=4G,create=dir 0 0", b"# END inference.gpu_host lxc_gpu",
    b"#descr \xff\xfe", b"#caf\xc3\xa9", b"", b"  ", b"[snap1]", b"[pve:pending]", b"[x y]", b"lock: backup",
]
# Pieces that trip a parser: line breaks other than LF (for str.splitlines()), bytes that are not UTF-8,
# header brackets, and fragments of the lines this editor owns.
_PIECES = [b"\r", b"\x0c", b"\x85", b"\xe2\x80\xa8", b"\xff", b"#", b"[", b"]", b"lxc.", b": ", b"c 195:* rwm",
           b"/dev/nvidia0", b" ", b"\t", b"dev1: "]
_NOISE = (st.binary(max_size=12).map(lambda b: b.replace(b"\n", b""))
          | st.lists(st.sampled_from(_PIECES), max_size=6).map(b"".join))
_BODY = st.one_of(st.sampled_from(_TEMPLATES), _NOISE, st.tuples(st.sampled_from(_TEMPLATES), _NOISE).map(b"".join))
_LINE = st.tuples(_BODY, st.sampled_from([b"\n", b"\r\n"]))


@st.composite
def _confs(draw):
    lines = [body + eol for body, eol in draw(st.lists(_LINE, max_size=14))]
    if lines and draw(st.booleans()):
        lines[-1] = lines[-1].rstrip(b"\r\n")          # no final line end
    return b"".join(lines)


def _split_lines(data):
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _main_rest(data):
    """Independent of the editor: the main section ends at the first line that is '[...]'."""
    offset = 0
    for line in _split_lines(data):
        if _HEADER.fullmatch(line.rstrip(b"\r\n")):
            return data[:offset], data[offset:]
        offset += len(line)
    return data, b""


def _dominant(lines):
    """The line end most lines have (CRLF only when more than bare LF); None when no line has one."""
    crlf = sum(1 for line in lines if line.endswith(b"\r\n"))
    lf = sum(1 for line in lines if line.endswith(b"\n")) - crlf
    return (b"\r\n" if crlf > lf else b"\n") if crlf or lf else None


def _owned(line, manage_shm):
    return classify_line(decode_conf(line), PVE, manage_shm) is not None


@given(data=_confs(), mode=st.sampled_from(["raw", "devices"]), shm=st.sampled_from([None, "16G"]),
       state=st.sampled_from(["present", "present", "absent"]))
def test_property_unowned_bytes_kept_and_idempotent(data, mode, shm, state):
    manage_shm = shm is not None
    first = apply(data, mode, shm_size=shm, state=state)
    out = first["text"]
    main_in, rest_in = _main_rest(data)
    main_out, rest_out = _main_rest(out)
    assert rest_out == rest_in                                     # every byte from the first header on
    kept_in = [line for line in _split_lines(main_in) if not _owned(line, manage_shm)]
    kept_out = [line for line in _split_lines(main_out) if not _owned(line, manage_shm)]
    ours_out = [line for line in _split_lines(main_out) if _owned(line, manage_shm)]
    if kept_out != kept_in:
        # Only allowed difference: the unterminated last line got a line end so that lines could follow it.
        assert kept_in and not kept_in[-1].endswith(b"\n") and not rest_in
        assert kept_out[:-1] == kept_in[:-1] and kept_out[-1] in (kept_in[-1] + b"\n", kept_in[-1] + b"\r\n")
        assert ours_out
    # What the editor owns in the result is exactly what it rendered, each line with one and the same line end.
    assert sorted(line.rstrip(b"\r\n") for line in ours_out) == sorted(l.encode() for l in first["lines"])
    owned_in = [line for line in _split_lines(main_in) if _owned(line, manage_shm)]
    eol = _dominant(kept_in + _split_lines(rest_in)) or _dominant(owned_in) or b"\n"
    assert all(line.endswith(eol) and not line[:-len(eol)].endswith(b"\r") for line in ours_out)
    assert first["changed"] == (out != data) and bool(first["diff"]) == first["changed"]
    second = apply(out, mode, shm_size=shm, state=state)
    assert second["text"] == out and second["changed"] is False and second["diff"] == ""


@settings(max_examples=60)
@given(data=_confs())
def test_property_split_sections_and_display(data):
    main, rest = split_sections(data)
    assert (main, rest) == _main_rest(data)
    assert display(data).encode("utf-8", "surrogateescape").count(b"\n") == data.count(b"\n")
