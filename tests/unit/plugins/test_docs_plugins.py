# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The plugins' user documentation: module attributes written once (doc_fragments/_attributes.py), a doc for
every filter, pointers into the collection's docs/ that resolve, and ansible-doc rendering it all."""

import ast
import glob
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from ansible_collections.inference.gpu_host.plugins.doc_fragments import _attributes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# The directory holding ansible_collections/ as this test imports it (the clone's .collections link, or
# ansible-test's own layout): ansible-doc must read the same copy.
COLLECTIONS_PATH = os.path.abspath(os.path.join(os.path.dirname(_attributes.__file__), *[os.pardir] * 5))
FQCN = "inference.gpu_host"
FRAGMENT = FQCN + "._attributes"
SUPPORT_VARIANTS = ("CHECK_MODE_DIFF_MODE", "INFO_MODULE")
PLATFORM_VARIANTS = ("PLATFORM_LINUX", "PLATFORM_POSIX")
DOCS_POINTER = re.compile(r"C\(docs/([^)]+)\)")

MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
FILTER_FILES = sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")))


def _assigned_string(path, name):
    """The string literal a plugin file assigns to ``name`` (DOCUMENTATION, ...), read without importing it."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value.value
    return None


def _module_doc(module):
    return yaml.safe_load(_assigned_string(os.path.join(ROOT, "plugins", "modules", module + ".py"), "DOCUMENTATION"))


def _filters():
    """{filter name: (function, {DOCUMENTATION, EXAMPLES, RETURN})}, from <name>.yml beside the plugin file, else
    from the plugin file's own strings (each None when absent)."""
    found = {}
    for path in FILTER_FILES:
        name = os.path.basename(path)[:-3]
        plugin = importlib.import_module("ansible_collections.inference.gpu_host.plugins.filter." + name)
        for filter_name, function in plugin.FilterModule().filters().items():
            sidecar = os.path.join(ROOT, "plugins", "filter", filter_name + ".yml")
            if os.path.exists(sidecar):
                with open(sidecar) as handle:
                    docs = yaml.safe_load(handle)
            else:
                docs = dict((key, _assigned_string(path, key)) for key in ("DOCUMENTATION", "EXAMPLES", "RETURN"))
                docs["DOCUMENTATION"] = yaml.safe_load(docs["DOCUMENTATION"] or "null")
                docs["RETURN"] = yaml.safe_load(docs["RETURN"] or "null")
            found[filter_name] = (function, docs)
    return found


def _ansible_doc(plugin_type, names, tmp_path):
    """ansible-doc --json for several plugins in one run, from the copy of the collection this test imports."""
    program = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    if not os.path.exists(program):
        program = shutil.which("ansible-doc")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    proc = subprocess.run([program, "--json", "-t", plugin_type] + ["%s.%s" % (FQCN, n) for n in names],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          cwd=str(tmp_path), env=env, timeout=120, check=False)
    assert proc.returncode == 0 and "ERROR" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


# ------------------------------------------------------------- modules ---

@pytest.mark.parametrize("module", MODULES)
def test_every_module_takes_its_attributes_from_the_fragment(module):
    doc = _module_doc(module)
    fragments = doc.get("extends_documentation_fragment") or []
    assert fragments[:1] == [FRAGMENT], fragments
    variants = [f[len(FRAGMENT) + 1:] for f in fragments[1:] if f.startswith(FRAGMENT + ".")]
    assert all(isinstance(getattr(_attributes.ModuleDocFragment, v, None), str) for v in variants), variants
    assert len([v for v in variants if v in SUPPORT_VARIANTS]) == 1, variants
    assert len([v for v in variants if v in PLATFORM_VARIANTS]) == 1, variants
    # No copied description or support level: a module adds at most its own details.
    own = doc.get("attributes") or {}
    assert all(set(entry) == {"details"} for entry in own.values()), own


def test_ansible_doc_renders_every_module_with_its_attributes(tmp_path):
    rendered = _ansible_doc("module", MODULES, tmp_path)
    assert sorted(rendered) == ["%s.%s" % (FQCN, m) for m in MODULES]
    for name, entry in rendered.items():
        attributes = entry["doc"]["attributes"]
        assert sorted(attributes) == ["check_mode", "diff_mode", "idempotent", "platform"], name
        for key, attribute in attributes.items():
            assert attribute.get("description") and attribute.get("support") in ("full", "N/A"), (name, key)
        assert attributes["platform"]["platforms"] in ("linux", "posix"), name


# ------------------------------------------------------------- filters ---

def test_every_filter_is_documented_with_its_arguments():
    filters = _filters()
    assert {"systemd_exec", "flash_attn_gate", "dflash_stale_ids", "vllm_service_plan"} <= set(filters)
    for name, (function, docs) in sorted(filters.items()):
        doc = docs.get("DOCUMENTATION")
        assert doc is not None, "filter %s has no documentation" % name
        assert doc["name"] == name and doc.get("short_description"), name
        assert docs.get("EXAMPLES") and docs["RETURN"]["_value"]["type"], name
        # _input is the piped value; each other option is one more argument of the function
        parameters = [p for p in inspect.signature(function).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(doc["options"]) == len(parameters) and "_input" in doc["options"], name


def test_ansible_doc_renders_every_filter(tmp_path):
    names = sorted(_filters())
    rendered = _ansible_doc("filter", names, tmp_path)
    assert sorted(rendered) == ["%s.%s" % (FQCN, n) for n in names]
    assert all(entry["doc"].get("short_description") for entry in rendered.values())


def test_systemd_quoting_docs_say_control_characters_are_refused():
    doc = _filters()["systemd_exec"][1]["DOCUMENTATION"]
    text = " ".join([doc["short_description"]] + doc["description"])
    assert "refusing control characters" in doc["short_description"]
    assert all(word in text for word in ("newline", "carriage return", "NUL", "control character"))


# ---------------------------------------------------------- docs/ links ---

def test_pointers_into_docs_resolve():
    sources = glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
    sources += glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml"))
    pointed = set()
    for path in sources:
        with open(path) as handle:
            pointed.update((os.path.basename(path), target) for target in DOCS_POINTER.findall(handle.read()))
    assert pointed, "no module or filter points into docs/"
    missing = sorted((source, target) for source, target in pointed
                     if not os.path.isfile(os.path.join(ROOT, "docs", target)))
    assert not missing, missing
