"""Every role's defaults/main.yml and meta/argument_specs.yml describe the same variables.

argument_specs defaults do not set variables (Ansible applies only defaults/main.yml): the two
files must be kept in sync by hand, and this test is what keeps them honest.
"""
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if os.path.isfile(os.path.join(ROOT, "roles", d, "meta", "argument_specs.yml")))


def _load(role, *parts):
    with open(os.path.join(ROOT, "roles", role, *parts)) as fh:
        return yaml.safe_load(fh) or {}


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_argument_specs(role):
    defaults = _load(role, "defaults", "main.yml")
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(options), "defaults/main.yml and meta/argument_specs.yml list different variables"
    for name, spec in options.items():
        assert name.startswith(role + "_"), "%s: not prefixed with the role name" % name
        assert spec.get("description"), "%s: undocumented" % name
        if "default" in spec:
            assert spec["default"] == defaults[name], "%s: argument_specs default %r != defaults/main.yml %r" % (
                name, spec["default"], defaults[name])
        else:
            assert defaults[name] is None, "%s: has a default in defaults/main.yml but none in argument_specs" % name


def test_every_role_has_argument_specs():
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    assert roles == ROLES, "roles without meta/argument_specs.yml: %s" % sorted(set(roles) - set(ROLES))


def _dict_groups(role):
    """(name, suboptions) of each dict option whose keys are documented one by one (a group of knobs)."""
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    return [(name, spec["options"]) for name, spec in sorted(options.items())
            if spec.get("type") == "dict" and spec.get("options")]


@pytest.mark.parametrize("role", ROLES)
def test_dict_groups_have_one_home_for_their_defaults(role):
    """A documented dict (drafter_config_overrides, vllm_service_systemd, ...) is {} in defaults/main.yml; the
    role merges it over vars/main.yml's __<name>_defaults, whose values are the suboptions' documented defaults."""
    groups = _dict_groups(role)
    role_vars = _load(role, "vars", "main.yml") if groups else {}
    defaults = _load(role, "defaults", "main.yml")
    for name, suboptions in groups:
        assert defaults[name] == {}, "%s: defaults/main.yml must be {} (the keys' defaults are in vars/main.yml)" % name
        documented = dict((key, spec["default"]) for key, spec in suboptions.items() if "default" in spec)
        if not documented:
            continue
        assert role_vars.get("__%s_defaults" % name) == documented, (
            "%s: vars/main.yml's __%s_defaults must be the suboptions' defaults %r" % (name, name, documented))
        merged = role_vars.get("__%s" % name, "")
        assert "__%s_defaults" % name in merged and "combine(%s)" % name in merged, (
            "%s: vars/main.yml's __%s must be __%s_defaults | combine(%s)" % (name, name, name, name))


def test_at_most_200_role_variables():
    """Issue 38: what only passes a value through is a key of a documented dict, not a variable of its own."""
    names = set()
    for role in ROLES:
        for spec in _load(role, "meta", "argument_specs.yml")["argument_specs"].values():
            names.update(spec.get("options", {}))
    assert len(names) <= 200, "%d role variables" % len(names)
