"""Every boolean role variable is read through `| bool` where its truth decides something.

An extra variable is a string (`-e vllm_service_rollback=false` gives "false"), and the argument spec checks the
type without converting the variable: a bare `when: vllm_service_rollback` is then an error in ansible-core 2.19
(a string is not a conditional's result), and `var and ...` or `'a' if var else 'b'` takes "false" as true. The
GPU run found one (f777cbc: `-e serving_benchmark_plot=false` drew the plot); this test finds the rest, in the
roles' and playbooks' conditions and in every Jinja expression of the roles' tasks, vars and templates.
"""
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONDITION_KEYS = ("when", "failed_when", "changed_when", "until", "that")
# A use whose value is passed on, not decided on: a test (`is none`, `is defined`) or a filter chain with bool.
_CHAIN = re.compile(r"((?:\s*\|\s*[A-Za-z_.]+(?:\([^()]*\))?)*)")
# In an expression that is not a condition: the variable as an operand of if/not/and/or.
_TRUTH_BEFORE = re.compile(r"(?:\bif|\bnot|\band|\bor|\(\s*)\s*$")
_TRUTH_AFTER = re.compile(r"^\s*(?:and|or|else)\b|^\s*\)\s*(?:and|or)\b")


def _bool_options():
    names = set()
    for spec in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(spec) as fh:
            for entry in (yaml.safe_load(fh)["argument_specs"] or {}).values():
                names.update(n for n, o in (entry.get("options") or {}).items() if o.get("type") == "bool")
    return names


BOOLS = _bool_options()
_USE = re.compile(r"\b(%s)\b" % "|".join(sorted(BOOLS, key=len, reverse=True)))


def _decided_bare(text, condition):
    """The boolean variables ``text`` decides on without `| bool` (``condition``: the whole text is a condition)."""
    bare = []
    for match in _USE.finditer(text):
        after = text[match.end():]
        chain = _CHAIN.match(after).group(1)
        if "bool" in chain or re.match(r"\s+is\s", after) or re.match(r"\s*[=!]=", after):
            continue
        if condition or _TRUTH_BEFORE.search(text[:match.start()]) or _TRUTH_AFTER.match(after[len(chain):]):
            bare.append(match.group(1))
    return bare


def _strings(node, key=None):
    """(text, is a condition) for each string of a YAML document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, key)
    elif isinstance(node, str):
        yield node, key in CONDITION_KEYS


def _files():
    yml = glob.glob(os.path.join(ROOT, "roles", "*", "*", "*.yml")) + glob.glob(
        os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    return sorted(f for f in yml if os.sep + "meta" + os.sep not in f and os.sep + "defaults" + os.sep not in f)


def test_the_roles_have_boolean_options():
    assert {"vllm_service_rollback", "serving_benchmark_plot", "lxc_gpu_boot_unit"} <= BOOLS


@pytest.mark.parametrize("path", _files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_no_bare_boolean_in_yaml(path):
    with open(path) as fh:
        docs = yaml.safe_load(fh)
    found = []
    for text, condition in _strings(docs):
        for expr in ([text] if condition else re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", text, re.S)):
            expr = expr if isinstance(expr, str) else "".join(expr)
            found += ["%s in %r" % (name, expr.strip()[:100]) for name in _decided_bare(expr, condition)]
    assert not found, "use `| bool` (an extra var is a string): %s" % "; ".join(found)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "roles", "*", "templates", "*.j2"))),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_no_bare_boolean_in_templates(path):
    with open(path) as fh:
        text = fh.read()
    found = []
    for statement in re.findall(r"\{%-?\s*(?:if|elif)\b(.*?)-?%\}", text, re.S):
        found += ["%s in {%% if%s %%}" % (name, statement[:80]) for name in _decided_bare(statement, True)]
    for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S):
        found += ["%s in {{%s}}" % (name, expr[:80]) for name in _decided_bare(expr, False)]
    assert not found, "use `| bool` (an extra var is a string): %s" % "; ".join(found)


@pytest.mark.parametrize("text, condition, bare", [
    ("vllm_service_rollback", True, ["vllm_service_rollback"]),
    ("vllm_service_rollback | bool", True, []),
    ("vllm_service_rollback | default(true) | bool and x", True, []),
    ("vllm_service_rollback is defined", True, []),
    (" 'a' if vllm_service_rollback else 'b' ", False, ["vllm_service_rollback"]),
    (" vllm_service_rollback and x ", False, ["vllm_service_rollback"]),
    (" {'rollback': vllm_service_rollback} ", False, []),
    (" vllm_service_rollback ", False, []),
])
def test_the_rule(text, condition, bare):
    assert _decided_bare(text, condition) == bare
