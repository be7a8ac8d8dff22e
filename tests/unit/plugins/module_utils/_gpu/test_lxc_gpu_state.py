# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""lxc_gpu_state: the lxc_gpu role's driver comparison, deferred containers, restart states and report.

The expected values are what the role's Jinja gave before these decisions moved to Python (checked against
Ansible 2.19's templating of the old expressions)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._gpu.lxc_state import (
    LxcGpuStateError,
    container_report,
    deferred_vmids,
    driver_record,
    driver_status,
    fixed_driver_record,
    nvml_versions,
    rebooted_vmids,
    restart_state,
    restart_states,
    userspace_version,
)

KMOD = "550.54.14"
ALL_CONTROL = ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"]


def _ct(vmid, state="present", control_devices=None, host="ct%s", **extra):
    ct = {"vmid": vmid, "state": state, "mode": "bind", "reboot": True, "host": host % vmid if "%" in host else host,
          "control_devices": ALL_CONTROL if control_devices is None else control_devices}
    ct.update(extra)
    return ct


def _info(vmid=129, **probe):
    """A loop result of nvidia_gpu_info, its item the container."""
    return dict(probe, item=_ct(vmid))


def _find(*names, directory="/usr/lib/x86_64-linux-gnu/"):
    return {"files": [{"path": directory + name} for name in names]}


# ------------------------------------------------------- NVML versions ---

def test_nvml_versions_from_file_names_each_once_in_order_found():
    paths = ["/usr/lib64/libnvidia-ml.so.550.54.14", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.161",
             "/usr/lib/i386-linux-gnu/libnvidia-ml.so.550.54.14"]
    assert nvml_versions(paths) == ["550.54.14", "535.161"]


@pytest.mark.parametrize("name", ["libnvidia-ml.so.1", "libnvidia-ml.so", "libnvidia-ml.so.550.54.14.1",
                                  "libnvidia-ml.so.x.y", "xlibnvidia-ml.so.550.54", "libnvidia-ml.so.550.54.bak"])
def test_names_that_are_not_a_versioned_nvml_library_are_ignored(name):
    assert nvml_versions(["/usr/lib/" + name]) == []


def test_only_the_file_name_counts_not_its_directory():
    assert nvml_versions(["/usr/lib/libnvidia-ml.so.550.54/other.so"]) == []


def test_nvml_paths_of_the_wrong_shape_are_named():
    with pytest.raises(LxcGpuStateError, match="NVML library paths: expected a list, got str"):
        nvml_versions("/usr/lib/libnvidia-ml.so.550.54")
    with pytest.raises(LxcGpuStateError, match="NVML library paths: expected file paths, got NoneType"):
        nvml_versions([None])


# --------------------------------------------------- userspace version ---

def test_nvidia_smi_version_comes_first():
    assert userspace_version({"driver_version": "535.161", "nvml_library_version": KMOD}, [KMOD]) == "535.161"


def test_nvml_library_version_when_nvidia_smi_names_none():
    assert userspace_version({"driver_version": "", "nvml_library_version": "535.161"}, [KMOD]) == "535.161"


def test_the_one_library_file_version_when_the_probe_names_none():
    assert userspace_version({"driver_version": None}, ["535.161"]) == "535.161"


@pytest.mark.parametrize("libraries", [[], ["535.161", KMOD]])
def test_no_version_when_no_or_several_library_versions(libraries):
    assert userspace_version({"driver_version": "", "nvml_library_version": ""}, libraries) is None


# ------------------------------------------------------- driver status ---

@pytest.mark.parametrize("probe, kernel_module, userspace, status", [
    ({"unreachable": True}, KMOD, KMOD, "unreachable"),
    ({"unreachable": True}, None, None, "unreachable"),
    ({}, None, KMOD, "no_kernel_module"),
    ({}, "", KMOD, "no_kernel_module"),
    ({"failure": "mismatch"}, KMOD, KMOD, "match"),
    ({}, KMOD, "535.161", "mismatch"),
    ({"failure": "mismatch"}, KMOD, None, "mismatch"),
    ({"failure": "not_found"}, KMOD, None, "no_userspace"),
    ({"failure": "nvidia-smi failed"}, KMOD, None, "unknown"),
    ({"unreachable": False}, KMOD, None, "unknown"),
])
def test_driver_status_first_that_applies(probe, kernel_module, userspace, status):
    assert driver_status(probe, kernel_module, userspace) == status


# ------------------------------------------------------- driver record ---

def test_driver_record_of_a_container_that_matches():
    vmid, record = driver_record(_info(129, driver_version=KMOD, reason=""), _find("libnvidia-ml.so." + KMOD), KMOD)
    assert vmid == "129"
    assert record == {"host": "ct129", "status": "match", "node_kernel_module": KMOD, "container_userspace": KMOD,
                      "container_libraries": [KMOD], "container_reason": "", "fixed": False}


