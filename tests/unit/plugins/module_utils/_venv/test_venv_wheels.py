# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/wheels.py: a wheel file name's tags (the flash_attn_gate filter's wheel key is tested through the
filter in tests/unit/plugins/filter/test_gpu_host.py)."""
from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.wheels import WheelNameError, wheel_tags


def test_a_url_with_a_query_is_read_by_its_last_part():
    tags = wheel_tags("https://example.org/w/flash_attn-2.8.3+cu126torch2.7cxx11abiTRUE-cp311-cp311-linux_x86_64.whl?x=1")
    assert (tags["name"], tags["version"], tags["local"], tags["py"], tags["abi"], tags["plat"]) == \
        ("flash_attn", "2.8.3", "cu126torch2.7cxx11abiTRUE", "cp311", "cp311", "linux_x86_64")
    assert (tags["cuda_major"], tags["torch_minor"], tags["cxx11abi"]) == ("12", "2.7", True)


def test_no_local_label_leaves_its_parts_empty():
    tags = wheel_tags("/srv/wheels/flash_attn-2.8.3-py3-none-any.whl")
    assert (tags["local"], tags["cuda_major"], tags["torch_minor"], tags["cxx11abi"]) == (None, "", "", None)


@pytest.mark.parametrize("name", ["flash_attn.tar.gz", "flash_attn-2.8.3.whl", ""])
def test_not_a_wheel_name_is_refused_naming_it(name):
    with pytest.raises(WheelNameError, match="not a wheel file name"):
        wheel_tags(name)
