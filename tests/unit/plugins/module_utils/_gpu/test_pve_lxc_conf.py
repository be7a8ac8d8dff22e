# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""pve_lxc_conf on Proxmox container config shapes: byte-exact outside the owned lines,
idempotent, snapshot sections untouched, robust to Proxmox rewriting the file; and byte for byte: CRLF, a
missing final newline, bytes that are not UTF-8, lines split only at "\\n", option values that must match
whole, and files that are not a readable config (real files in tmp_path, exact bytes before and after)."""

import fcntl
import os
import re
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import parse_proc_devices
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_conf import (
    MAX_CONF_BYTES,
    PveLxcConfError,
    classify_line,
    config_lock,
    decode_conf,
    detect_cgroup_layout,
    display,
    lock_config,
    majors_drift,
    read_bounded,
    render_lines,
    split_sections,
    unified_diff,
    update_conf,
    write_atomic,
)

# The captured files are shared by the module_utils tests: tests/unit/plugins/module_utils/data.
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
CONFS = sorted(f for f in os.listdir(os.path.join(DATA, "pve_conf")) if f.endswith(".conf"))
CAPS = {"nvidia-caps": ["nvidia-cap1", "nvidia-cap2"]}


def read(*parts):
    with open(os.path.join(DATA, *parts)) as handle:
        return handle.read()


def conf(name):
    return read("pve_conf", name)


def devices(name="pve_a6000.txt"):
    return parse_proc_devices(read("proc_devices", name))


PVE = devices()
H200 = devices("h200.txt")


def apply(text, mode="raw", minors=(0, 1), proc=None, **kwargs):
    kwargs.setdefault("dir_entries", CAPS)
    return update_conf(text, mode, list(minors), PVE if proc is None else proc, **kwargs)


def unowned(text, proc=None, manage_shm=False):
    """The main section's lines this editor does not own, byte for byte (blank lines included)."""
    proc = PVE if proc is None else proc
    main, _rest = split_sections(text)
    return [line.rstrip("\n") for line in main.splitlines(True) if classify_line(line, proc, manage_shm) is None]


def pve_rewrite(text):
    """What Proxmox writes back after reading a config (parse_pct_config + write_pct_config in
    proxmox/pve-container src/PVE/LXC/Config.pm): comments become the description at the top of
    each section, blank lines go, plain keys are sorted, lxc.* keys follow in order as "k: v",
    then [pve:pending] and the snapshots (sorted) each after a blank line. Description text is
    ASCII here, so decode_text/encode_text are the identity."""
    sections, order = {}, []
    current = ""
    sections[current] = {"descr": [], "keys": {}, "lxc": []}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("[") and line.rstrip().endswith("]"):
            current = line.strip()[1:-1]
            sections[current] = {"descr": [], "keys": {}, "lxc": []}
            order.append(current)
            continue
        if line.startswith("#"):
            sections[current]["descr"].append(line[1:])
            continue
        if line.startswith("lxc."):
            key, sep, value = line.partition(":")
            if not sep or "=" in key:
                key, _sep, value = line.partition("=")
            sections[current]["lxc"].append((key.strip(), value.strip()))
            continue
        key, _sep, value = line.partition(":")
        sections[current]["keys"][key] = value.strip()

    def render(section):
        out = "".join("#%s\n" % d for d in section["descr"])
        out += "".join("%s: %s\n" % (k, section["keys"][k]) for k in sorted(section["keys"]))
        out += "".join("%s: %s\n" % kv for kv in section["lxc"])
        return out

    raw = render(sections[""])
    if "pve:pending" in sections:
        raw += "\n[pve:pending]\n" + render(sections["pve:pending"])
    for name in sorted(n for n in order if n != "pve:pending"):
        raw += "\n[%s]\n" % name + render(sections[name])
    return raw


# --- sections ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CONFS)
def test_split_sections_is_lossless(name):
    text = conf(name)
    main, rest = split_sections(text)
    assert main + rest == text
    assert not rest or rest.lstrip("\n").startswith("[")


def test_split_sections_finds_first_header():
    main, rest = split_sections(conf("snapshots.conf"))
    assert rest.startswith("[before_gpu]\n")
    assert "snaptime" not in main
    main, rest = split_sections(conf("pending.conf"))
    assert rest == "[pve:pending]\ndev0: /dev/nvidia0\nmemory: 262144\n"


