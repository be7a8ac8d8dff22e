# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""proxmox_lxc_gpu_conf run for real as a subprocess against a conf_dir, dev_dir and lock_dir in
tmp_path, with /proc/devices and /proc/mounts taken from captured or reconstructed files."""

import fcntl
import os
import re

import pytest
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
DATA = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data")


def data(*parts):
    return os.path.join(DATA, *parts)


def read_data(*parts):
    with open(data(*parts)) as handle:
        return handle.read()


@pytest.fixture
def node(tmp_path):
    """A stand-in Proxmox node: conf dir, /dev with two GPUs' nodes, the lock dir."""
    confdir = tmp_path / "lxc"
    confdir.mkdir()
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "dri"):
        (dev / name).write_text("")
    (dev / "nvidia-caps").mkdir()
    for name in ("nvidia-cap1", "nvidia-cap2"):
        (dev / "nvidia-caps" / name).write_text("")
    lock = tmp_path / "lock"
    lock.mkdir()
    return tmp_path


def warnings(result):
    """Warning texts; ansible-core 2.19 returns them as {"event": {"msg": ...}} objects."""
    return [w["event"]["msg"] if isinstance(w, dict) else w for w in result.get("warnings", [])]


def put_conf(node, name, vmid=129):
    path = node / "lxc" / ("%d.conf" % vmid)
    path.write_text(read_data("pve_conf", name))
    return path


def run_module(node, args, check_mode=False, diff=False):
    module_args = {
        "vmid": 129,
        "conf_dir": str(node / "lxc"),
        "dev_dir": str(node / "dev"),
        "lock_dir": str(node / "lock"),
        "proc_devices": data("proc_devices", "pve_a6000.txt"),
        "proc_mounts": data("proc_mounts", "h200_unified.txt"),
    }
    module_args.update(args)
    return _module_runner.run_module("proxmox_lxc_gpu_conf", node, module_args, check=check_mode, diff=diff,
                                     args_name="args.json")


def test_raw_apply_then_idempotent(node):
    path = put_conf(node, "plain.conf")
    before = path.read_text()
    first = run_module(node, {"mode": "raw"})
    assert first["changed"] is True, first
    after = path.read_text()
    assert after.startswith(before)
    assert after[len(before):] == "".join(line + "\n" for line in first["lines"])
    assert first["lines"][:3] == ["lxc.cgroup2.devices.allow: c 195:* rwm", "lxc.cgroup2.devices.allow: c 509:* rwm",
                                  "lxc.cgroup2.devices.allow: c 511:* rwm"]
    assert first["cgroup_key"] == "lxc.cgroup2.devices.allow"
    assert first["gpu_minors"] == [0, 1]
    assert first["majors"]["nvidia-uvm"] == 509
    assert first["diff"]["before"] == before and first["diff"]["after"] == after
    assert first["unified_diff"].startswith("--- a/129.conf\n+++ b/129.conf\n")
    assert sorted(os.listdir(str(node / "lxc"))) == ["129.conf"]          # no temp file left
    second = run_module(node, {"mode": "raw"})
    assert second["changed"] is False and path.read_text() == after
    assert second["unified_diff"] == ""
    assert second["majors_drift"]["drift"] is False and second["majors_drift"]["checked"] is True


def test_check_mode_and_diff_do_not_write(node):
    path = put_conf(node, "old_block.conf")
    before = path.read_text()
    result = run_module(node, {}, check_mode=True, diff=True)
    assert result["changed"] is True
    assert path.read_text() == before
    assert not os.listdir(str(node / "lock"))              # no lock taken in check mode
    assert "-lxc.mount.entry: /dev/nvidia-modeset dev/nvidia-modeset none bind,optional,create=file\n" in result["unified_diff"]
    assert "+lxc.mount.entry: /dev/nvidia-caps dev/nvidia-caps none bind,optional,create=dir\n" in result["unified_diff"]
    # The real run writes exactly what check mode predicted.
    real = run_module(node, {})
    assert real["changed"] is True and path.read_text() == result["diff"]["after"]


