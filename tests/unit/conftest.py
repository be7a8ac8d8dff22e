"""Make ``ansible_collections.inference.gpu_host`` importable for plain pytest.

ansible-test lays the collection out under ``ansible_collections/`` itself; a
plain ``pytest tests/unit`` from a clone uses the checked-in link
``.collections/ansible_collections/inference/gpu_host`` (-> the clone).
"""

import os
import sys

try:
    import ansible_collections.inference.gpu_host  # noqa: F401  pylint: disable=unused-import
except ImportError:
    _ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(_ROOT, ".collections"))
