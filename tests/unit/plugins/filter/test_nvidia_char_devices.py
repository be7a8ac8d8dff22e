"""nvidia_char_devices: /proc/devices read by the one parser in module_utils/_gpu/facts.py."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.nvidia_char_devices import FilterModule

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


def _filter():
    return FilterModule().filters()["nvidia_char_devices"]


def test_names_in_file_order_character_devices_only():
    assert _filter()(PROC_DEVICES) == ["nvidia-frontend", "nvidia", "nvidiactl", "nvidia-uvm", "nvidia-caps"]


def test_no_nvidia_device_is_an_empty_list():
    assert _filter()("Character devices:\n  1 mem\n") == []


def test_not_a_device_list_names_the_file_and_line():
    with pytest.raises(AnsibleFilterError, match=r"/tmp/devices line 2"):
        _filter()("Character devices:\nthis is not a device\n", "/tmp/devices")