def test_snapshot_sections_byte_exact(node):
    path = put_conf(node, "snapshots.conf")
    before = path.read_text()
    result = run_module(node, {"gpus": ["0"], "control_devices": ["nvidiactl", "nvidia-uvm"]})
    after = path.read_text()
    tail = before[before.index("\n[before_gpu]"):]
    assert after.endswith(tail)
    assert result["majors_drift"]["drift"] is True                       # before: 507 was stale
    assert "lxc.cgroup2.devices.allow: c 507:* rwm" in result["removed"]
    assert run_module(node, {"gpus": ["0"], "control_devices": ["nvidiactl", "nvidia-uvm"]})["changed"] is False


def test_cgroup_v1_node_gets_the_v1_key(node):
    path = put_conf(node, "plain.conf")
    result = run_module(node, {"proc_mounts": data("proc_mounts", "test_host_hybrid.txt")})
    assert result["cgroup_key"] == "lxc.cgroup.devices.allow"
    assert "lxc.cgroup.devices.allow: c 195:* rwm\n" in path.read_text()
    assert "cgroup2" not in path.read_text()


def test_explicit_cgroup_key(node):
    put_conf(node, "plain.conf")
    result = run_module(node, {"cgroup_key": "cgroup", "proc_mounts": str(node / "missing")})
    assert result["cgroup_key"] == "lxc.cgroup.devices.allow"


def test_h200_majors(node):
    path = put_conf(node, "plain.conf")
    run_module(node, {"gpus": ["0"], "proc_devices": data("proc_devices", "h200.txt")})
    text = path.read_text()
    assert "c 238:* rwm" in text and "c 241:* rwm" in text and "c 509:* rwm" not in text


def test_devices_mode(node):
    path = put_conf(node, "devices.conf")
    result = run_module(node, {"mode": "devices", "dev_options": "gid=44"})
    text = path.read_text()
    assert result["changed"] is True and result["cgroup_key"] is None
    assert "dev0: /dev/dri/renderD128,gid=104\n" in text
    assert "dev1: /dev/nvidia0,gid=44\ndev2: /dev/nvidia1,gid=44\n" in text
    assert "dev7: /dev/nvidia-caps/nvidia-cap2,gid=44\n" in text
    assert "path=/dev/nvidia-uvm,mode=0666" not in text
    assert run_module(node, {"mode": "devices", "dev_options": "gid=44"})["changed"] is False


def test_devices_mode_refuses_missing_nodes(node):
    put_conf(node, "plain.conf")
    os.unlink(str(node / "dev" / "nvidia-uvm"))
    result = run_module(node, {"mode": "devices"})
    assert result["failed"] is True
    assert "/dev/nvidia-uvm missing" in result["msg"] and "nvidia-modprobe -u -c 0" in result["msg"]


def test_raw_mode_warns_about_missing_nodes(node):
    put_conf(node, "plain.conf")
    os.unlink(str(node / "dev" / "nvidia-uvm-tools"))
    result = run_module(node, {})
    assert result["changed"] is True
    assert any("nvidia-uvm-tools does not exist now" in w for w in warnings(result))


def test_gpu_selection(node):
    path = put_conf(node, "plain.conf")
    run_module(node, {"gpus": [1]})
    text = path.read_text()
    assert "/dev/nvidia1 dev/nvidia1" in text and "/dev/nvidia0 dev/nvidia0" not in text


def test_gpu_uuid_refused(node):
    put_conf(node, "plain.conf")
    result = run_module(node, {"gpus": ["GPU-35975a73-7769-4d54-c326-097dbcf602f8"]})
    assert result["failed"] is True and "UUIDs are not supported here" in result["msg"]


def test_all_without_gpus(node):
    put_conf(node, "plain.conf")
    for name in ("nvidia0", "nvidia1"):
        os.unlink(str(node / "dev" / name))
    result = run_module(node, {})
    assert result["failed"] is True and "there is no /dev/nvidiaN" in result["msg"]


def test_uvm_not_loaded_fails_in_raw_mode(node):
    path = put_conf(node, "plain.conf")
    before = path.read_text()
    result = run_module(node, {"proc_devices": data("proc_devices", "pve_a6000_no_uvm.txt")})
    assert result["failed"] is True and "'nvidia-uvm'" in result["msg"]
    assert path.read_text() == before


