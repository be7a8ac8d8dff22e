# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Every inventory in the repo renders the same unit, environment file and drafter config.json, byte for byte.

tests/render/render.yml renders them with the roles' own variables, filters, module and templates (real
ansible-playbook, connection local, nothing of the roles' tasks runs); this compares each file with
tests/render/golden/<inventory>/<host>/. A change that renames or folds role variables keeps these files as they
were; a change meant to alter them regenerates the golden files with ``IGH_RENDER_UPDATE=1`` and shows the diff
in review.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "module_utils"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "render", "golden")

# Each inference host of each inventory, and the stand-in files its drafter and target are rendered from: the
# 27B profile's header-only drafter (ct129's shapes) and its target, the tiny profile's, or a target alone
# (no drafter).
INVENTORIES = {
    "ct129": ("inventories/ct129", {"ct129": "q36_dflash"}),
    "local": ("inventories/local", {"ct129-local": "tiny_dflash"}),
    "fleet-example": ("inventories/fleet-example", {"ct129-a": "q36_target", "ct129-b": "q36_target"}),
    "gpu-ct": ("tests/gpu/ct/inventory", {"ct-h200": "tiny_dflash"}),
}


def _standins(directory):
    q36 = fx.write_target(os.path.join(directory, "q36"), fx.qwen36_target_config())
    tiny_config = fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024)
    tiny = fx.write_target(os.path.join(directory, "tiny"), tiny_config)
    return {
        "q36_dflash": {"drafter": fx.write_seed_drafter(os.path.join(directory, "seed.safetensors")),
                       "target": q36},
        "tiny_dflash": {"drafter": fx.write_tiny_drafter(os.path.join(directory, "tiny.safetensors")),
                        "target": tiny},
        "q36_target": {"target": q36},
    }


def _files(directory):
    found = {}
    for base, _dirs, names in os.walk(directory):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, directory)] = handle.read()
    return found


def test_every_inventory_is_covered():
    found = {os.path.join("inventories", name) for name in os.listdir(os.path.join(ROOT, "inventories"))}
    found.add("tests/gpu/ct/inventory")
    assert found == {path for path, _hosts in INVENTORIES.values()}


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_render_is_unchanged(name, tmp_path):
    inventory, hosts = INVENTORIES[name]
    files = _standins(str(tmp_path / "standins"))
    out = tmp_path / "out"
    for host in hosts:
        (out / host).mkdir(parents=True)
    extra = {"render_out": str(out), "render_standins": {host: files[kind] for host, kind in hosts.items()}}
    # Only what the run needs of the clone's ansible.cfg: its profile_tasks would print into the JSON.
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\ncollections_path = %s\n[inventory]\nignore_patterns = ^files$\n"
                      % os.path.join(ROOT, ".collections"))
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory, "--tags", "render",
         "tests/render/render.yml", "-e", "ansible_connection=local",
         "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", json.dumps(extra)],
        cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    rendered = _files(str(out))
    last = json.loads(proc.stdout)["plays"][0]["tasks"][-1]["hosts"]
    for host, result in last.items():
        for file_name, text in result["msg"].items():
            rendered[os.path.join(host, file_name)] = text.encode("utf-8")
    assert sorted({path.split(os.sep)[0] for path in rendered}) == sorted(hosts)
    golden_dir = os.path.join(GOLDEN, name)
    if os.environ.get("IGH_RENDER_UPDATE") == "1":
        for path, content in rendered.items():
            os.makedirs(os.path.dirname(os.path.join(golden_dir, path)), exist_ok=True)
            with open(os.path.join(golden_dir, path), "wb") as handle:
                handle.write(content)
    golden = _files(golden_dir)
    assert sorted(rendered) == sorted(golden)
    for path, content in sorted(rendered.items()):
        assert content == golden[path], "%s/%s differs from tests/render/golden" % (name, path)