def test_config_lock():
    assert config_lock(conf("locked.conf")) == "backup"
    assert config_lock(conf("plain.conf")) is None


# --- cgroup layout ----------------------------------------------------------------------------

def test_cgroup_layout_captured_mount_tables():
    # This test machine: devices controller on cgroup v1 (LXC ignores cgroup2 keys there).
    assert detect_cgroup_layout(read("proc_mounts", "test_host_hybrid.txt")) == "cgroup"
    # The H200 host: unified hierarchy only, like Proxmox VE 7+.
    assert detect_cgroup_layout(read("proc_mounts", "h200_unified.txt")) == "cgroup2"


def test_cgroup_layout_unknown():
    with pytest.raises(PveLxcConfError, match="no cgroup2 mount"):
        detect_cgroup_layout("proc /proc proc rw 0 0\n")


# --- rendering ----------------------------------------------------------------------------------

def test_raw_lines_majors_from_proc_devices():
    assert render_lines("raw", [0, 1], PVE, "cgroup2", dir_entries=CAPS) == [
        "lxc.cgroup2.devices.allow: c 195:* rwm",
        "lxc.cgroup2.devices.allow: c 509:* rwm",
        "lxc.cgroup2.devices.allow: c 511:* rwm",
        "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia1 dev/nvidia1 none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia-uvm-tools dev/nvidia-uvm-tools none bind,optional,create=file",
        "lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir",
    ]


def test_raw_lines_h200_majors_and_cgroup_v1_key():
    lines = render_lines("raw", [0], H200, "cgroup")
    assert lines[:3] == ["lxc.cgroup.devices.allow: c 195:* rwm", "lxc.cgroup.devices.allow: c 238:* rwm",
                         "lxc.cgroup.devices.allow: c 241:* rwm"]


def test_raw_lines_follow_a_moved_major():
    lines = render_lines("raw", [0], devices("pve_a6000_uvm_moved.txt"), "cgroup2")
    assert "lxc.cgroup2.devices.allow: c 508:* rwm" in lines
    assert "lxc.cgroup2.devices.allow: c 509:* rwm" not in lines


def test_raw_needs_uvm_loaded():
    with pytest.raises(PveLxcConfError, match=r"no character device 'nvidia-uvm'.*nvidia-modprobe -u -c 0"):
        render_lines("raw", [0], devices("pve_a6000_no_uvm.txt"), "cgroup2")


def test_raw_needs_a_driver():
    with pytest.raises(PveLxcConfError, match=r"no character device 'nvidia' or 'nvidia-frontend'"):
        render_lines("raw", [0], devices("test_host_no_nvidia.txt"), "cgroup2")


def test_devices_lines_in_proxmox_key_order():
    lines = render_lines("devices", list(range(10)), PVE, dir_entries=CAPS, dev_options="gid=44")
    keys = [line.split(":", 1)[0] for line in lines]
    assert keys == sorted(keys)          # Perl string order: dev0, dev1, dev10, dev11, dev2, ...
    assert keys[:4] == ["dev0", "dev1", "dev10", "dev11"]
    assert "dev10: /dev/nvidiactl,gid=44" in lines
    assert "dev14: /dev/nvidia-caps/nvidia-cap2,gid=44" in lines


def test_devices_skip_used_indices():
    lines = render_lines("devices", [0], PVE, control_devices=["nvidiactl"], dev_indices=[1, 4])
    assert lines == ["dev1: /dev/nvidia0", "dev4: /dev/nvidiactl"]


def test_shm_line():
    assert render_lines("raw", [0], PVE, shm_size="16G")[-1] == \
        "lxc.mount.entry: tmpfs dev/shm tmpfs rw,nosuid,nodev,size=16G,create=dir 0 0"


@pytest.mark.parametrize("kwargs, match", [
    (dict(mode="lxc"), "mode: expected one of"),
    (dict(gpu_minors=[]), "no GPU selected"),
    (dict(gpu_minors=["0"]), "expected device minors"),
    (dict(gpu_minors=[255]), "expected device minors"),
    (dict(control_devices=["nvidia-fs"]), "control_devices: 'nvidia-fs' is not one of"),
    (dict(dev_options="gid=44,rw=1"), "dev_options: 'rw=1'"),
    (dict(shm_size="lots"), "shm_size: expected a tmpfs size"),
    (dict(mode="devices", dir_entries={"nvidia-caps": ["../x"]}), "not a plain device node name"),
])
def test_render_rejects(kwargs, match):
    args = dict(mode="raw", gpu_minors=[0], proc_devices=PVE)
    args.update(kwargs)
    with pytest.raises(PveLxcConfError, match=match):
        render_lines(**args)


