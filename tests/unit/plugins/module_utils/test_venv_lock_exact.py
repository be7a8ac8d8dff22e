# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""venv_lock.compare(exact=True): the venv holds the lock and nothing else, but what keep allows and what
flash_attn_guard judges. Site-packages made of real dist-info directories (METADATA Name/Version)."""

from __future__ import absolute_import, division, print_function

import os
import shutil
import tempfile

from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.lock import (
    GUARDED_BY_FLASH_ATTN_GUARD,
    canonicalize_name,
    compare,
)

names = st.from_regex(r"[a-z][a-z0-9]{0,6}(?:[-_.][a-z0-9]{1,4})?", fullmatch=True)


def _site(root, installed):
    site = os.path.join(root, "site-packages")
    os.makedirs(site)
    for name in installed:
        info = os.path.join(site, "%s-1.0.dist-info" % name.replace("-", "_"))
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name)
    return site


@given(locked=st.sets(names, max_size=4), extra=st.sets(names, max_size=4), keep=st.sets(names, max_size=3),
       guarded=st.sets(st.sampled_from(GUARDED_BY_FLASH_ATTN_GUARD)))
def test_property_unexpected_is_extra_minus_keep_and_guarded(locked, extra, keep, guarded):
    locked = set(canonicalize_name(n) for n in locked)
    extra = (set(canonicalize_name(n) for n in extra) | guarded) - locked
    root = tempfile.mkdtemp()
    try:
        site = _site(root, sorted(locked | extra))
        lock = os.path.join(root, "lock.txt")
        with open(lock, "w") as handle:
            handle.write("".join("%s==1.0\n" % n for n in sorted(locked)))
        loose = compare(site, lock)
        exact = compare(site, lock, exact=True, keep=sorted(keep))
    finally:
        shutil.rmtree(root)
    want = sorted(extra - set(canonicalize_name(n) for n in keep) - set(GUARDED_BY_FLASH_ATTN_GUARD))
    assert [u["name"] for u in exact["unexpected"]] == want
    assert exact["in_sync"] is (not want) and loose["in_sync"] is True and loose["unexpected"] == []
