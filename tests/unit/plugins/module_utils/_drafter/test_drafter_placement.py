"""The drafter's placement decision (module_utils/_drafter/placement.py)."""

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import place_reason

WANTED = {"type": "host", "source": "/srv/d.safetensors", "size": 100, "mtime": 1.5, "sha256": ""}
STAT = {"exists": True, "size": 100, "mtime": 2.5}
RECORD = dict(WANTED, installed={"size": 100, "mtime": 2.5})


@pytest.mark.parametrize("record, wanted, stat, reason", [
    (RECORD, WANTED, {"exists": False}, "not installed yet"),
    ({}, WANTED, {"exists": False}, "not installed yet"),
    ({}, WANTED, STAT, "the source changed"),
    (RECORD, dict(WANTED, mtime=9.0), STAT, "the source changed"),
    (RECORD, dict(WANTED, sha256="ab" * 32), STAT, "the source changed"),
    (RECORD, WANTED, dict(STAT, mtime=3.0), "model.safetensors changed on the host"),
    (RECORD, WANTED, dict(STAT, size=101), "model.safetensors changed on the host"),
    (RECORD, WANTED, STAT, ""),
    (dict(WANTED), WANTED, STAT, ""),   # an older record without "installed": the source decides
    (dict(RECORD, size=100.0), WANTED, STAT, ""),  # JSON numbers: 100.0 is 100
])
def test_place_reason(record, wanted, stat, reason):
    assert place_reason(record, wanted, stat) == reason