def test_driver_record_reads_the_version_from_the_library_when_nvidia_smi_cannot_run():
    info = _info("130", driver_version=None, failure="no_devices", reason="no /dev/nvidia0")
    vmid, record = driver_record(info, _find("libnvidia-ml.so.1", "libnvidia-ml.so.535.161"), KMOD)
    assert vmid == "130"
    assert (record["status"], record["container_userspace"]) == ("mismatch", "535.161")
    assert record["container_libraries"] == ["535.161"] and record["container_reason"] == "no /dev/nvidia0"


def test_driver_record_of_an_unreachable_container_takes_its_msg():
    vmid, record = driver_record(_info(129, unreachable=True, msg="ssh: connect refused"), {}, KMOD)
    assert (record["status"], record["container_reason"], record["container_libraries"]) == (
        "unreachable", "ssh: connect refused", [])
    assert record["container_userspace"] is None


def test_driver_record_keeps_a_null_reason_rather_than_the_msg():
    _vmid, record = driver_record(_info(129, reason=None, msg="m", failure="not_found"), _find(), KMOD)
    assert record["container_reason"] is None and record["status"] == "no_userspace"


def test_driver_record_without_the_node_version():
    _vmid, record = driver_record(_info(129, driver_version=KMOD), _find(), None)
    assert (record["status"], record["node_kernel_module"]) == ("no_kernel_module", None)


@pytest.mark.parametrize("info, libraries, message", [
    ("text", {}, "driver probe result: expected a dict, got str"),
    ({"item": None}, {}, "driver probe result's item: expected a dict, got NoneType"),
    ({"item": {"host": "ct"}}, {}, "driver probe result's item: has no vmid"),
    (_info(129), [], "NVML library search result: expected a dict, got list"),
    (_info(129), {"files": {}}, "NVML library search result's files: expected a list, got dict"),
    (_info(129), {"files": ["/usr/lib"]}, "NVML library search result's files: expected a dict, got str"),
])
def test_driver_record_input_of_the_wrong_shape_is_named(info, libraries, message):
    with pytest.raises(LxcGpuStateError) as exc:
        driver_record(info, libraries, KMOD)
    assert str(exc.value) == message


# ---------------------------------------------------------- driver fix ---

def test_fixed_record_takes_the_version_read_after_the_install():
    record = {"host": "ct129", "status": "mismatch", "container_userspace": "535.161", "fixed": False}
    fixed = fixed_driver_record(record, {"driver_version": KMOD}, False)
    assert fixed == {"host": "ct129", "status": "fixed", "container_userspace_before": "535.161",
                     "container_userspace": KMOD, "fixed": True}
    assert record["status"] == "mismatch"  # the input is left as it was


def test_check_mode_would_fix_and_keeps_the_version_and_ignores_the_skipped_probe():
    record = {"status": "no_userspace", "container_userspace": None, "fixed": False}
    assert fixed_driver_record(record, {"skipped": True}, True) == {
        "status": "would_fix", "container_userspace_before": None, "container_userspace": None, "fixed": False}


# ------------------------------------------------------------ deferred ---

def test_a_real_run_defers_nothing():
    assert deferred_vmids([_ct(129)], ["nvidia", "nvidiactl"], False) == []


def test_a_node_with_nvidia_uvm_loaded_defers_nothing():
    assert deferred_vmids([_ct(129)], ["nvidia", "nvidia-uvm"], True) == []


def test_check_run_defers_present_containers_needing_uvm_uvm_ones_first():
    cts = [_ct(131, control_devices=["nvidia-uvm-tools"]), _ct(129), _ct(130, state="absent"),
           _ct("132", control_devices=["nvidiactl"]), _ct(133, control_devices=["nvidia-uvm"])]
    assert deferred_vmids(cts, ["nvidia"], True) == ["129", "133", "131"]


def test_deferred_containers_of_the_wrong_shape_are_named():
    with pytest.raises(LxcGpuStateError, match=r"containers\[1\]: has no vmid"):
        deferred_vmids([_ct(129), {"state": "present"}], [], True)
    with pytest.raises(LxcGpuStateError, match=r"containers\[0\]\.control_devices: expected a list of device names"):
        deferred_vmids([dict(_ct(129), control_devices=None)], [], True)
    with pytest.raises(LxcGpuStateError, match="node devices: expected a list, got str"):
        deferred_vmids([], "nvidia", True)


# -------------------------------------------------------------- restart ---

def test_rebooted_vmids_are_the_changed_results_of_the_reboot_handler():
    result = {"results": [{"changed": True, "item": {"item": "130"}}, {"changed": False, "item": {"item": "129"}},
                          {"skipped": True, "item": {"item": "131"}}, {"changed": True, "item": {"item": 132}}]}
    assert rebooted_vmids(result) == ["130", "132"]
    assert rebooted_vmids({}) == []
    assert rebooted_vmids({"skipped": True, "results": []}) == []


