"""Checks on module results shared by the unit tests (tests/unit is on sys.path through its conftest.py)."""


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
