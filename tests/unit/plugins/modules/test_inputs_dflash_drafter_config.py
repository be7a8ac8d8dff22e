# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""dflash_drafter_config checks its own inputs: bad ones fail naming the option or file, and nothing is written."""

import json
import os
import struct
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "module_utils"))
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position
import _module_runner  # noqa: E402  pylint: disable=wrong-import-position

# What the tiny drafter needs besides its tensors (no profile knows it).
VALUES = {"block_size": 16, "mask_token_id": 1000, "layer_types": ["full_attention", "full_attention"]}


def run_module(workdir, args, check=False):
    return _module_runner.run_module("dflash_drafter_config", workdir, args, check=check, check_rc=True)


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
def args(models, out):
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


def test_baseline_writes(tmp_path, args):
    result = run_module(tmp_path, args)
    assert result["changed"] is True and os.path.isfile(args["dest"])


# ------------------------------------------------------------------ paths ---

def test_relative_dest_writes_nothing_in_the_working_directory(tmp_path, args):
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    result = run_module(workdir, dict(args, dest="config.json"))
    assert_refused(result, "dest must be an absolute path, got 'config.json'")
    assert os.listdir(str(workdir)) == ["args-0.json"]  # only the runner's own args file


@pytest.mark.parametrize("option,value", [("drafter", "tiny.safetensors"), ("target", "tiny-target"),
                                          ("venv", "venv"), ("dest", "out/../config.json"), ("dest", "bad\0")])
def test_relative_or_nul_paths_are_refused(tmp_path, args, out, option, value):
    result = run_module(tmp_path, dict(args, **{option: value}))
    assert_refused(result, option + " must be ")
    assert snapshot(out) == {}


def test_dest_is_the_drafter(tmp_path, args, models):
    before = snapshot(os.path.dirname(models[0]))
    result = run_module(tmp_path, dict(args, dest=models[0]))
    assert_refused(result, "dest %s is the drafter" % models[0])
    assert snapshot(os.path.dirname(models[0])) == before


def test_dest_is_the_drafters_index(tmp_path, args):
    directory = tmp_path / "sharded"
    directory.mkdir()
    os.link(args["drafter"], str(directory / "model-00001-of-00001.safetensors"))
    index = directory / "model.safetensors.index.json"
    with open(args["drafter"], "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        names = [n for n in json.loads(handle.read(length)) if n != "__metadata__"]
    index.write_text(json.dumps({"weight_map": dict((n, "model-00001-of-00001.safetensors") for n in names)}))
    before = snapshot(directory)
    result = run_module(tmp_path, dict(args, drafter=str(directory), dest=str(index)))
    assert_refused(result, "is the drafter's index")
    assert snapshot(directory) == before


def test_dest_naming_a_safetensors_file(tmp_path, args, out):
    result = run_module(tmp_path, dict(args, dest=str(out / "model.safetensors")))
    assert_refused(result, "names a safetensors file")
    assert snapshot(out) == {}


@pytest.mark.parametrize("content,expected", [
    (b"\x00\x01binary\xff", "is not a config.json (not UTF-8 text"),
    (b"root:x:0:0:root:/root:/bin/bash\n", "is not a config.json (not valid JSON: Expecting value"),
    (b'["a", "list"]', "holds a JSON list, not an object"),
    (b"[" * 100000, "is not a config.json (its JSON nests deeper than 32 levels)"),
])
def test_existing_dest_that_is_not_a_config_is_kept(tmp_path, args, out, content, expected):
    (out / "config.json").write_bytes(content)
    result = run_module(tmp_path, args)
    assert_refused(result, "dest %s" % args["dest"], expected, "refusing to replace it")
    assert snapshot(out) == {"config.json": content}


def test_existing_dest_that_is_a_directory_or_fifo(tmp_path, args, out):
    os.mkdir(args["dest"])
    assert_refused(run_module(tmp_path, args), "not a regular file")
    os.rmdir(args["dest"])
    os.mkfifo(args["dest"])
    assert_refused(run_module(tmp_path, args), "not a regular file")


# ---------------------------------------------------------- target config ---

@pytest.mark.parametrize("content,expected", [
    (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nests deeper than 32 levels"),
    (b"\xff\xfe{}", "not UTF-8 text"),
])
def test_bad_target_config_is_named(tmp_path, args, out, content, expected):
    target = tmp_path / "bad-target"
    target.mkdir()
    (target / "config.json").write_bytes(content)
    result = run_module(tmp_path, dict(args, target=str(target)))
    assert_refused(result, "target config %s" % (target / "config.json"), expected)
    assert snapshot(out) == {}


def test_target_config_that_is_a_fifo_or_huge(tmp_path, args, out):
    target = tmp_path / "fifo-target"
    target.mkdir()
    os.mkfifo(str(target / "config.json"))
    assert_refused(run_module(tmp_path, dict(args, target=str(target))), "not a regular file")
    huge = tmp_path / "huge-config.json"
    with open(str(huge), "wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)  # sparse
    assert_refused(run_module(tmp_path, dict(args, target=str(huge))), "larger than 16777216 bytes")
    assert snapshot(out) == {}


def test_deeply_nested_drafter_header(tmp_path, args, out):
    drafter = fx.write_raw(tmp_path / "deep.safetensors", b"[" * 100000, 0)
    result = run_module(tmp_path, dict(args, drafter=drafter))
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
def test_bad_option_is_named_and_nothing_written(tmp_path, args, out, option, value, expected):
    result = run_module(tmp_path, dict(args, **{option: value}))
    assert_refused(result, expected)
    assert snapshot(out) == {}


def test_check_mode_refuses_the_same(tmp_path, args, out):
    (out / "config.json").write_bytes(b'["a", "list"]')
    assert_refused(run_module(tmp_path, args, check=True), "holds a JSON list, not an object")
    assert_refused(run_module(tmp_path, dict(args, owner="no-such-user-here"), check=True), "no such user")
    assert snapshot(out) == {"config.json": b'["a", "list"]'}


def test_bad_mode_leaves_dest_and_no_temporary_file(tmp_path, args, out):
    run_module(tmp_path, args)
    before = snapshot(out)
    result = run_module(tmp_path, dict(args, mode="u=rwz", block_size=8))  # a change to write, a mode that fails
    assert result.get("failed") is True and "mode" in result["msg"]
    assert snapshot(out) == before  # neither the new content nor a .config.json.* temporary file


def test_unreadable_vllm_version_in_the_venv(tmp_path, args, out):
    info = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: vllm\nVersion: 0." + "1" * 5000 + "\n")
    result = run_module(tmp_path, dict(args, venv=str(tmp_path / "venv")))
    assert_refused(result, "venv %s: cannot read the installed vLLM's version" % (tmp_path / "venv"))
    assert snapshot(out) == {}
