# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""vllm_serve.rollback_items: one switch is one generation, and all of it goes back."""
from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import (
    VllmServeError, rollback_items, rollback_plan)

UNIT, ENV = "/etc/systemd/system/vllm-tiny.service", "/etc/vllm/tiny.env"
GEN = {"link": "/root/ml-env", "dir": "/root/ml-env.generations/new", "previous_dir": "/root/ml-env.generations/old",
       "switched": True, "rollback_files": ["/etc/ansible/facts.d/inference_python_env.fact"]}


def test_everything_goes_back_together():
    items = rollback_items(True, UNIT, ENV, GEN, GEN["rollback_files"] + ["/root/models/d/config.json"])
    assert items["link"] == {"path": "/root/ml-env", "target": "/root/ml-env.generations/old",
                             "from": "/root/ml-env.generations/new"}
    assert items["files"] == ["/etc/ansible/facts.d/inference_python_env.fact", "/root/models/d/config.json", UNIT, ENV]
    assert items["names"][0].startswith("venv link /root/ml-env -> /root/ml-env.generations/old")
    assert len(items["names"]) == 5


def test_only_what_changed():
    assert rollback_items(False, UNIT, ENV) == {"link": None, "files": [], "names": []}
    assert rollback_items(True, UNIT, ENV, dict(GEN, switched=False))["files"] == [UNIT, ENV]
    # A first generation (blank host) has nothing to go back to.
    assert rollback_items(False, UNIT, ENV, dict(GEN, previous_dir=""))["link"] is None
    only_drafter = rollback_items(False, UNIT, ENV, {}, ["/root/models/d/config.json"])
    assert only_drafter["files"] == ["/root/models/d/config.json"]
    # The plan then rolls back a drafter change alone (no unit/env copies needed).
    plan = rollback_plan(True, True, bool(only_drafter["names"]), [True])
    assert plan["roll_back"]


@pytest.mark.parametrize("args, match", [
    ((True, UNIT, ENV, "gen"), "python_env_generation: expected a dict"),
    ((True, UNIT, ENV, dict(GEN, link="ml-env")), "python_env_generation.link: expected an absolute path"),
    ((True, UNIT, ENV, {}, "/a"), "the rollback files: expected a list"),
    ((True, UNIT, ENV, {}, ["rel/config.json"]), r"the rollback files\[0\]"),
    (("maybe", UNIT, ENV), "unit_env_changed"),
])
def test_bad_input(args, match):
    with pytest.raises(VllmServeError, match=match):
        rollback_items(*args)


def test_link_goes_back_to_the_generation_the_server_runs():
    # An earlier run switched the link and stopped before vllm_service (a bad drafter input, say): the server
    # still runs the old generation. This run does not switch, but its unit change starts the new one first.
    gen = dict(GEN, switched=False, previous_dir=GEN["dir"], rollback_files=[])
    items = rollback_items(True, UNIT, ENV, gen, [], serving_dir="/root/ml-env.generations/old")
    assert items["link"] == {"path": "/root/ml-env", "target": "/root/ml-env.generations/old",
                             "from": "/root/ml-env.generations/new"}
    assert items["files"] == [UNIT, ENV]
    # Nothing to go back to: the same generation, no unit change, or a record from before generations
    # (the plain venv, adopted under another name).
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir=GEN["dir"])["link"] is None
    assert rollback_items(False, UNIT, ENV, gen, [], serving_dir="/root/ml-env.generations/old")["link"] is None
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir="/root/ml-env")["link"] is None
    assert rollback_items(True, UNIT, ENV, gen, [], serving_dir="")["link"] is None
    # A switch in this run goes back to the generation python_env switched from, whatever the record says.
    assert rollback_items(True, UNIT, ENV, GEN, [], serving_dir="/root/ml-env.generations/other")["link"]["target"] \
        == GEN["previous_dir"]
    with pytest.raises(VllmServeError, match="the serving generation"):
        rollback_items(True, UNIT, ENV, gen, [], serving_dir="rel/old")
