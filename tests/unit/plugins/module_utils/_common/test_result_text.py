# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Text for a module's result (plugins/module_utils/_common/result_text.py): valid UTF-8, capped."""

from __future__ import absolute_import, division, print_function

from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text


def test_safe_text_replaces_lone_surrogates_and_cuts_with_a_marker():
    assert safe_text(None) is None
    assert safe_text(42) == "42"
    assert safe_text("a\udcffb") == "a\ufffdb"
    assert safe_text("abcdef", 3) == "abc [... cut: 6 characters in all]"
    assert safe_text("abc", 3) == "abc"


@given(st.text(), st.integers(min_value=0, max_value=50))
def test_safe_text_is_always_encodable_and_bounded(text, limit):
    out = safe_text(text, limit)
    out.encode("utf-8")
    assert len(out) <= limit + len(" [... cut: %d characters in all]" % len(text))
