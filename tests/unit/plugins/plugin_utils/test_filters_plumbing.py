# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The filters' plumbing (plugins/plugin_utils/_filters.py): one module_utils function per filter, imported on the
first call, its input errors an AnsibleFilterError that starts with the filter's name."""
import glob
import importlib
import inspect
import os
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.plugin_utils._filters import filters, message, to
from _result_checks import LazyLike  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MU = "ansible_collections.inference.gpu_host.plugins.module_utils."


def test_the_message_names_the_filter_once():
    assert message("f", ValueError("x: expected y")) == "f: x: expected y"
    assert message("f", ValueError("f: expected y")) == "f: expected y"
    assert message("f", ValueError("fx: expected y")) == "f: fx: expected y"


def test_input_errors_become_filter_errors_and_bugs_stay_what_they_are():
    table = filters({"systemd_exec": to("_vllm.unit", "systemd_exec", "VllmUnitError")})
    with pytest.raises(AnsibleFilterError, match="^systemd_exec: expected a non-empty list"):
        table["systemd_exec"]([])
    with pytest.raises(TypeError):
        table["systemd_exec"]()  # a bug (a wrong call) is not an input error


def test_the_module_is_imported_on_the_first_call_only():
    name = MU + "_bench.summary"
    sys.modules.pop(name, None)
    table = filters({"f": to("_bench.summary", "spread_of", "SummaryError")})
    assert name not in sys.modules
    table["f"]([1.0, 2.0])
    assert name in sys.modules


def test_plain_copies_lazy_containers():
    table = filters({"f": to("_common.plain_data", "plain", "", plain=True)})
    got = table["f"](LazyLike({"a": [LazyLike({"b": 1})]}))
    assert got == {"a": [{"b": 1}]}
    assert type(got) is dict and type(got["a"][0]) is dict  # pylint: disable=unidiomatic-typecheck


def test_each_filter_has_the_signature_of_its_function():
    table = filters({"drain": to("_vllm.unit", "drain_settings", "VllmUnitError")})
    assert list(inspect.signature(table["drain"]).parameters) == ["shutdown_timeout", "supported"]


def test_every_filter_file_maps_names_to_module_utils_functions_that_exist():
    names = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py"))):
        plugin = importlib.import_module("ansible_collections.inference.gpu_host.plugins.filter."
                                         + os.path.basename(path)[:-3])
        for name, function in plugin.FilterModule().filters().items():
            assert function.__name__ == name
            function._load()  # pylint: disable=protected-access  # the module, function and error names resolve
            names.append(name)
    assert len(names) == len(set(names))
    # Issue 38: a filter used by one task is a key of the plan that feeds it; at most 30 filters.
    assert len(names) <= 30, sorted(names)