def test_drift_reported_on_moved_major_and_fixed(node):
    path = put_conf(node, "plain.conf")
    run_module(node, {})
    moved = data("proc_devices", "pve_a6000_uvm_moved.txt")
    check = run_module(node, {"proc_devices": moved}, check_mode=True)
    assert check["changed"] is True and check["majors_drift"]["drift"] is True
    assert any("whose major is now 508" in m for m in check["majors_drift"]["messages"])
    fix = run_module(node, {"proc_devices": moved})
    assert "c 508:* rwm" in path.read_text() and "c 509:* rwm" not in path.read_text()
    assert run_module(node, {"proc_devices": moved})["majors_drift"]["drift"] is False
    assert fix["changed"] is True


def test_absent(node):
    path = put_conf(node, "old_block.conf")
    result = run_module(node, {"state": "absent"})
    text = path.read_text()
    assert result["changed"] is True and result["lines"] == []
    assert "nvidia" not in text
    assert "lxc.cgroup2.devices.allow: c 10:200 rwm\n" in text and "/dev/net/tun" in text
    assert run_module(node, {"state": "absent"})["changed"] is False


def test_shm(node):
    path = put_conf(node, "shm.conf")
    run_module(node, {"shm_size": "64G"})
    text = path.read_text()
    assert "size=64G" in text and "size=4G" not in text


def test_locked_container_refused(node):
    path = put_conf(node, "locked.conf")
    before = path.read_text()
    check = run_module(node, {}, check_mode=True)
    assert check["changed"] is True and any("is locked (lock: backup)" in w for w in warnings(check))
    result = run_module(node, {})
    assert result["failed"] is True and "lock: backup" in result["msg"]
    assert path.read_text() == before