def test_too_many_devices():
    with pytest.raises(PveLxcConfError, match="only 2 of dev0-dev255 are free"):
        render_lines("devices", [0, 1, 2], PVE, control_devices=[], dev_indices=[7, 8])


# --- ownership -----------------------------------------------------------------------------------

@pytest.mark.parametrize("line, owned", [
    ("lxc.cgroup2.devices.allow: c 195:* rwm", "lxc"),
    ("lxc.cgroup.devices.allow: c 509:* rwm", "lxc"),
    ("lxc.cgroup2.devices.allow = c 195:0 rw", "lxc"),
    ("lxc.cgroup2.devices.allow: c 507:* rwm", "lxc"),        # dynamic, no driver has it now: stale
    ("lxc.cgroup2.devices.allow: c 226:* rwm", None),         # drm
    ("lxc.cgroup2.devices.allow: c 10:200 rwm", None),        # misc (tun)
    ("lxc.cgroup2.devices.allow: c 188:* rwm", None),         # static ttyUSB major, module not loaded: not ours
    ("lxc.cgroup2.devices.allow: c 238:* rwm", None),         # dynamic but registered (hidraw here)
    ("lxc.cgroup2.devices.allow: b 195:* rwm", None),
    ("lxc.cgroup2.devices.allow: a", None),
    ("lxc.cgroup2.devices.deny: c 195:* rwm", None),
    ("lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file", "lxc"),
    ("lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir", "lxc"),
    ("lxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir", None),
    ("lxc.mount.entry: tmpfs dev/shm tmpfs rw,size=4G,create=dir 0 0", None),
    ("dev1: /dev/nvidia0", "dev"),
    ("dev3: path=/dev/nvidia-uvm,mode=0666", "dev"),
    ("dev0: /dev/dri/renderD128,gid=104", None),
    ("# BEGIN inference.gpu_host lxc_gpu", "marker"),
    ("#ct129%3A two RTX A6000", None),
    ("memory: 131072", None),
    ("", None),
])
def test_classify_line(line, owned):
    assert classify_line(line + "\n", PVE) == owned


def test_shm_owned_only_when_managed():
    line = "lxc.mount.entry: tmpfs dev/shm tmpfs rw,nosuid,nodev,size=4G,create=dir 0 0\n"
    assert classify_line(line, PVE) is None
    assert classify_line(line, PVE, manage_shm=True) == "lxc"


# --- whole-file edits: byte-exact, idempotent ------------------------------------------------------

@pytest.mark.parametrize("mode", ["raw", "devices"])
@pytest.mark.parametrize("name", [n for n in CONFS if n != "shm.conf"])
def test_only_owned_lines_change_and_second_apply_is_a_no_op(name, mode):
    before = conf(name)
    first = apply(before, mode)
    _main, rest = split_sections(before)
    assert split_sections(first["text"])[1] == rest                     # snapshots, pending: untouched
    assert unowned(first["text"]) == unowned(before)                     # every other line, in order
    owned_now = [l for l in split_sections(first["text"])[0].splitlines() if classify_line(l, PVE)]
    assert sorted(owned_now) == sorted(first["lines"])
    second = apply(first["text"], mode)
    assert second["changed"] is False and second["text"] == first["text"] and second["diff"] == ""
    assert sorted(second["removed"]) == sorted(first["lines"])


@pytest.mark.parametrize("mode", ["raw", "devices"])
@pytest.mark.parametrize("name", CONFS)
def test_survives_a_proxmox_rewrite(name, mode):
    """After `pct set` or a GUI edit rewrites the file, our lines are still ours: no change."""
    first = apply(conf(name), mode)
    rewritten = pve_rewrite(first["text"])
    again = apply(rewritten, mode)
    assert again["changed"] is False, again["diff"]


