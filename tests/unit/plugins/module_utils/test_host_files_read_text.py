# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""host_files.read_text: the one lenient reader of small files (pyvenv.cfg, records, a cgroup, the driver version)."""
from __future__ import absolute_import, division, print_function

import os

from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import read_text


def test_reads_at_most_limit_bytes(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc\xffdef")
    assert read_text(str(path)) == "abc\ufffddef"
    assert read_text(str(path), 3) == "abc"


def test_missing_unreadable_or_not_regular_is_empty(tmp_path):
    assert read_text(str(tmp_path / "missing")) == ""
    assert read_text("") == ""
    assert read_text(str(tmp_path)) == ""          # a directory
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    assert read_text(str(fifo)) == ""              # would block without the regular-file check
