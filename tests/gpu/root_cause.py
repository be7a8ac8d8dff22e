#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Print, as JSON, what plugins/module_utils/_vllm/log.py finds in a vLLM log file: the root cause
(find_root_cause, failure_message) and the captured-layers line of either model runner (find_captured_layers).

Usage: root_cause.py LOG [LOG ...]

The collection is imported from this clone (tests/gpu/ -> repo root -> .collections), the way the unit tests do,
so a GPU host needs neither an installed collection nor Ansible for this step.
"""

from __future__ import absolute_import, division, print_function

import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".collections"))

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.captured_layers import (  # noqa: E402 pylint: disable=wrong-import-position
    find_captured_layers,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import (  # noqa: E402 pylint: disable=wrong-import-position
    failure_message,
    find_root_cause,
)


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    out = {}
    for path in argv:
        with io.open(path, encoding="utf-8", errors="replace") as fh:
            result = find_root_cause(fh.read())
        result["message"] = failure_message(None, result)
        with io.open(path, "rb") as fh:
            result["captured_layers"] = find_captured_layers(fh)
        out[os.path.basename(path)] = result
    json.dump(out, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
