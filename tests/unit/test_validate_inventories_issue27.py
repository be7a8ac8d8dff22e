# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""scripts/validate_inventories.py on what issue 27 found it let through: a near-miss role prefix
(vllm_servce_api_key: the server then ran without a key), a string where a list is expected, one host
defined in two inventory files, control characters rendered into the unit, and a YAML bomb that hung it.
Run for real (a subprocess on a real inventory) and, for the bounds, as an imported module with properties."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings, strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "validate_inventories.py")


@pytest.fixture(scope="module")
def vi():
    """The script as a module; the environment it sets for itself is put back."""
    saved = dict(os.environ)
    try:
        spec = importlib.util.spec_from_file_location("validate_inventories_issue27", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return module


@pytest.fixture(scope="module")
def roles(vi):
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    return vi.load_roles(DataLoader())


def run(*args):
    proc = subprocess.run([sys.executable, SCRIPT] + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def laughs(levels, fanout):
    """A "billion laughs" document: level 0 a list of ``fanout`` strings, each next level ``fanout`` aliases."""
    lines = ["l0: &l0 [%s]" % ", ".join(['"lol"'] * fanout)]
    lines += ["l%d: &l%d [%s]" % (i, i, ", ".join(["*l%d" % (i - 1)] * fanout)) for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    inv = str(tmp_path_factory.mktemp("inventories") / "team")
    write(os.path.join(inv, "hosts.yml"), "all:\n  children:\n    inference_hosts:\n      hosts:\n        h1:\n")
    write(os.path.join(inv, "more.yml"), "all:\n  children:\n    qwen_profile:\n      hosts:\n        h1:\n")
    write(os.path.join(inv, "group_vars", "inference_hosts.yml"), """\
vllm_servce_api_key: sk-not-a-real-key
drafted_by: the team
base_packages: "curl,git"
vllm_service_environment: "A=1"
vllm_service_supplementary_groups: 44
vllm_service_systemd: {limit_memlock: "infinity\\nExecStartPre=/bin/sh -c 'id > /root/pwned'"}
vllm_service_group: "vllm\\rUser=root"
vllm_service_extra_args: ["--max-num-seqs", "8\\u2028x"]
vllm_service_hardening_overrides: {ExecStartPre: /bin/true}
""")
    code, out, err = run("--inventory", inv, "--json")
    assert code == 1, (out, err)
    report = json.loads(out)
    return dict(((f["host"], f["variable"]), f) for f in report["findings"])


def test_exactly_these_findings(findings):
    assert set(findings) == {
        ("h1", "-"), ("h1", "vllm_servce_api_key"), ("h1", "base_packages"), ("h1", "vllm_service_environment"),
        ("h1", "vllm_service_supplementary_groups"), ("h1", "vllm_service_systemd"),
        ("h1", "vllm_service_group"), ("h1", "vllm_service_extra_args"),
        ("h1", "vllm_service_hardening_overrides")}, json.dumps(findings, indent=2)


def test_what_the_unit_would_refuse_is_asked_of_module_utils_vllm_unit(findings):
    # check_unit_value, the role's own check of values rendered into the unit (a second ExecStartPre= here).
    finding = findings[("h1", "vllm_service_hardening_overrides")]
    assert finding["kind"] == "unit_value"
    assert finding["message"].startswith("ExecStartPre runs a command or changes the server's environment"), finding


def test_a_near_miss_prefix_names_the_roles_closest_variable(findings):
    finding = findings[("h1", "vllm_servce_api_key")]
    assert finding["kind"] == "near_miss_prefix"
    assert finding["message"] == ("no role reads it: its prefix is a near miss of role vllm_service's (vllm_service_); "
                                  "did you mean vllm_service_api_key? (set in group_vars/inference_hosts)")


def test_a_string_or_number_where_a_list_or_mapping_is_expected(findings):
    assert findings[("h1", "base_packages")]["message"].startswith(
        'expected a list, got the string "curl,git": Ansible would silently split it on commas into ["curl", "git"]')
    assert findings[("h1", "vllm_service_supplementary_groups")]["message"].startswith(
        'expected a list, got the int 44: Ansible would silently make it ["44"]')
    assert findings[("h1", "vllm_service_environment")]["message"].startswith(
        'expected a mapping, got the string "A=1"')


def test_control_characters_bound_for_the_unit(findings):
    for name, char, where in (("vllm_service_systemd", "\\n", "limit_memlock: "), ("vllm_service_group", "\\r", ""),
                              ("vllm_service_extra_args", "\\u2028", "[1]: ")):
        finding = findings[("h1", name)]
        assert finding["kind"] == "unit_value"
        assert finding["message"].startswith(where + "holds the control character %s at position" % char), finding
        assert "pwned" not in finding["message"]  # the value itself is never shown


def test_a_host_defined_in_two_files(findings):
    finding = findings[("h1", "-")]
    assert finding["kind"] == "host_in_two_files"
    assert finding["message"].startswith("defined in hosts.yml and more.yml: Ansible merges the definitions silently")


def test_a_yaml_bomb_is_refused_at_once_naming_the_file(tmp_path):
    inv = str(tmp_path / "bomb")
    write(os.path.join(inv, "hosts.yml"), "all:\n  hosts:\n    h1:\n")
    # Before: 20 s and counting for 9^7 expansions (it walks the role variable); now refused on sight.
    write(os.path.join(inv, "host_vars", "h1.yml"), laughs(9, 9) + "vllm_service_extra_args: *l9\n")
    started = time.monotonic()
    code, out, err = run("--inventory", inv)
    assert time.monotonic() - started < 30
    assert code == 1, (out, err)
    assert out.splitlines()[0].startswith(
        "bomb:-: host_vars/h1.yml: host_vars/h1.yml has aliases that expand to more than 10000 nodes (")
    assert "refused before Ansible reads it, and this inventory is not loaded" in out


@pytest.mark.parametrize("name, role, closest", [
    ("vllm_servce_api_key", "vllm_service", "vllm_service_api_key"),
    ("vlm_service_port", "vllm_service", "vllm_service_port"),
    ("vllmservice_port", "vllm_service", "vllm_service_port"),  # the "_" left out is one edit too
    ("pyhton_env_venv_dir", "python_env", "python_env_venv_dir"),
    ("draftr_source_url", "drafter", "drafter_source_url"),
    ("draftr_source", "drafter", "drafter_source_url"),    # the closest variable, not a made-up one
    ("drafted_by", None, None),                            # no drafter variable is close to drafter_by
    ("case_packages", "base", "base_packages"),
    ("baseline_packages", None, None),                     # "baseline" is 4 edits from "base"
    ("cast_packages", None, None),                         # base: only 1 edit allowed (a short name)
    ("ansible_host", None, None),
    ("__vllm_servce_x", None, None),
])
def test_near_miss(vi, roles, name, role, closest):
    found, variable = vi.near_miss(name, roles)
    assert (found.name if found else None, variable) == (role, closest)


# --- properties -------------------------------------------------------------------------------------------------

def _expanded(levels, fanout):
    """Nodes of laughs(levels, fanout) with every alias expanded: the mapping, keys, and each level's list."""
    sizes = [1 + fanout]                                    # l0: a list of fanout scalars
    while len(sizes) <= levels:
        sizes.append(1 + fanout * sizes[-1])
    return 1 + (levels + 1) + sum(sizes)                    # the mapping, its keys, its values


@settings(max_examples=120, deadline=None, derandomize=True)
@given(levels=st.integers(min_value=0, max_value=12), fanout=st.integers(min_value=1, max_value=12))
def test_property_aliases_are_bounded_by_what_they_expand_to(vi, levels, fanout):
    text = laughs(levels, fanout)
    written = 1 + 2 * (levels + 1) + fanout                 # mapping, keys, lists, level 0's scalars
    started = time.monotonic()
    problem = vi.yaml_bound_problem(text)
    assert time.monotonic() - started < 1.0                 # linear in the text, whatever it expands to
    assert (problem is not None) is (_expanded(levels, fanout) - written > vi.MAX_YAML_EXPANSION), (levels, fanout)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(text=st.text(alphabet=st.sampled_from(list("&*ab: -[]{},\n'\"!<")), max_size=200))
def test_property_any_text_gets_an_answer_never_an_exception(vi, text):
    problem = vi.yaml_bound_problem(text)
    assert problem is None or isinstance(problem, str)


@pytest.mark.parametrize("text, problem", [
    ("a: " + "[" * 500 + "]" * 500 + "\n", "nests more than 100 levels deep"),
    ("a: " + "[" * 99 + "]" * 99 + "\n", None),
    ("a: &a [*a]\n", "has a recursive alias (a node that contains itself)"),
    ("base: &b {port: 1}\nx:\n  <<: *b\n", None),           # anchors and merge keys as people use them
])
def test_depth_recursion_and_ordinary_anchors(vi, text, problem):
    found = vi.yaml_bound_problem(text)
    assert (found if problem is None else (found or "").split(":")[0]) == problem


@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.data())
def test_property_one_typo_in_a_roles_prefix_is_caught_with_its_variable(vi, roles, data):
    role = data.draw(st.sampled_from([r for r in roles if r.options and len(r.name) > 7]))
    variable = data.draw(st.sampled_from(sorted(role.options)))
    index = data.draw(st.integers(min_value=0, max_value=len(role.name) - 1))
    char = data.draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz"))
    prefix = role.name[:index] + char + role.name[index + 1:]
    if prefix == role.name or vi.role_of(prefix + variable[len(role.name):], roles)[0] is not None:
        return
    found, closest = vi.near_miss(prefix + variable[len(role.name):], roles)
    assert (found.name, closest) == (role.name, variable)
