# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The GPU filters (plugins/filter/gpu.py) as the lxc_gpu role calls them, and their documentation files;
lxc_gpu_node_devices reads /proc/devices with the one parser in module_utils/_gpu/facts.py."""

import inspect
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.gpu import FilterModule
from _result_checks import LazyLike  # noqa: E402  pylint: disable=wrong-import-position

FILTERS = FilterModule().filters()
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
KMOD = "550.54.14"
CT129 = {"vmid": 129, "host": "ct129", "state": "present", "mode": "bind", "reboot": False,
         "control_devices": ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"]}
CT130 = dict(CT129, vmid="130", host="", reboot=True, control_devices=["nvidia-uvm-tools"])


def test_the_filters_the_role_calls():
    assert sorted(FILTERS) == ["lxc_gpu_container_report", "lxc_gpu_driver_fixed", "lxc_gpu_driver_record",
                               "lxc_gpu_node_devices", "lxc_gpu_restart_states"]


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_has_a_doc_file_naming_its_arguments(name):
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)["DOCUMENTATION"]
    arguments = list(inspect.signature(FILTERS[name]).parameters)
    assert doc["name"] == name
    assert list(doc["options"]) == ["_input"] + arguments[1:]
    assert doc["positional"] == ", ".join(["_input"] + arguments[1:])


def test_driver_record_of_one_container_keyed_by_its_vmid():
    info = LazyLike({"item": LazyLike(CT129), "driver_version": "535.161", "reason": ""})
    libraries = LazyLike({"files": [LazyLike({"path": "/usr/lib64/libnvidia-ml.so.535.161"})]})
    record = FILTERS["lxc_gpu_driver_record"](info, libraries, KMOD)
    assert record == {"129": {"host": "ct129", "status": "mismatch", "node_kernel_module": KMOD,
                              "container_userspace": "535.161", "container_libraries": ["535.161"],
                              "container_reason": "", "fixed": False}}
    assert type(record["129"]["container_libraries"]) is list  # pylint: disable=unidiomatic-typecheck  # a plain list, not a subclass


def test_driver_fixed_updates_only_that_container():
    records = {"129": {"status": "mismatch", "container_userspace": "535.161", "fixed": False},
               "130": {"status": "match"}}
    fixed = FILTERS["lxc_gpu_driver_fixed"](LazyLike(records), 129, {"driver_version": KMOD}, False)
    assert fixed == {"129": {"status": "fixed", "container_userspace_before": "535.161",
                             "container_userspace": KMOD, "fixed": True}, "130": {"status": "match"}}
    assert records["129"]["status"] == "mismatch"
    would = FILTERS["lxc_gpu_driver_fixed"](records, "129", {"skipped": True}, True)
    assert would["129"]["status"] == "would_fix" and would["129"]["container_userspace"] == "535.161"


def test_driver_fixed_without_a_record_names_the_vmids_that_have_one():
    with pytest.raises(AnsibleFilterError, match=r"lxc_gpu_driver_fixed: no driver record for CT 131 \(have 129\)"):
        FILTERS["lxc_gpu_driver_fixed"]({"129": {}}, 131, {}, False)
    with pytest.raises(AnsibleFilterError, match="lxc_gpu_driver_fixed: expected the driver records"):
        FILTERS["lxc_gpu_driver_fixed"]([], 129, {}, False)


def test_deferred_vmids_in_a_check_run_before_nvidia_uvm_is_loaded():
    text = "Character devices:\n195 nvidia\n195 nvidiactl\n"
    assert FILTERS["lxc_gpu_node_devices"](text, "/proc/devices", [CT130, CT129], True) == {
        "names": ["nvidia", "nvidiactl"], "deferred": ["129", "130"]}
    assert FILTERS["lxc_gpu_node_devices"](text, "/proc/devices", [CT130, CT129], False)["deferred"] == []
    assert FILTERS["lxc_gpu_node_devices"](text + "238 nvidia-uvm\n", "/d", [CT130, CT129], True)["deferred"] == []


def test_restart_states_of_a_run_that_rebooted_one_container():
    rebooted = {"changed": True, "results": [{"changed": True, "item": {"item": "130", "stdout": "status: running"}}]}
    states = FILTERS["lxc_gpu_restart_states"]([CT129, CT130], [], ["129", "130"], ["130"], LazyLike(rebooted), False)
    assert states == {"129": "pending", "130": "rebooted"}


def test_container_report_keyed_by_its_vmid():
    conf = {"changed": False, "skipped": True, "item": CT130}
    report = FILTERS["lxc_gpu_container_report"](conf, "/etc/pve/lxc", {"130": "deferred"}, {})
    assert list(report) == ["130"]
    assert report["130"]["vmid"] == 130 and report["130"]["conf_path"] == "/etc/pve/lxc/130.conf"
    assert report["130"]["restart"] == "deferred" and report["130"]["driver"] == {"status": "not_checked"}


@pytest.mark.parametrize("name, args, message", [
    ("lxc_gpu_driver_record", ("x", {}, KMOD), "lxc_gpu_driver_record: driver probe result: expected a dict"),
    ("lxc_gpu_node_devices", ("Character devices:\n195 nvidia\n", "/d", [{"state": "present"}], True),
     r"lxc_gpu_node_devices: containers\[0\]: has no"),
    ("lxc_gpu_restart_states", ([CT129], [], [], [], None, False), "lxc_gpu_restart_states: reboot result: expected"),
    ("lxc_gpu_container_report", ({"item": CT129}, "/d", {}, {}), "lxc_gpu_container_report: restart states: no "),
])
def test_input_of_the_wrong_shape_fails_naming_the_filter(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)


# ---------------------------------------------------------------- lxc_gpu_node_devices: the names

PROC_DEVICES = """Character devices:
  1 mem
195 nvidia-frontend
195 nvidia
195 nvidiactl
238 nvidia-uvm
241 nvidia-caps

Block devices:
  8 sd
259 nvidia-not-a-char
"""


def _filter(text, source="/proc/devices"):
    return FilterModule().filters()["lxc_gpu_node_devices"](text, source, [CT129], False)["names"]


def test_names_in_file_order_character_devices_only():
    assert _filter(PROC_DEVICES) == ["nvidia-frontend", "nvidia", "nvidiactl", "nvidia-uvm", "nvidia-caps"]


def test_no_nvidia_device_is_an_empty_list():
    assert _filter("Character devices:\n  1 mem\n") == []


def test_not_a_device_list_names_the_file_and_line():
    with pytest.raises(AnsibleFilterError, match=r"^lxc_gpu_node_devices: .*/tmp/devices line 2"):
        _filter("Character devices:\nthis is not a device\n", "/tmp/devices")
