# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""python_env's state read compares the generation's expected.txt with vars/main.yml's __python_env_expected instead of
rendering expected.txt.j2 (issue 37): both must name the same requirements, with and without flash-attn 2, as
ansible-core templates them (a "\\n" in a Jinja string there stays a backslash and an n)."""
from __future__ import absolute_import, division, print_function

import json
import os

import yaml
from _module_runner import ROOT, run_playbook

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.generations import requirement_lines

ROLE = os.path.join(ROOT, "roles", "python_env")

PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    __python_env_lock: "# header\\ntorch==2.9.0 --hash=sha256:00\\nvllm==0.11.0  # pinned\\n"
    python_env_lock_file: /x/lock.txt
    python_env_flash_attn_version: 2.8.3
    __python_env_expected: %(expected)s
  tasks:
    - name: both
      ansible.builtin.debug:
        msg:
          var: "{{ __python_env_expected }}"
          template: "{{ lookup('ansible.builtin.template', '%(template)s') }}"
      loop: [true, false]
      vars:
        __python_env_fa: {install: "{{ item }}"}
"""


def test_the_expected_set_is_what_the_template_writes(tmp_path):
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        expected = yaml.safe_load(f)["__python_env_expected"]
    out, _proc = run_playbook(tmp_path, PLAY % {"expected": json.dumps(expected),
                                                "template": os.path.join(ROLE, "templates", "expected.txt.j2")})
    task = out["plays"][0]["tasks"][0]
    with_fa, without = [r["msg"] for r in task["hosts"]["localhost"]["results"]]
    assert requirement_lines(with_fa["var"]) == requirement_lines(with_fa["template"])
    assert "flash-attn==2.8.3" in requirement_lines(with_fa["var"])
    assert requirement_lines(without["var"]) == requirement_lines(without["template"])
    assert not any("flash-attn" in line for line in requirement_lines(without["var"]))
