"""Helpers shared by the unit tests (tests/unit is on sys.path through its conftest.py)."""

from collections.abc import Mapping


def assert_valid_utf8(value):
    """Every str in a result encodes as UTF-8: what Ansible's controller checks before it accepts a result.

    json.loads turns the "\\udcff" escape a module prints for a surrogate-escaped byte into a lone
    surrogate; encoding it fails here just as "Refusing to deserialize an invalid UTF8 string" does there.
    """
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_valid_utf8(key)
            assert_valid_utf8(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            assert_valid_utf8(item)


class LazyLike(Mapping):
    """A mapping that is not a dict, as Ansible hands a filter its lazily templated containers."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)