def test_comment_markers_would_not_survive_a_proxmox_rewrite():
    """Why ownership is by content: Proxmox moves every comment of a section to its top."""
    rewritten = pve_rewrite(conf("legacy_markers.conf"))
    lines = rewritten.splitlines()
    assert lines[:2] == ["# BEGIN inference.gpu_host lxc_gpu", "# END inference.gpu_host lxc_gpu"]
    assert apply(rewritten)["text"].count("# BEGIN") == 0


def test_plain_conf_raw_exact():
    result = apply(conf("plain.conf"), minors=[0], control_devices=["nvidiactl", "nvidia-uvm"], path="129.conf")
    assert result["text"] == conf("plain.conf") + (
        "lxc.cgroup2.devices.allow: c 195:* rwm\n"
        "lxc.cgroup2.devices.allow: c 509:* rwm\n"
        "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file\n"
        "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file\n"
        "lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file\n")
    assert result["changed"] is True
    assert result["diff"].startswith("--- a/129.conf\n+++ b/129.conf\n@@ -9,3 +9,8 @@\n")
    assert result["diff"].count("\n+lxc.") == 5


def test_plain_conf_devices_exact():
    result = apply(conf("plain.conf"), "devices", minors=[0], control_devices=["nvidiactl", "nvidia-uvm"])
    assert result["text"] == conf("plain.conf").replace(
        "cores: 16\n", "cores: 16\ndev0: /dev/nvidia0\ndev1: /dev/nvidiactl\ndev2: /dev/nvidia-uvm\n")


def test_snapshots_untouched_and_stale_major_replaced():
    before = conf("snapshots.conf")
    result = apply(before, minors=[0], control_devices=["nvidiactl", "nvidia-uvm"])
    main, rest = split_sections(result["text"])
    assert rest == split_sections(before)[1]
    assert rest.count("c 507:* rwm") == 1                 # the [after_driver] snapshot keeps its history
    assert "c 507:* rwm" not in main and "c 509:* rwm" in main
    assert "lxc.cgroup2.devices.allow: c 507:* rwm" in result["removed"]


def test_pending_section_untouched():
    result = apply(conf("pending.conf"), "devices")
    assert result["text"].endswith("\n\n[pve:pending]\ndev0: /dev/nvidia0\nmemory: 262144\n")
    assert "dev0: /dev/nvidia0\ndev1: /dev/nvidia1\n" in split_sections(result["text"])[0]


def test_unrelated_lxc_lines_byte_exact():
    before = conf("unrelated_lxc.conf")
    result = apply(before)
    assert result["text"].startswith(before)              # appended after, nothing before touched
    assert "lxc.cap.drop: \n" in result["text"]           # trailing space kept


def test_devices_keep_foreign_dev_entries_and_their_numbers():
    before = conf("devices.conf")
    result = apply(before, "devices")
    assert "dev0: /dev/dri/renderD128,gid=104\n" in result["text"]
    assert "dev3: path=/dev/nvidia-uvm,mode=0666" in result["removed"]
    assert [l for l in result["lines"] if l.startswith("dev0:")] == []
    assert result["lines"][0] == "dev1: /dev/nvidia0"


def test_switching_mode_removes_the_other_modes_lines():
    raw = apply(conf("devices.conf"), "raw")["text"]
    assert "/dev/nvidia" not in "".join(l for l in raw.splitlines(True) if l.startswith("dev"))
    back = apply(raw, "devices")["text"]
    assert "lxc.mount.entry: /dev/nvidia" not in back and "c 195:* rwm" not in back


