# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The lxc_gpu role's defaults and argument_specs stay in sync, and its boot unit renders as documented."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import jinja2
import pytest
import yaml

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "lxc_gpu")


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


DEFAULTS = _load("defaults", "main.yml")
SPEC = _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
ROLE_VARS = _load("vars", "main.yml")


def test_every_default_is_documented_and_every_option_has_a_default():
    assert sorted(DEFAULTS) == sorted(SPEC)


@pytest.mark.parametrize("name", sorted(SPEC))
def test_documented_default_equals_the_real_one(name):
    # argument_specs defaults do not set variables: they must say what defaults/main.yml sets.
    assert SPEC[name].get("default") == DEFAULTS[name], name


@pytest.mark.parametrize("name", sorted(SPEC))
def test_every_option_is_role_prefixed_and_described(name):
    assert name.startswith("lxc_gpu_")
    assert SPEC[name].get("description")


def test_container_options_have_no_defaults_that_would_be_ignored():
    # Per-container keys fall back to the role-wide variables in tasks/preflight.yml;
    # a suboption default in argument_specs would document a value nothing applies.
    sub = SPEC["lxc_gpu_containers"]["options"]
    assert sub["vmid"]["required"] is True
    assert [k for k, v in sub.items() if "default" in v] == []


def _render_unit(**overrides):
    # The template reads the paths merged over their defaults (vars/main.yml's __lxc_gpu_paths), as the role does.
    values = dict(DEFAULTS, ansible_managed="Ansible managed", __lxc_gpu_paths=ROLE_VARS["__lxc_gpu_paths_defaults"])
    values.update(overrides)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(ROLE, "templates")), keep_trailing_newline=True)
    env.filters["comment"] = lambda text: "#\n# %s\n#" % text
    return env.get_template("nvidia-uvm-init.service.j2").render(**values)


def test_boot_unit_creates_the_uvm_nodes_before_the_guests():
    unit = _render_unit()
    lines = unit.splitlines()
    # -u -c 0: nvidia-uvm is minor 0, nvidia-uvm-tools minor 1 (nvidia-modprobe makes base and base+1).
    assert "ExecStart=/usr/bin/nvidia-modprobe -u -c 0" in lines
    assert "Before=pve-guests.service" in lines
    assert "ConditionPathExists=/usr/bin/nvidia-modprobe" in lines
    assert "Type=oneshot" in lines and "RemainAfterExit=yes" in lines
    assert "WantedBy=multi-user.target" in lines


def test_boot_unit_has_one_execstart_per_argument_list():
    unit = _render_unit(lxc_gpu_nvidia_modprobe_args=[["-u", "-c", 0], ["-c", "255"]])
    assert [line for line in unit.splitlines() if line.startswith("ExecStart=")] == [
        "ExecStart=/usr/bin/nvidia-modprobe -u -c 0",
        "ExecStart=/usr/bin/nvidia-modprobe -c 255",
    ]
