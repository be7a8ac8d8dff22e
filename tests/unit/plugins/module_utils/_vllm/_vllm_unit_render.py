# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Render the vllm_service role's templates as a play does, in a process of its own.

Ansible's Templar with the role's defaults/main.yml and vars/main.yml, so the role's own filters
(found through the collection loader, which must be installed before anything of the collection
is imported: hence a process of its own, not the test's) derive what the templates use.

Protocol: one JSON object a line on stdin, {"template": "vllm.service.j2", "vars": {...}}; one a line
on stdout, {"text": "..."} or {"error": "<the exception's message>"}.

  python _vllm_unit_render.py <collections path> <role directory>
"""
import json
import os
import sys


def main(collections_path, role):
    sys.path.insert(0, collections_path)
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader([collections_path])
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    loader = DataLoader()
    base = {"ansible_managed": "Ansible managed", "ansible_check_mode": False, "inventory_hostname": "gpu-1"}
    for name in ("defaults", "vars"):
        base.update(loader.load_from_file(os.path.join(role, name, "main.yml"), trusted_as_template=True))
    sources = {}
    for name in ("vllm.service.j2", "vllm.env.j2"):
        with open(os.path.join(role, "templates", name)) as handle:
            sources[name] = trust_as_template(handle.read())
    for line in sys.stdin:
        request = json.loads(line)
        variables = dict(base)
        # Inventory values are data, not templates (as a value set in group_vars that holds no "{{").
        variables.update(request["vars"])
        try:
            reply = {"text": Templar(loader=loader, variables=variables).template(sources[request["template"]])}
        except Exception as exc:  # pylint: disable=broad-except
            reply = {"error": "%s: %s" % (type(exc).__name__, exc)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
