# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""pve_lxc_conf on Proxmox container config shapes: byte-exact outside the owned lines,
idempotent, snapshot sections untouched, robust to Proxmox rewriting the file."""

import fcntl
import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.facts import parse_proc_devices
from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.pve_lxc_conf import (
    PveLxcConfError,
    classify_line,
    config_lock,
    detect_cgroup_layout,
    lock_config,
    majors_drift,
    render_lines,
    split_sections,
    update_conf,
    write_atomic,
)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
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
