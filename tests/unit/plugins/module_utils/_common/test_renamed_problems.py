# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""_common/inputs.py renamed_problems: the message a role's first check stops a run with (plugins/lookup/renamed_variables.py)."""

from __future__ import absolute_import, division, print_function

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._common.inputs import RENAMED_PREFIX, renamed_problems

TABLE = {"demo_block_size": "demo_overrides.block_size", "demo_hf_token": "demo_huggingface.token"}


def test_nothing_renamed_is_set():
    assert renamed_problems(["demo_dest_dir", "inventory_hostname"], TABLE) == []


def test_every_old_name_set_is_named_with_its_new_place_sorted():
    assert renamed_problems(["demo_hf_token", "x", "demo_block_size"], TABLE) == [
        RENAMED_PREFIX + "demo_block_size is now demo_overrides.block_size; "
        "demo_hf_token is now demo_huggingface.token."]


@pytest.mark.parametrize("table", [None, ["a"], {"a": 1}, {1: "b"}])
def test_a_bad_table_is_refused(table):
    with pytest.raises(ValueError, match="the renamed table"):
        renamed_problems([], table)


names = st.sampled_from(sorted(TABLE) + ["a", "demo_block_sizes", "vllm_service_port"])


@given(defined=st.lists(st.one_of(names, st.integers()), max_size=8))
def test_property_one_message_exactly_when_an_old_name_is_set(defined):
    found = renamed_problems(defined, TABLE)
    old = sorted(set(d for d in defined if d in TABLE))
    assert len(found) == (1 if old else 0)
    for name in old:
        assert "%s is now %s" % (name, TABLE[name]) in found[0]
    for name in set(TABLE) - set(old):
        assert name not in "".join(found)
