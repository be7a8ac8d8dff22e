# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""drafter_host_state run for real as a subprocess, on a tiny drafter, against dflash_drafter_config itself."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import render_config  # noqa: E402


@pytest.fixture
def host(tmp_path):
    dest = tmp_path / "dest"
    dest.mkdir()
    fx.write_tiny_drafter(dest / "model.safetensors")
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    config = {"target": target, "dest": str(dest / "config.json"), "block_size": 4, "mask_token_id": 1000,
              "layer_types": ["full_attention", "full_attention"], "vllm_version": "0.20.1",
              "layer_id_policy": "report", "mode": "0644"}
    args = {"dest_dir": str(dest), "weights": str(dest / "model.safetensors"),
            "record": str(dest / ".inference-gpu-host-source.json"), "facts": str(tmp_path / "drafter.fact"),
            "target_config": target + "/config.json", "config": config}
    return tmp_path, args


def probe(tmp_path, args, check=False):
    return _module_runner.run_module("drafter_host_state", tmp_path, args, check=check, check_rc=True)


def dflash(tmp_path, args, check=False):
    module_args = dict(args["config"], drafter=args["weights"])
    return _module_runner.run_module("dflash_drafter_config", tmp_path, module_args, check=check, check_rc=True)


def test_says_what_the_module_would_do(host):
    tmp_path, args = host
    state = probe(tmp_path, args)
    assert not state["changed"] and not state.get("failed"), state
    assert state["config"]["decided"] and state["config"]["changed"] is True
    assert state["weights"]["isreg"] and state["dest_dir"]["isdir"] and state["target_config_exists"]
    assert state["record"] is None and state["facts"] == {"exists": False} and not state["config_json_exists"]
    written = dflash(tmp_path, args)
    assert written["changed"] is True
    # The result the role publishes as drafter_config when it skips the module: the module's own.
    for key in ("config", "format", "derived", "dflash_target_layer_ids", "target_layer_ids", "profile", "vllm",
                "note", "dest"):
        assert state["config"]["result"][key] == written[key], key
    assert written["config"]["dflash_config"]["target_layer_ids"] == [1, 5]
    assert written["messages"] and state["config"]["result"]["messages"] == written["messages"]
    # The role writes the probe's config.json itself where the probe decided: byte for byte the module's.
    with open(args["config"]["dest"], "rb") as handle:
        assert handle.read() == render_config(state["config"]["result"]["config"]).encode()
    # ... so the probe gives the module's warnings, also when config.json would change.
    for message in written["messages"]:
        assert message[:60] in repr(state.get("warnings")), state

    again = probe(tmp_path, args)
    assert again["config"]["decided"] and again["config"]["changed"] is False and again["config_json_exists"]
    assert dflash(tmp_path, args, check=True)["changed"] is False
    # The warnings the skipped module would have given (0.20.1 captures one layer early), from the probe.
    for message in written["messages"]:
        assert message[:60] in repr(again.get("warnings")), again

    os.chmod(args["config"]["dest"], 0o600)
    assert probe(tmp_path, args)["config"]["changed"] is True
    assert dflash(tmp_path, args, check=True)["changed"] is True


def test_undecided_where_the_module_fails(host):
    tmp_path, args = host
    args["config"] = dict(args["config"], block_size=None, layer_types=None, profile="none")
    state = probe(tmp_path, args)
    assert state["config"]["decided"] is False and state["config"]["reason"]
    assert dflash(tmp_path, args)["failed"]


def test_check_mode_reads_too(host):
    tmp_path, args = host
    state = probe(tmp_path, args, check=True)
    assert not state["changed"] and state["config"]["decided"]
    assert not os.path.exists(args["config"]["dest"])


def test_broken_record_is_a_warning(host):
    tmp_path, args = host
    with open(args["record"], "w") as handle:
        handle.write("{")
    state = probe(tmp_path, args)
    assert state["record"] is None and "not JSON" in repr(state.get("warnings")), state


def test_bad_options_fail_naming_them(host):
    tmp_path, args = host
    for option in ("dest_dir", "weights", "record", "facts", "target_config", "source"):
        result = probe(tmp_path, dict(args, **{option: "relative/path"}))
        assert result["failed"] and "%s must be an absolute path" % option in result["msg"], result
    result = probe(tmp_path, dict(args, config=dict(args["config"], bogus_igh=1)))
    assert not result.get("failed") and "bogus_igh" in result["config"]["reason"]


def test_reports_the_rollback_copies_it_finds(host):
    tmp_path, args = host
    assert probe(tmp_path, args)["prev_copies"] == []
    config_prev, facts_prev = args["config"]["dest"] + ".prev", args["facts"] + ".prev"
    with open(config_prev, "w") as handle:
        handle.write("{}\n")
    os.mkdir(facts_prev)  # not the role's copy
    state = probe(tmp_path, args)
    assert state["prev_copies"] == [config_prev]
    assert "%s is not a regular file" % facts_prev in repr(state.get("warnings")), state
    os.rmdir(facts_prev)
    with open(facts_prev, "w") as handle:
        handle.write("{}\n")
    assert probe(tmp_path, args, check=True)["prev_copies"] == [config_prev, facts_prev]
