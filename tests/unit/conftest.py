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

# Property-based tests (Hypothesis) run with a fixed budget and no randomness
# between runs, so the unit stage's time and verdict do not drift: the profile
# "unit" (default) tries a fixed number of examples per property, derived from
# the test's name. HYPOTHESIS_PROFILE=deep explores more when hunting.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "unit", max_examples=150, derandomize=True, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("deep", max_examples=5000, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "unit"))
except ImportError:  # pragma: no cover - hypothesis is in the dev lock
    pass


try:
    import pytest

    @pytest.fixture(autouse=True)
    def _no_collection_finder_left_behind():
        """A test that runs Ansible in-process (InventoryManager, the inventory validator, Templar) installs Ansible's
        collection finder in sys.meta_path; left there, it takes over the next import of this collection's
        module_utils in the same worker and fails it ("collection metadata was not loaded"), depending on which files
        pytest-xdist gave that worker. Ansible installs it again when it next needs it."""
        yield
        finder = sys.modules.get("ansible.utils.collection_loader._collection_finder")
        if finder is not None and finder.AnsibleCollectionConfig.collection_finder is not None:
            finder._AnsibleCollectionFinder._remove()  # pylint: disable=protected-access
except ImportError:  # pragma: no cover - pytest runs this file
    pass
