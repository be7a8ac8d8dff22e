# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/validate_inventories.py: the text a number was written as, read back with PyYAML.

The script finds where a value came from without ansible-core's private API: it
reads the winning YAML file again with ``yaml.compose``. These tests check that
lookup on its own (imported) and through the script (a subprocess on a real
inventory), and that a spec file that cannot be read gets PyYAML's line and column.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import pytest
import yaml
from hypothesis import given, strategies as st

from ansible.parsing.dataloader import DataLoader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "validate_inventories.py")


@pytest.fixture(scope="module")
def vi():
    """The script as a module; the environment it sets for itself is put back."""
    saved = dict(os.environ)
    try:
        spec = importlib.util.spec_from_file_location("validate_inventories_under_test", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return module


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def places_of(text):
    return [(text, yaml.compose(text, Loader=yaml.SafeLoader))]


def test_no_private_ansible_api():
    with open(SCRIPT, encoding="utf-8") as handle:
        source = handle.read()
    assert "_internal" not in source
    assert "Origin" not in source


@pytest.mark.parametrize("text, keys, value, expected", [
    ("mode: 0644\n", ("mode",), 420, "0644"),
    ("mode: 0644   # rw-r--r--\n", ("mode",), 420, "0644"),
    ("version: 0.20\n", ("version",), 0.2, "0.20"),
    ("args: [--x, 0644, 1.50]\n", ("args", 2), 1.5, "1.50"),
    ("args:\n  - a\n  - 0x1F\n", ("args", 1), 31, "0x1F"),
    ("d:\n  inner: {k: 1_000}\n", ("d", "inner", "k"), 1000, "1_000"),
    ("a: &n 010\nb: *n\n", ("b",), 8, "010"),           # the anchor's text, without the anchor
    ("a: !!int 0644\n", ("a",), 420, "0644"),            # without the tag
    ("x: 1\nx: 0.50\n", ("x",), 0.5, "0.50"),            # duplicate keys: the last, as loaders keep
    ("base: &b {m: 0755}\nd:\n  <<: *b\n", ("d", "m"), 493, "0755"),         # merge key
    ("base: &b {m: 0755}\nd:\n  <<: *b\n  m: 0x7\n", ("d", "m"), 7, "0x7"),  # own key beats the merge
])
def test_text_of_a_number(vi, text, keys, value, expected):
    assert vi.SourceText.text_in(places_of(text), keys, value) == expected


@pytest.mark.parametrize("text, keys, value", [
    ("mode: 0644\n", ("mode",), 644),         # YAML reads 420 there: not where this value came from
    ("mode: '0644'\n", ("mode",), 420),       # a string there
    ("mode: 0644\n", ("other",), 420),        # not set there
    ("args: [1]\n", ("args", 3), 1),          # no such item
    ("args: [1]\n", ("args",), 1),            # a list, not a scalar
    ("v: 1.0\n", ("v",), 1),                  # a float there, an int here
])
def test_no_text_unless_yaml_reads_the_same_value(vi, text, keys, value):
    assert vi.SourceText.text_in(places_of(text), keys, value) is None


def test_first_place_holding_the_path_wins(vi):
    high = places_of("other: 1\n")[0]
    winner = places_of("mode: 0x1A4\n")[0]
    lower = places_of("mode: 0644\n")[0]
    assert vi.SourceText.text_in([high, winner, lower], ("mode",), 420) == "0x1A4"
    # The winner's text only: a value that is not the winner's is not looked up further down.
    assert vi.SourceText.text_in([places_of("mode: 1\n")[0], lower], ("mode",), 420) is None


def test_inventory_places_follow_the_yaml_inventory_plugin(vi, tmp_path):
    inv = str(tmp_path / "inv")
    write(os.path.join(inv, "hosts.yml"), """\
all:
  vars: {a: v1}
  children:
    g:
      vars: {a: v2}
      hosts:
        web[01:02]: {a: v3}
        h1:
    g2:
      hosts:
        h1: {a: v4}
""")
    write(os.path.join(inv, "more", "extra.yaml"), "g:\n  vars: {a: v5}\n")
    write(os.path.join(inv, "group_vars", "g.yml"), "a: v6\n")  # not an inventory file
    source = vi.SourceText()

    def texts(kind, name):
        return [t[n.start_mark.index:n.end_mark.index] for t, n in
                [(t, vi.SourceText.child(n, "a")) for t, n in source.inventory_places(inv, kind, name)]]

    assert texts("group", "all") == ["v1"]
    assert texts("group", "g") == ["v2", "v5"]  # hosts.yml, then more/extra.yaml: InventoryManager's order
    assert texts("host", "web02") == ["v3"]
    assert texts("host", "h1") == ["v4"]
    assert texts("host", "nobody") == []


# Numbers YAML 1.1 (PyYAML, Ansible's YAML) reads from plain text: decimal, octal (0644; 0o is YAML 1.2), hex, binary,
# underscores, sexagesimal, floats with and without exponent, inf and nan.
NUMERIC = st.one_of(
    st.from_regex(r"\A[-+]?(0|[1-9][0-9_]{0,8})\Z"),
    st.from_regex(r"\A[-+]?0[0-7_]{1,6}\Z"),
    st.from_regex(r"\A[-+]?0x[0-9a-fA-F][0-9a-fA-F_]{0,5}\Z"),
    st.from_regex(r"\A[-+]?0b[01][01_]{0,7}\Z"),
    st.from_regex(r"\A[-+]?[1-9][0-9]?(:[0-5]?[0-9]){1,2}\Z"),
    st.from_regex(r"\A[-+]?[0-9][0-9_]{0,4}\.[0-9_]{0,4}([eE][-+][0-9]{1,2})?\Z"),
    st.from_regex(r"\A[-+]?\.[0-9][0-9_]{0,4}([eE][-+][0-9]{1,2})?\Z"),
    st.sampled_from(["0.20", "3.10", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "0644", "1e3"]),
)

# Where the number is written: (YAML with {} for the number, keys that lead to it).
LAYOUTS = [
    ("value: {}\n", ("value",)),
    ("value: {}   # a comment\n", ("value",)),
    ("value: &anchor {}\ncopy: *anchor\n", ("copy",)),
    ("value:\n  - first\n  - {}\n", ("value", 1)),
    ("value: [first, {}, last]\n", ("value", 1)),
    ("value:\n  inner:\n    key: {}\n", ("value", "inner", "key")),
    ("value: {{key: {}}}\n", ("value", "key")),
]


@given(written=NUMERIC, layout=st.sampled_from(LAYOUTS))
def test_text_found_is_the_text_written(vi, written, layout):
    template, keys = layout
    text = template.format(written)
    try:
        loaded = DataLoader().load(text)  # what Ansible makes of the file
    except Exception:  # pylint: disable=broad-except  # not YAML in this place (e.g. 1:2 in a flow mapping)
        return
    value = loaded
    for key in keys:
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return  # YAML read it as a string (1e3, 0_8): nothing to look up
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vars.yml")
        write(path, text)
        source = vi.SourceText()
        assert source.text_in(source.vars_file_places([path]), keys, value) == written


def test_numbers_generator_yields_numbers():
    # Guard for the property above: its generator must mostly write what YAML reads as a number.
    seen = []

    @given(written=NUMERIC)
    def collect(written):
        seen.append(isinstance(yaml.safe_load("v: %s" % written)["v"], (int, float)))

    collect()  # pylint: disable=no-value-for-parameter
    assert sum(seen) >= 0.8 * len(seen), "the property would check too few numbers"


@pytest.mark.parametrize("text, position", [
    ("argument_specs:\n  main:\n\toptions: {}\n", " (line 3, column 1)"),
    ("argument_specs:\n  main:\n    options:\n      a: 1\n     b: 2\n", " (line 5, column 6)"),
    ("argument_specs:\n  main:\n    short_description: \"abc\n", " (line 4, column 1)"),
    ("argument_specs:\n  main:\n    default: {{ x }}\n", " (line 3, column 15)"),
    ("argument_specs:\n  main: !unsafe {a: 1}\n", ""),  # Ansible's own tags are fine
    ("- a\n- b\n", ""),
])
def test_yaml_error_position(vi, tmp_path, text, position):
    path = str(tmp_path / "argument_specs.yml")
    write(path, text)
    assert vi.yaml_error_position(path) == position


def test_unreadable_spec_names_line_and_column(vi, tmp_path):
    role = str(tmp_path / "broken")
    write(os.path.join(role, "meta", "argument_specs.yml"),
          "argument_specs:\n  main:\n    options:\n      a: 1\n     b: 2\n")
    problem = vi.Role(DataLoader(), role).spec_problem
    assert problem.startswith("role broken: ")
    assert "meta/argument_specs.yml cannot be read (line 5, column 6): YAML parsing failed" in problem


def test_script_quotes_the_text_from_each_kind_of_source(tmp_path):
    """Through the script: YAML inventory (group, host, host range), group_vars directory
    (later file wins), host_vars, list items, an anchor; an INI inventory by value alone."""
    inv = str(tmp_path / "y")
    write(os.path.join(inv, "hosts.yml"), """\
all:
  vars:
    drafter_owner: 0700
  children:
    g1:
      vars:
        drafter_mode: 0600
      hosts:
        h1:
          base_user: 0755
        node[01:02]:
          base_group: 1.50
""")
    write(os.path.join(inv, "group_vars", "g1", "main.yml"), """\
base_directory_mode: 0644   # comment
python_env_vllm_version: 0.20
python_env_python: 3.12
vllm_service_extra_args: [--x, 0644, 1.50, 7]
base_shm_policy: &g 010
base_cache_dir: *g
""")
    write(os.path.join(inv, "group_vars", "g1", "z.yml"), "python_env_python: 3.10\n")
    write(os.path.join(inv, "host_vars", "h1.yml"), "drafter_sha256: 0x1F\n")
    ini = str(tmp_path / "ini")
    write(os.path.join(ini, "hosts.ini"), "h2 python_env_vllm_version=0.20 base_user=0755\n")
    proc = subprocess.run([sys.executable, SCRIPT, "--inventory", inv, "--inventory", ini, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = {}
    for finding in json.loads(proc.stdout)["findings"]:
        key = (finding["inventory"], finding["host"], finding["variable"])
        found[key] = found.get(key, "") + finding["message"] + "\n"
    expected = {
        ("y", "h1", "drafter_owner"): "YAML read 0700 as the int 448",
        ("y", "h1", "drafter_mode"): "YAML read 0600 as the int 384",
        ("y", "h1", "base_user"): "YAML read 0755 as the int 493",
        ("y", "node02", "base_group"): "YAML read 1.50 as the float 1.5",
        ("y", "h1", "base_directory_mode"): "YAML read 0644 as the int 420",
        ("y", "h1", "python_env_vllm_version"): "YAML read 0.20 as the float 0.2",
        ("y", "h1", "python_env_python"): "YAML read 3.10 as the float 3.1",  # z.yml wins over main.yml
        ("y", "h1", "vllm_service_extra_args"): "[1]: expected a string, YAML read 0644 as the int 420",
        ("y", "h1", "base_shm_policy"): "YAML read 010 as the int 8",
        ("y", "h1", "base_cache_dir"): "YAML read 010 as the int 8",
        ("y", "h1", "drafter_sha256"): "YAML read 0x1F as the int 31",
        # INI: no YAML to read back; a float is reported by its value, an int (0755 stays a string) not.
        ("ini", "h2", "python_env_vllm_version"): "YAML read 0.2 as the float 0.2",
    }
    for key, part in expected.items():
        assert part in found.get(key, ""), (key, found.get(key))
    assert ("ini", "h2", "base_user") not in found
    assert "[2]: expected a string, YAML read 1.50 as the float 1.5" in found[("y", "h1", "vllm_service_extra_args")]