def test_waits_for_the_pct_lock(node):
    put_conf(node, "plain.conf")
    holder = os.open(str(node / "lock" / "pve-config-129.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        result = run_module(node, {})
    finally:
        os.close(holder)
    assert result["failed"] is True and "could not lock within" in result["msg"]


def test_missing_conf_and_reserved_vmid(node):
    result = run_module(node, {"vmid": 130})
    assert result["failed"] is True and "create container 130 first" in result["msg"]
    result = run_module(node, {"vmid": 99})
    assert result["failed"] is True and "Proxmox reserves IDs < 100" in result["msg"]


def test_bad_dev_options(node):
    put_conf(node, "plain.conf")
    result = run_module(node, {"mode": "devices", "dev_options": "rw=1"})
    assert result["failed"] is True and "dev_options: 'rw=1'" in result["msg"]


# --- bytes, bad values, files that are not a config: through the real module -------------------------

def _raw_lines(result, eol):
    return "".join(line + eol for line in result["lines"]).encode()


def test_crlf_conf_kept_crlf_and_diff_tells_the_truth(node):
    path = node / "lxc" / "129.conf"
    before = read_data("pve_conf", "plain.conf").replace("\n", "\r\n").encode()
    path.write_bytes(before)
    check = run_module(node, {}, check_mode=True, diff=True)
    assert check["changed"] is True and path.read_bytes() == before
    result = run_module(node, {}, diff=True)
    after = path.read_bytes()
    assert after == before + _raw_lines(result, "\r\n")                 # every CR kept, new lines CRLF too
    assert result["diff"]["before"].encode() == before and result["diff"]["after"].encode() == after
    assert check["diff"] == result["diff"]                               # check mode predicted exactly this
    assert [l for l in result["unified_diff"].splitlines(True) if l[:1] in "+-" and l[:3] not in ("+++", "---")] \
        == ["+%s\r\n" % line for line in result["lines"]]                # only the additions, nothing rewritten
    second = run_module(node, {}, diff=True)
    assert second["changed"] is False and second["unified_diff"] == "" and path.read_bytes() == after


def test_non_utf8_description_kept(node):
    path = node / "lxc" / "129.conf"
    before = b"#caf\xe9 \xff owner%3A \xc3\xa9quipe\narch: amd64\ncores: 2\n"
    path.write_bytes(before)
    result = run_module(node, {"mode": "devices"}, diff=True)
    assert result.get("failed") is not True, result
    after = path.read_bytes()
    assert after.startswith(b"#caf\xe9 \xff owner%3A \xc3\xa9quipe\narch: amd64\ncores: 2\ndev0: /dev/nvidia0\n")
    assert result["diff"]["before"] == "#caf\\xe9 \\xff owner%3A \u00e9quipe\narch: amd64\ncores: 2\n"
    assert run_module(node, {"mode": "devices"})["changed"] is False and path.read_bytes() == after


@pytest.mark.parametrize("args, match", [
    ({"shm_size": "16G\n"}, r"shm_size: expected a tmpfs size .*got '16G\\n'"),
    ({"shm_size": "16G\nlxc.apparmor.profile: unconfined"}, r"shm_size: expected a tmpfs size"),
    ({"mode": "devices", "dev_options": "gid=44\n"}, r"dev_options: 'gid=44\\n' is not one of"),
    ({"gpus": ["0\n"]}, r"gpus: '0\\n' is not 'all' or a device minor"),
    ({"gpus": ["\u0661"]}, r"gpus: '\u0661' is not 'all' or a device minor"),
    ({"control_devices": ["nvidiactl\n"]}, r"control_devices: 'nvidiactl\\n' is not one of"),
    ({"state": "absent", "shm_size": "4G\r"}, r"shm_size: expected a tmpfs size"),
])
def test_bad_value_fails_and_writes_nothing(node, args, match):
    path = node / "lxc" / "129.conf"
    before = b"arch: amd64\r\n#\xff\r\ncores: 2\r\n"
    path.write_bytes(before)
    for check_mode in (True, False):
        result = run_module(node, args, check_mode=check_mode)
        assert result["failed"] is True, result
        assert re.search(match, result["msg"]), result["msg"]
    assert path.read_bytes() == before
    assert sorted(os.listdir(str(node / "lxc"))) == ["129.conf"]


def test_conf_is_a_directory(node):
    (node / "lxc" / "129.conf").mkdir()
    result = run_module(node, {})
    assert result["failed"] is True
    assert result["msg"] == "container config %s is a directory, expected a file" % (node / "lxc" / "129.conf")


def test_conf_over_a_mebibyte(node):
    path = node / "lxc" / "129.conf"
    before = b"arch: amd64\n" + b"#" + b"x" * (1024 * 1024) + b"\n"
    path.write_bytes(before)
    result = run_module(node, {})
    assert result["failed"] is True and "129.conf is larger than 1048576 bytes" in result["msg"]
    assert path.read_bytes() == before


def test_conf_is_a_fifo(node):
    os.mkfifo(str(node / "lxc" / "129.conf"))
    result = run_module(node, {})
    assert result["failed"] is True and "129.conf is not a regular file" in result["msg"]


def test_device_node_is_a_directory(node):
    path = put_conf(node, "plain.conf")
    before = path.read_bytes()
    os.unlink(str(node / "dev" / "nvidia1"))
    (node / "dev" / "nvidia1").mkdir()
    for mode in ("raw", "devices"):
        result = run_module(node, {"mode": mode})
        assert result["failed"] is True
        assert result["msg"] == "dev_dir: %s is a directory, expected the device node /dev/nvidia1" % (
            node / "dev" / "nvidia1")
    assert path.read_bytes() == before


def test_caps_directory_is_a_file(node):
    put_conf(node, "plain.conf")
    for name in ("nvidia-cap1", "nvidia-cap2"):
        os.unlink(str(node / "dev" / "nvidia-caps" / name))
    os.rmdir(str(node / "dev" / "nvidia-caps"))
    (node / "dev" / "nvidia-caps").write_text("")
    result = run_module(node, {"mode": "devices"})
    assert result["failed"] is True and "nvidia-caps is not a directory, expected the directory" in result["msg"]


def test_caps_node_with_a_line_break_in_its_name(node):
    path = put_conf(node, "plain.conf")
    before = path.read_bytes()
    (node / "dev" / "nvidia-caps" / "nvidia-cap3\nlxc.apparmor.profile: unconfined").write_text("")
    result = run_module(node, {"mode": "devices"})
    assert result["failed"] is True
    assert "holds a node named: 'nvidia-cap3\\nlxc.apparmor.profile: unconfined' is not a plain device node name" \
        in result["msg"]
    assert path.read_bytes() == before