@pytest.mark.parametrize("vmid, check_mode, state", [
    ("128", False, "deferred"),
    ("129", False, "none"),
    ("130", False, "pending"),
    ("131", True, "would_reboot"),
    ("131", False, "rebooted"),
    ("132", False, "stopped"),
])
def test_restart_state_first_that_applies(vmid, check_mode, state):
    deferred, changed, reboot, rebooted = ["128"], ["128", "130", "131", "132"], ["128", "131", "132"], ["131"]
    assert restart_state(vmid, deferred, changed, reboot, rebooted, check_mode) == state


def test_restart_states_keyed_by_vmid_strings():
    cts = [_ct(129), _ct("130"), _ct(131)]
    rebooted = {"results": [{"changed": True, "item": {"item": "130"}}]}
    assert restart_states(cts, [], ["129", "130", "131"], ["130", "131"], rebooted, False) == {
        "129": "pending", "130": "rebooted", "131": "stopped"}


def test_vmids_are_compared_as_strings_as_the_role_lists_them():
    # The role's lists hold strings: a bare number in one is not the container's vmid.
    assert restart_states([_ct(129)], [], [129], [129], {}, False) == {"129": "none"}


@given(st.sampled_from(["129", "130"]), st.lists(st.sampled_from(["129", "130"])),
       st.lists(st.sampled_from(["129", "130"])), st.lists(st.sampled_from(["129", "130"])),
       st.lists(st.sampled_from(["129", "130"])), st.booleans())
def test_restart_state_is_one_word_and_a_restart_needs_a_change(vmid, deferred, changed, reboot, rebooted, check):
    state = restart_state(vmid, deferred, changed, reboot, rebooted, check)
    assert state in ("deferred", "none", "pending", "would_reboot", "rebooted", "stopped")
    if state in ("pending", "would_reboot", "rebooted", "stopped"):
        assert vmid in changed and vmid not in deferred
    if state in ("would_reboot", "rebooted", "stopped"):
        assert vmid in reboot and (state == "would_reboot") == check


@pytest.mark.parametrize("args, message", [
    (("x", [], [], [], {}, False), "containers: expected a list, got str"),
    (([], None, [], [], {}, False), "deferred vmids: expected a list, got NoneType"),
    (([], [], [], [], [], False), "reboot result: expected a dict, got list"),
    (([], [], [], [], {"results": [1]}, False), r"reboot result's results\[0\]: expected a dict, got int"),
])
def test_restart_input_of_the_wrong_shape_is_named(args, message):
    with pytest.raises(LxcGpuStateError, match=message):
        restart_states(*args)


# --------------------------------------------------------------- report ---

def test_report_of_a_written_config():
    conf = {"changed": True, "conf_path": "/etc/pve/lxc/129.conf", "lines": ["lxc.a: 1"], "removed": ["old"],
            "unified_diff": "--- a\n+++ b\n", "cgroup_key": "lxc.cgroup2.devices.allow", "majors": {"nvidia": 195},
            "majors_drift": {"drift": False}, "item": _ct("129")}
    driver = {"status": "match"}
    vmid, report = container_report(conf, "/etc/pve/lxc", {"129": "none"}, {"129": driver})
    assert vmid == "129"
    assert report == {"vmid": 129, "mode": "bind", "state": "present", "conf_path": "/etc/pve/lxc/129.conf",
                      "conf_changed": True, "deferred": False, "lines": ["lxc.a: 1"], "removed": ["old"],
                      "unified_diff": "--- a\n+++ b\n", "cgroup_key": "lxc.cgroup2.devices.allow",
                      "majors": {"nvidia": 195}, "majors_drift": {"drift": False}, "restart": "none",
                      "driver": driver}


def test_report_of_a_deferred_config_and_an_unchecked_driver():
    conf = {"changed": False, "skipped": True, "item": _ct(130)}
    _vmid, report = container_report(conf, "/etc/pve/lxc", {"130": "deferred"}, {"129": {"status": "match"}})
    assert report == {"vmid": 130, "mode": "bind", "state": "present", "conf_path": "/etc/pve/lxc/130.conf",
                      "conf_changed": False, "deferred": True, "lines": [], "removed": [], "unified_diff": "",
                      "cgroup_key": None, "majors": {}, "majors_drift": {}, "restart": "deferred",
                      "driver": {"status": "not_checked"}}


@pytest.mark.parametrize("vmid, number", [("129", 129), ("129.0", 129), (129.7, 129), ("ct", 0)])
def test_report_vmid_is_a_number_as_jinja_int_makes_it(vmid, number):
    _vmid, report = container_report({"item": _ct(vmid)}, "/d", {str(vmid): "none"}, {})
    assert report["vmid"] == number and report["conf_path"] == "/d/%s.conf" % vmid


def test_report_without_a_restart_state_is_named():
    with pytest.raises(LxcGpuStateError, match="restart states: no state for CT 129"):
        container_report({"item": _ct(129)}, "/d", {}, {})
    with pytest.raises(LxcGpuStateError, match="driver records: expected a dict, got NoneType"):
        container_report({"item": _ct(129)}, "/d", {"129": "none"}, None)
