# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The packages of plugins/module_utils form a tree (issue 38): the layers docs/architecture.md declares, held here.

Every import of every Python file in plugins/ is read from its syntax tree: module level and inside functions
(the lazy imports that keep filters fast), ``import x``, ``from x import y`` (``y`` a module or a name) and relative
forms, and the module_utils paths that filters name as strings (each filter file's table). Then:

* a module_utils package imports only packages of a lower layer: never one of its own layer, never one above;
* the files of one package import each other without a loop (the order among them is derived, not declared);
* module_utils imports no other kind of plugin, and a module, filter, action or callback plugin imports module_utils,
  plugin_utils (the controller plugins' shared code, such as the filters' plumbing) or a plugin of its own kind (a
  shared action base), without a loop: entry points sit above every layer;
* every package is in the declared table, and every package in the table exists.
"""
from __future__ import absolute_import, division, print_function

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLUGINS = os.path.join(ROOT, "plugins")
PREFIX = "ansible_collections.inference.gpu_host.plugins."
DOC = os.path.join(ROOT, "docs", "architecture.md")


def declared_layers(text):
    """{package: layer} from the table between <!-- layers:begin --> and <!-- layers:end -->."""
    match = re.search(r"<!-- layers:begin -->\n(.*?)<!-- layers:end -->", text, re.S)
    assert match, "docs/architecture.md has no layers table between its markers"
    layers = {}
    for row in re.findall(r"^\|\s*(\d+)\s*\|([^|]*)\|", match.group(1), re.M):
        for package in re.findall(r"`(_[a-z_]+)`", row[1]):
            assert package not in layers, "%s is declared twice" % package
            layers[package] = int(row[0])
    assert layers, "the layers table of docs/architecture.md is empty"
    return layers


def _module_files():
    """{dotted name below plugins (e.g. module_utils._vllm.unit): path} of every Python file in plugins/."""
    found = {}
    for base, dirs, files in os.walk(PLUGINS):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(base, name), PLUGINS)[:-3].replace(os.sep, ".")
                found[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(base, name)
    return found


FILES = _module_files()


def _resolve(dotted):
    """The plugins file a dotted name below plugins names (a module, else its package), or None."""
    while dotted:
        if dotted in FILES:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return None


def imports_of(name):
    """[(line, imported file)]: every collection file ``name`` imports, wherever the import statement is."""
    with open(FILES[name]) as handle:
        tree = ast.parse(handle.read(), FILES[name])
    package = name if FILES[name].endswith("__init__.py") else name.rpartition(".")[0]
    found = []

    def add(node, dotted):
        target = _resolve(dotted)
        if target and target != name:
            found.append((node.lineno, target))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PREFIX):
                    add(node, alias.name[len(PREFIX):])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith(PREFIX):
                module = node.module[len(PREFIX):]
            else:
                continue
            for alias in node.names:
                # "from package import module" names a module; "from module import name" the module itself.
                add(node, module + "." + alias.name if module + "." + alias.name in FILES else module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # importlib paths: a full module path, or a module_utils path a filter joins to its prefix.
            text = node.value
            if text.startswith(PREFIX) and text[len(PREFIX):] in FILES:
                add(node, text[len(PREFIX):])
            elif re.match(r"^_[a-z]+\.[a-z_]+$", text) and "module_utils." + text in FILES:
                add(node, "module_utils." + text)
    return sorted(set(found))


GRAPH = dict((name, imports_of(name)) for name in FILES)


def _package(name):
    """The module_utils package of a file (e.g. _vllm), or None outside module_utils."""
    parts = name.split(".")
    return parts[1] if parts[0] == "module_utils" and len(parts) > 1 else None


def _kind(name):
    return name.split(".")[0]


def find_cycles(names, graph):
    """The import loops among ``names`` (each a list of files, first repeated last), by depth-first search."""
    names = set(names)
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for _line, target in graph.get(node, ()):
            if target not in names:
                continue
            if state.get(target) == "open":
                cycles.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(names):
        if node not in state:
            visit(node)
    return cycles


def layering_problems(graph, layers):
    """Every upward or sideways import between packages, every plugin-kind violation, every loop in a package."""
    problems = []
    for name, edges in sorted(graph.items()):
        mine = _package(name)
        for line, target in edges:
            theirs = _package(target)
            where = "plugins/%s.py:%d imports %s" % (name.replace(".", "/"), line, target)
            if _kind(name) == "module_utils" and _kind(target) != "module_utils":
                problems.append("%s: module_utils imports no other kind of plugin" % where)
            elif _kind(name) != "module_utils" and _kind(target) not in ("module_utils", "plugin_utils", _kind(name)):
                problems.append("%s: a %s plugin imports module_utils, plugin_utils or its own kind only"
                                % (where, _kind(name)))
            elif mine and theirs and mine != theirs and theirs in layers and mine in layers:
                if layers[theirs] >= layers[mine]:
                    problems.append("%s: %s (layer %d) may import only packages below it, and %s is layer %d"
                                    % (where, mine, layers[mine], theirs, layers[theirs]))
    groups = sorted(set(_package(n) or _kind(n) for n in graph))
    for group in groups:
        names = [n for n in graph if (_package(n) or _kind(n)) == group]
        for cycle in find_cycles(names, graph):
            problems.append("an import loop in %s: %s" % (group, " -> ".join(cycle)))
    return problems


def test_the_declared_layers_name_every_package_once():
    with open(DOC) as handle:
        layers = declared_layers(handle.read())
    packages = set(_package(n) for n in FILES if _package(n))
    assert set(layers) == packages, (
        "docs/architecture.md's layers table and plugins/module_utils differ: not declared %s, not a package %s"
        % (sorted(packages - set(layers)), sorted(set(layers) - packages)))


def test_imports_go_down_the_declared_layers_and_no_package_has_a_loop():
    with open(DOC) as handle:
        layers = declared_layers(handle.read())
    problems = layering_problems(GRAPH, layers)
    assert not problems, "\n".join(problems)


def test_lazy_imports_are_read_too():
    # unit.py imports serve.py inside functions only (the filters that render the unit stay light): still an edge.
    assert "module_utils._vllm.serve" in [t for _l, t in GRAPH["module_utils._vllm.unit"]]
    # A filter file names its module_utils in its table, imported on the first call.
    assert "module_utils._drafter.state" in [t for _l, t in GRAPH["filter.drafter"]]
    # The filters' tables name their module_utils as strings (plugin_utils/_filters.py imports them).
    assert "module_utils._stack.upgrade_plan" in [t for _l, t in GRAPH["filter.vllm"]]


@pytest.mark.parametrize("edges, expected", [
    # a loop inside a package, hidden in a function
    ({"module_utils._vllm.a": [(3, "module_utils._vllm.b")], "module_utils._vllm.b": [(9, "module_utils._vllm.a")]},
     "an import loop in _vllm: module_utils._vllm.a -> module_utils._vllm.b -> module_utils._vllm.a"),
    # an upward import
    ({"module_utils._vllm.a": [(3, "module_utils._drafter.b")], "module_utils._drafter.b": []},
     "_vllm (layer 2) may import only packages below it, and _drafter is layer 3"),
    # a sideways import
    ({"module_utils._venv.a": [(3, "module_utils._drafter.b")], "module_utils._drafter.b": []},
     "_venv (layer 3) may import only packages below it, and _drafter is layer 3"),
    # module_utils importing a filter, a module importing a module
    ({"module_utils._vllm.a": [(3, "filter.vllm")], "filter.vllm": []}, "module_utils imports no other kind"),
    ({"filter.a": [(3, "modules.b")], "modules.b": []},
     "a filter plugin imports module_utils, plugin_utils or its own"),
    ({"plugin_utils.a": [(3, "filter.b")], "filter.b": []}, "a plugin_utils plugin imports module_utils, plugin_utils"),
    ({"action.a": [(3, "action.b")], "action.b": [(5, "action.a")]},
     "an import loop in action: action.a -> action.b -> action.a"),
])
def test_the_check_finds_what_it_forbids(edges, expected):
    layers = {"_common": 0, "_vllm": 2, "_venv": 3, "_drafter": 3}
    assert not layering_problems({"action.a": [(3, "action.b")], "action.b": [(2, "module_utils._vllm.a")]}, layers)
    assert any(expected in problem for problem in layering_problems(edges, layers)), layering_problems(edges, layers)
