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
