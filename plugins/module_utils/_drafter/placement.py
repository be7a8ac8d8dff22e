# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# Whether the drafter role must place its weights again, from the record of the last
# placement (.inference-gpu-host-source.json beside the weights) and a stat of
# model.safetensors: multi-GB weights are never read again to decide. Stdlib only.

NOT_INSTALLED = "not installed yet"
SOURCE_CHANGED = "the source changed"
CHANGED_ON_HOST = "model.safetensors changed on the host"


def place_reason(record, wanted, dest_stat):
    """Why the weights must be placed, or "" when the ones in place are the wanted ones.

    ``record``: the last placement (the wanted source as it was, plus ``installed``:
    the size and mtime model.safetensors had right after it was placed); ``wanted``:
    the source now (type, source, sha256, and the source file's size and mtime when
    known); ``dest_stat``: Ansible's stat of model.safetensors.
    """
    record = record or {}
    if not (dest_stat or {}).get("exists"):
        return NOT_INSTALLED
    if dict((k, v) for k, v in record.items() if k != "installed") != wanted:
        return SOURCE_CHANGED
    if "installed" in record and record["installed"] != {"size": dest_stat.get("size"), "mtime": dest_stat.get("mtime")}:
        return CHANGED_ON_HOST
    return ""