def test_old_block_gathers_and_keeps_foreign_lines():
    before = conf("old_block.conf")
    result = apply(before)
    assert "lxc.mount.entry: /dev/nvidia-modeset dev/nvidia-modeset none bind,optional,create=file" in result["removed"]
    assert unowned(result["text"]) == unowned(before)
    with_modeset = apply(before, control_devices=["nvidiactl", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"])
    assert "lxc.mount.entry: /dev/nvidia-modeset dev/nvidia-modeset none bind,optional,create=file" in with_modeset["lines"]


def test_hand_edited_block_keeps_its_place():
    before = conf("hand_edited.conf")
    result = apply(before, minors=[0], control_devices=["nvidiactl", "nvidia-uvm"])
    # Same place, same lines, only the separators change to Proxmox's "key: value".
    assert result["text"] == before.replace(" = ", ": ")


def test_legacy_markers_dropped():
    result = apply(conf("legacy_markers.conf"))
    assert "# BEGIN" not in result["text"] and "# END" not in result["text"]


def test_no_final_newline():
    before = conf("no_final_newline.conf")
    raw = apply(before)["text"]
    assert raw.startswith(before + "\nlxc.cgroup2")
    devs = apply(before, "devices")["text"]
    assert devs.endswith("swap: 512")                      # nothing appended: no newline added


def test_shm_managed():
    before = conf("shm.conf")
    result = apply(before, minors=[0], shm_size="64G")
    assert "size=4G" not in result["text"] and "size=64G" in result["text"]
    assert result["text"].count("dev/shm") == 1
    untouched = apply(before, minors=[0])
    assert "size=4G" in untouched["text"]


@pytest.mark.parametrize("name", CONFS)
def test_absent_removes_every_owned_line(name):
    before = conf(name)
    result = update_conf(before, "raw", [], PVE, state="absent")
    assert result["lines"] == []
    main = split_sections(result["text"])[0]
    assert not [l for l in main.splitlines() if classify_line(l, PVE)]
    assert unowned(result["text"]) == unowned(before)
    assert split_sections(result["text"])[1] == split_sections(before)[1]


def test_bad_state():
    with pytest.raises(PveLxcConfError, match="state: expected"):
        update_conf("", "raw", [0], PVE, state="gone")


# --- majors drift ------------------------------------------------------------------------------

def test_drift_when_uvm_major_moved():
    applied = apply(conf("plain.conf"))["text"]
    assert majors_drift(applied, PVE)["drift"] is False
    drift = majors_drift(applied, devices("pve_a6000_uvm_moved.txt"))
    assert drift["drift"] is True and drift["checked"] is True
    assert any("mounts /dev/nvidia-uvm, whose major is now 508" in m for m in drift["messages"])
    assert any("allows c 509:* but no driver has character major 509 now" in m for m in drift["messages"])
    assert drift["conf_majors"] == [195, 509, 511]
    # Applying again on the moved node fixes it, and the stale rule goes.
    fixed = apply(applied, proc=devices("pve_a6000_uvm_moved.txt"))
    assert "lxc.cgroup2.devices.allow: c 509:* rwm" in fixed["removed"]
    assert majors_drift(fixed["text"], devices("pve_a6000_uvm_moved.txt"))["drift"] is False


def test_drift_when_driver_not_loaded():
    drift = majors_drift(apply(conf("plain.conf"))["text"], devices("pve_a6000_no_uvm.txt"))
    assert drift["drift"] is True
    assert any("mounts /dev/nvidia-uvm, but /proc/devices has no nvidia-uvm now" in m for m in drift["messages"])


def test_no_drift_check_for_devn_or_plain():
    assert majors_drift(conf("devices.conf"), PVE)["checked"] is False
    expected = {"drift": False, "checked": False, "messages": [], "conf_majors": [], "majors": majors_drift("", PVE)["majors"]}
    assert majors_drift(conf("plain.conf"), PVE) == expected


def test_drift_on_the_snapshot_fixture():
    drift = majors_drift(conf("snapshots.conf"), PVE)
    assert drift["drift"] is True and drift["conf_majors"] == [195, 507]


# --- property: random foreign lines survive byte for byte ------------------------------------------

_FOREIGN = st.sampled_from([
    "arch: amd64", "cores: 4", "hostname: ct1", "memory: 2048", "swap: 0", "dev0: /dev/dri/card0",
    "dev7: /dev/ttyUSB0,mode=0660", "lxc.apparmor.profile: unconfined", "lxc.cgroup2.devices.allow: c 10:200 rwm",
    "lxc.cgroup2.devices.allow: c 226:* rwm", "lxc.mount.entry: /dev/dri dev/dri none bind,optional,create=dir",
    "#a note", "", "lxc.cap.drop: ", "features: nesting=1",
])
_OURS = st.sampled_from([
    "lxc.cgroup2.devices.allow: c 195:* rwm", "lxc.cgroup2.devices.allow: c 500:* rwm",
    "lxc.mount.entry: /dev/nvidia3 dev/nvidia3 none bind,optional,create=file", "dev2: /dev/nvidia0",
    "lxc.cgroup.devices.allow: c 511:* rwm", "# END inference.gpu_host lxc_gpu",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.one_of(_FOREIGN, _OURS), max_size=25), mode=st.sampled_from(["raw", "devices"]),
       snapshot=st.booleans())
def test_property_foreign_bytes_kept_and_idempotent(lines, mode, snapshot):
    text = "".join(line + "\n" for line in lines)
    if snapshot:
        text += "\n[snap1]\nlxc.cgroup2.devices.allow: c 195:* rwm\ndev2: /dev/nvidia0\n"
    first = apply(text, mode)
    assert unowned(first["text"]) == unowned(text)
    assert split_sections(first["text"])[1] == split_sections(text)[1]
    assert apply(first["text"], mode)["changed"] is False
    assert apply(pve_rewrite(first["text"]), mode)["changed"] is False


# --- writing ----------------------------------------------------------------------------------------

def test_write_atomic_keeps_mode_and_leaves_no_temp(tmp_path):
    path = tmp_path / "129.conf"
    path.write_text("arch: amd64\n")
    os.chmod(str(path), 0o640)
    inode = os.stat(str(path)).st_ino
    write_atomic(str(path), "arch: amd64\ncores: 2\n", expected_before="arch: amd64\n")
    assert path.read_text() == "arch: amd64\ncores: 2\n"
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o640
    assert os.stat(str(path)).st_ino != inode              # replaced by rename, not rewritten in place
    assert sorted(os.listdir(str(tmp_path))) == ["129.conf"]


def test_write_atomic_refuses_a_concurrent_change(tmp_path):
    path = tmp_path / "129.conf"
    path.write_text("arch: amd64\nmemory: 4096\n")
    with pytest.raises(PveLxcConfError, match="changed while it was being edited"):
        write_atomic(str(path), "x\n", expected_before="arch: amd64\n")
    assert path.read_text() == "arch: amd64\nmemory: 4096\n"


def test_write_atomic_cleans_up_on_failure(tmp_path):
    target = tmp_path / "dir.conf"
    target.mkdir()                                            # rename over a directory fails
    with pytest.raises(PveLxcConfError, match="could not write atomically"):
        write_atomic(str(target), "x\n")
    assert sorted(os.listdir(str(tmp_path))) == ["dir.conf"]


def test_lock_config_waits_for_pct_then_gives_up(tmp_path):
    lock = str(tmp_path / "pve-config-129.lock")
    with lock_config(lock):
        pass                                                  # free: taken at once
    holder = os.open(lock, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)                        # as `pct set` would hold it
    try:
        with pytest.raises(PveLxcConfError, match="could not lock within 0.3s"):
            with lock_config(lock, timeout=0.3):
                pass
    finally:
        os.close(holder)


# ---------------------------------------------------------------- byte for byte

CONTROL = ["nvidiactl", "nvidia-uvm"]
RAW_LINES = [
    b"lxc.cgroup2.devices.allow: c 195:* rwm",
    b"lxc.cgroup2.devices.allow: c 509:* rwm",
    b"lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    b"lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file",
    b"lxc.mount.entry: /dev/nvidia-uvm dev/nvidia-uvm none bind,optional,create=file",
]


def added(eol):
    return b"".join(line + eol for line in RAW_LINES)


def apply_bytes(data, mode="raw", **kwargs):
    kwargs.setdefault("dir_entries", CAPS)
    kwargs.setdefault("control_devices", CONTROL)
    return update_conf(data, mode, [0], PVE, **kwargs)


def edit_file(path, **kwargs):
    """What the module does: read the bytes, plan, write atomically only when changed."""
    before = read_bounded(str(path), "container config")
    result = apply_bytes(before, **kwargs)
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
    first = apply_bytes(data, mode, shm_size=shm, state=state)
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
    second = apply_bytes(out, mode, shm_size=shm, state=state)
    assert second["text"] == out and second["changed"] is False and second["diff"] == ""


@settings(max_examples=60)
@given(data=_confs())
def test_property_split_sections_and_display(data):
    main, rest = split_sections(data)
    assert (main, rest) == _main_rest(data)
    assert display(data).encode("utf-8", "surrogateescape").count(b"\n") == data.count(b"\n")


@pytest.mark.parametrize("value", ["gid=44\x85", "gid=44\u2028", "gid=4\u00e94"])
def test_no_rendered_line_holds_a_control_or_non_ascii_character(value):
    # dev_options is checked whole before rendering; render_lines refuses such a line on its own too.
    with pytest.raises(PveLxcConfError):
        render_lines("devices", [0], PVE, control_devices=[], dev_options=value)
