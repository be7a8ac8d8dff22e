# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The drafter role's probe (on real files) and its plan: a task is skipped only when it would change nothing."""

import grp
import json
import os
import pwd
import sys

import pytest
from hypothesis import given, strategies as st

from ansible.errors import AnsibleFilterError
from ansible.plugins.filter.core import to_nice_json
from ansible_collections.inference.gpu_host.plugins.filter.drafter import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import state as ds
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import render_config
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.placement import place_reason

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # _dflash_fixtures, shared
import _dflash_fixtures as fx  # noqa: E402  pylint: disable=wrong-import-position

drafter_plan = FilterModule().filters()["drafter_plan"]
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


@pytest.fixture
def host(tmp_path):
    """A tiny drafter placed in dest/, its target, and the module options the role passes."""
    dest = tmp_path / "dest"
    dest.mkdir(mode=0o755)
    weights = fx.write_tiny_drafter(dest / "model.safetensors")
    target = fx.write_target(tmp_path / "target", fx.qwen3_target_config(num_layers=8, hidden=256, vocab=1024))
    options = {"drafter": weights, "target": target, "dest": str(dest / "config.json"), "block_size": 4,
               "mask_token_id": 1000, "layer_types": ["full_attention", "full_attention"],
               "vllm_version": "0.22.0", "owner": ME, "group": MY_GROUP, "mode": "0644"}
    params, problem = ds.validate_config_options(dict((k, v) for k, v in options.items() if k != "drafter"),
                                                 weights)
    assert problem is None
    return {"tmp": tmp_path, "dest": dest, "weights": weights, "params": params,
            "facts": str(tmp_path / "facts" / "inference_drafter.fact")}


def _write_config(host, result):
    with open(host["params"]["dest"], "w") as handle:
        handle.write(render_config(result["config"]))
    os.chmod(host["params"]["dest"], 0o644)


# ---------------------------------------------------------------- the config probe

def test_config_would_be_written_then_not(host):
    first = ds.config_state(host["params"], check_mode=False)
    assert first["decided"] and first["changed"] is True
    assert first["result"]["dflash_target_layer_ids"] == [1, 5]
    assert first["result"]["config"]["block_size"] == 4 and first["result"]["vllm"]["version"] == "0.22.0"
    _write_config(host, first["result"])
    again = ds.config_state(host["params"], check_mode=False)
    assert again["decided"] and again["changed"] is False and again["result"]["changed"] is False
    assert again["result"]["config"] == first["result"]["config"]

    os.chmod(host["params"]["dest"], 0o600)
    assert ds.config_state(host["params"], check_mode=False)["changed"] is True
    os.chmod(host["params"]["dest"], 0o644)
    # Another vLLM, other record in config.json: it would change.
    assert ds.config_state(dict(host["params"], vllm_version="0.20.1"), check_mode=False)["changed"] is True


@pytest.mark.parametrize("change, why", [
    ({"mode": "u=rw,go=r"}, "symbolic"),
    ({"venv": "relative/venv"}, "absolute"),
    ({"owner": "no-such-user-igh"}, "no such user"),
    ({"rope_theta": float("inf")}, "must be a finite number"),
    ({"block_size": None, "layer_types": None}, ""),   # the module fails: no profile knows the tiny drafter
    ({"vllm_version": "0.19.0"}, ""),                  # a vLLM without DFlash: the module fails
    ({"target": "/nonexistent-igh/target"}, ""),
    ({"speculators_config": "/nonexistent-igh/config.json"}, "speculators"),
])
def test_undecided_where_the_module_decides(host, change, why):
    first = ds.config_state(host["params"], check_mode=False)
    _write_config(host, first["result"])
    out = ds.config_state(dict(host["params"], **change), check_mode=False)
    assert out["decided"] is False and out["changed"] is None and out["result"] is None, out
    assert why in out["reason"]


def test_undecided_without_weights_or_with_a_foreign_dest(host):
    os.unlink(host["weights"])
    assert "no weights" in ds.config_state(host["params"], check_mode=False)["reason"]
    fx.write_tiny_drafter(host["dest"] / "model.safetensors")
    with open(host["params"]["dest"], "w") as handle:
        handle.write("[1, 2]")
    assert not ds.config_state(host["params"], check_mode=False)["decided"]


def test_pinned_version_against_the_venv(host, tmp_path):
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm-0.21.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.21.0\n")
    params = dict(host["params"], venv=str(tmp_path / "venv"))
    # As the module: refused in a real run (it says why), the pin used with a warning in check mode.
    assert not ds.config_state(params, check_mode=False)["decided"]
    check = ds.config_state(params, check_mode=True)
    assert check["decided"] and any("check mode" in w for w in check["warnings"])


def test_options_converted_as_the_module_would(host):
    params, problem = ds.validate_config_options({"target": "/t", "dest": "/d/config.json", "block_size": "4",
                                                  "is_causal": "yes"}, "/d/model.safetensors")
    assert problem is None and params["block_size"] == 4 and params["is_causal"] is True
    assert params["profile"] == "auto" and params["layer_id_policy"] == "report"
    _params, problem = ds.validate_config_options({"target": "/t", "dest": "/d", "profile": "nope"}, "/d/m")
    assert "profile" in problem
    _params, problem = ds.validate_config_options({"target": "/t", "dest": "/d", "unknown_igh": 1}, "/d/m")
    assert "unknown_igh" in problem


def test_spec_is_the_modules(monkeypatch):
    """The state read converts the options with dflash_drafter_config's own argument_spec (derive.config_spec)."""
    from ansible_collections.inference.gpu_host.plugins.modules import dflash_drafter_config as mod
    seen = {}

    class Stop(Exception):
        pass

    def fake(argument_spec, **_kwargs):
        seen.update(argument_spec)
        raise Stop()

    monkeypatch.setattr(mod, "AnsibleModule", fake)
    with pytest.raises(Stop):
        mod.main()
    assert seen == derive.config_spec()


# ---------------------------------------------------------------- host side

def test_stat_and_record(tmp_path):
    assert ds.stat_path(str(tmp_path / "missing")) == {"exists": False}
    path = tmp_path / "r.json"
    path.write_text('{"type": "host"}')
    out = ds.stat_path(str(path), content=True)
    assert out["isreg"] and out["size"] == 16 and out["sha256"] == ds.sha256_text('{"type": "host"}')
    assert "sha256" not in ds.stat_path(str(path))
    os.symlink(str(path), str(tmp_path / "link"))
    assert not ds.stat_path(str(tmp_path / "link"))["isreg"]  # not followed, as stat's follow: false
    assert ds.read_record(str(path)) == ({"type": "host"}, None)
    assert ds.read_record(str(tmp_path / "missing")) == (None, None)
    path.write_text("{")
    assert "not JSON" in ds.read_record(str(path))[1]
    path.write_text("[]")
    assert "JSON object" in ds.read_record(str(path))[1]


def test_attrs():
    state = {"exists": True, "uid": os.getuid(), "gid": os.getgid(), "owner": ME, "group": MY_GROUP, "mode": "0644"}
    assert ds.attrs_match(state, ME, MY_GROUP, "0644")
    assert ds.attrs_match(state, str(os.getuid()), str(os.getgid()), "644")
    assert ds.attrs_match(state, None, None, None)
    assert not ds.attrs_match(state, ME, MY_GROUP, "0600")
    assert not ds.attrs_match(state, ME, MY_GROUP, "u=rw,go=r")   # symbolic: the task decides
    assert not ds.attrs_match({"exists": False}, None, None, None)


# ---------------------------------------------------------------- controller side

def _wanted(host, **over):
    wanted = {"source_type": "url", "source_path": "", "source_url": "https://example.invalid/d.safetensors",
              "hf_repo_id": "", "hf_revision": "", "hf_filename": "model.safetensors", "sha256": "a" * 64,
              "dest_dir": str(host["dest"]), "owner": ME, "group": MY_GROUP, "layer_id_policy": "report",
              "check_mode": False, "config_json": host["params"]["dest"], "facts_file": host["facts"]}
    wanted.update(over)
    return wanted


def _probe(host, check_mode=False):
    dest = str(host["dest"])
    record, _warning = ds.read_record(os.path.join(dest, ".inference-gpu-host-source.json"))
    return {"dest_dir": ds.stat_path(dest), "weights": ds.stat_path(host["weights"]),
            "source": None, "record": record,
            "record_file": ds.stat_path(os.path.join(dest, ".inference-gpu-host-source.json"), content=True),
            "facts": ds.stat_path(host["facts"], content=True), "target_config_exists": True,
            "config_json_exists": os.path.lexists(host["params"]["dest"]),
            "config": ds.config_state(host["params"], check_mode)}


def _converge(host, wanted, plan):
    """What the role's tasks write for a plan with no placement pending."""
    if plan["config_write"]:
        assert plan["config_decided"]  # the role writes the probe's text, deriving nothing again
        with open(host["params"]["dest"], "w") as handle:
            handle.write(plan["config_text"])
        os.chmod(host["params"]["dest"], 0o644)
        plan = ds.plan(_probe(host), wanted)
    if plan["placement_record_changed"]:
        path = os.path.join(str(host["dest"]), ".inference-gpu-host-source.json")
        with open(path, "w") as handle:
            handle.write(to_nice_json(plan["placement_record"]) + "\n")
        os.chmod(path, 0o644)
    if plan["facts_write"]:
        os.makedirs(os.path.dirname(host["facts"]), exist_ok=True)
        with open(host["facts"], "w") as handle:
            handle.write(to_nice_json(plan["facts"]) + "\n")
        os.chmod(host["facts"], 0o644)


def test_first_run_then_noop(host, monkeypatch):
    monkeypatch.setattr(ds, "FACTS_FILE", {"owner": ME, "group": MY_GROUP, "mode": "0644"})
    wanted = _wanted(host)
    path = os.path.join(str(host["dest"]), ".inference-gpu-host-source.json")
    weights = ds.stat_path(host["weights"])
    with open(path, "w") as handle:  # the weights were placed from this source (the install block wrote this)
        handle.write(to_nice_json(dict(ds.wanted_source(wanted, None),
                                       installed={"size": weights["size"], "mtime": weights["mtime"]})) + "\n")
    os.chmod(path, 0o644)
    plan = ds.plan(_probe(host), wanted)
    assert plan["place_reason"] == "" and plan["config_decided"] and plan["config_write"]
    assert plan["rollback_files"] == [] and not plan["noop"]
    assert plan["config_text"] == render_config(plan["config_result"]["config"])
    _converge(host, wanted, plan)
    again = ds.plan(_probe(host), wanted)
    assert again["noop"], again
    assert again["config_text"] is None
    # The local fact has one shape: the plan's, and the filter's from what the module returned.
    local_facts = FilterModule().filters()["drafter_local_facts"]
    assert again["facts"] == local_facts(again["config_result"], wanted)
    assert local_facts({"changed": False}, wanted) is None  # nothing derived: nothing to record
    with pytest.raises(AnsibleFilterError, match="drafter_local_facts wanted state: missing sha256"):
        local_facts(again["config_result"], dict((k, v) for k, v in wanted.items() if k != "sha256"))
    with pytest.raises(AnsibleFilterError, match="expected dflash_drafter_config's result"):
        local_facts("x", wanted)
    assert again["config_result"]["dflash_target_layer_ids"] == [1, 5] and not again["config_result"]["changed"]

    # A new vLLM: config.json and the facts change, both are kept for a rollback (not in check mode).
    host["params"] = dict(host["params"], vllm_version="0.20.1")
    plan = ds.plan(_probe(host), wanted)
    assert plan["config_write"] and plan["rollback_files"] == [host["params"]["dest"], host["facts"]]
    check_plan = ds.plan(_probe(host, check_mode=True), dict(wanted, check_mode=True))
    assert check_plan["config_write"] and check_plan["rollback_files"] == []
    host["params"] = dict(host["params"], vllm_version="0.22.0")

    # Each drift alone is seen, and only it.
    with open(host["facts"], "w") as handle:
        handle.write("{}\n")
    plan = ds.plan(_probe(host), wanted)
    assert plan["facts_write"] and not plan["config_write"] and not plan["placement_record_changed"]
    _converge(host, wanted, plan)
    os.chmod(str(host["dest"]), 0o700)
    plan = ds.plan(_probe(host), wanted)
    assert plan["dir_changed"] and not plan["noop"]
    os.chmod(str(host["dest"]), 0o755)
    os.utime(host["weights"], (1, 1))
    plan = ds.plan(_probe(host), wanted)
    assert plan["place_reason"] == "model.safetensors changed on the host"
    assert not plan["config_decided"] and plan["config_probe"] and plan["config_write"]
    assert plan["placement_record"] is None and plan["rollback_files"] == []


def test_blank_host_in_check_mode(host):
    os.unlink(host["weights"])
    plan = ds.plan(_probe(host, check_mode=True), _wanted(host, check_mode=True))
    assert plan["place_reason"] == "not installed yet"
    assert not plan["weights_there"] and not plan["config_write"] and not plan["config_probe"]
    plan = ds.plan(_probe(host), _wanted(host))
    assert plan["weights_there"] and plan["config_probe"] and plan["config_write"]


def test_controller_source_is_read_by_the_filter(host, tmp_path):
    source = tmp_path / "d.safetensors"
    source.write_bytes(b"12345")
    plan = drafter_plan(_probe(host), _wanted(host, source_type="controller", source_path=str(source)))
    assert plan["wanted"]["size"] == 5 and plan["wanted"]["mtime"] == os.lstat(str(source)).st_mtime
    assert plan["wanted"]["source"] == str(source)
    hf = ds.plan(_probe(host), _wanted(host, source_type="huggingface", hf_repo_id="z-lab/x", hf_revision="abc"))
    assert hf["wanted"] == {"type": "huggingface", "source": "z-lab/x@abc:model.safetensors", "sha256": "a" * 64}


def test_filter_errors_name_the_input(host):
    with pytest.raises(AnsibleFilterError, match="drafter_host_state"):
        drafter_plan({"x": 1}, _wanted(host))
    with pytest.raises(AnsibleFilterError, match="missing check_mode"):
        wanted = _wanted(host)
        del wanted["check_mode"]
        drafter_plan(_probe(host), wanted)
    with pytest.raises(AnsibleFilterError, match="drafter_source_type must be one of"):
        drafter_plan(_probe(host), _wanted(host, source_type="ftp"))
    with pytest.raises(AnsibleFilterError, match="wanted must be a mapping"):
        drafter_plan(_probe(host), "x")


# ---------------------------------------------------------------- properties

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.text(max_size=12))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                     max_leaves=12)


@given(st.dictionaries(st.text(max_size=8), _json, max_size=6))
def test_render_is_ansibles_to_nice_json(data):
    """The plan compares files with the bytes the role's copy tasks write (to_nice_json and a newline)."""
    assert ds.render_json(data) == to_nice_json(data) + "\n"


_stat = st.one_of(st.just({"exists": False}),
                  st.fixed_dictionaries({"exists": st.just(True), "size": st.integers(0, 9),
                                         "mtime": st.sampled_from([1.0, 2.5]), "isreg": st.booleans(),
                                         "isdir": st.booleans(), "uid": st.just(os.getuid()),
                                         "gid": st.just(os.getgid()), "owner": st.just(ME),
                                         "group": st.just(MY_GROUP), "mode": st.sampled_from(["0644", "0755"]),
                                         "sha256": st.sampled_from(["x", ds.sha256_text("{}\n")])}))
_config = st.one_of(
    st.just({"decided": False, "changed": None, "reason": "x", "result": None}),
    st.builds(lambda changed, ids: {"decided": True, "changed": changed, "reason": None,
                                    "result": {"changed": changed, "config": {"block_size": 4},
                                               "dflash_target_layer_ids": ids, "target_layer_ids": ids,
                                               "vllm": {"version": "0.22.0"}}},
              st.booleans(), st.lists(st.integers(0, 7), max_size=3)))


@given(weights=_stat, record_file=_stat, facts=_stat, dest_dir=_stat, config=_config, check=st.booleans(),
       record=st.one_of(st.none(), st.fixed_dictionaries({"type": st.just("url"), "source": st.sampled_from(["u", "v"]),
                                                          "sha256": st.just(""),
                                                          "installed": st.fixed_dictionaries(
                                                              {"size": st.integers(0, 9),
                                                               "mtime": st.sampled_from([1.0, 2.5])})})),
       config_json=st.booleans())
def test_plan_properties(weights, record_file, facts, dest_dir, config, check, record, config_json):
    state = {"weights": weights, "record_file": record_file, "facts": facts, "dest_dir": dest_dir,
             "config": config, "record": record, "config_json_exists": config_json, "source": None}
    wanted = {"source_type": "url", "source_path": "", "source_url": "u", "hf_repo_id": "", "hf_revision": "",
              "hf_filename": "m", "sha256": "", "dest_dir": "/d", "owner": ME, "group": MY_GROUP,
              "layer_id_policy": "report", "check_mode": check, "config_json": "/d/config.json",
              "facts_file": "/f.fact"}
    plan = ds.plan(state, wanted)
    # The placement is placement.place_reason's decision, unchanged.
    assert plan["place_reason"] == place_reason(record or {}, plan["wanted"], weights)
    if plan["place_reason"]:
        # New weights: config.json is decided again after they are placed, by the module.
        assert not plan["config_decided"] and plan["placement_record"] is None
        assert not plan["placement_record_changed"] and plan["rollback_files"] == []
    else:
        assert plan["placement_record"]["installed"] == {"size": weights["size"], "mtime": weights["mtime"]}
    # Nothing is skipped that the module would change, nor decided when the probe could not tell.
    if config["decided"] and not plan["place_reason"]:
        assert plan["config_write"] == (plan["weights_there"] and config["changed"])
    elif plan["weights_there"]:
        assert plan["config_write"]
    assert not plan["config_probe"] or (plan["config_write"] and not check)
    # Rollback copies: only of files that exist, only outside check mode, only when config.json changes.
    assert set(plan["rollback_files"]) <= {"/d/config.json", "/f.fact"}
    if check or not plan["config_write"]:
        assert plan["rollback_files"] == []
    if "/d/config.json" in plan["rollback_files"]:
        assert config_json
    if plan["noop"]:
        assert not (plan["place_reason"] or plan["config_write"] or plan["dir_changed"]
                    or plan["placement_record_changed"])
    json.dumps(plan)  # plain data, for set_fact


# ---------------------------------------------------------------- stale rollback copies (issue 27)

def test_prev_copies_lists_only_regular_files(host):
    config, facts = host["params"]["dest"], host["facts"]
    assert ds.prev_copies([config, facts, None]) == ([], [])
    with open(config + ".prev", "w") as handle:
        handle.write("{}\n")
    os.makedirs(os.path.dirname(facts))
    os.mkdir(facts + ".prev")  # not the role's copy: never listed, so never removed
    copies, warnings = ds.prev_copies([config, facts, config])
    assert copies == [config + ".prev"]
    assert warnings == ["%s.prev is not a regular file, so it is not the drafter role's rollback copy: left alone"
                        % facts]
    os.rmdir(facts + ".prev")
    os.symlink(config + ".prev", facts + ".prev")  # a link is not followed
    os.mkfifo(config + ".prev.prev")
    assert ds.prev_copies([facts, config + ".prev"])[0] == []


def _probe_with_copies(host, check_mode=False):
    state = _probe(host, check_mode)
    state["prev_copies"] = ds.prev_copies([host["params"]["dest"], host["facts"]])[0]
    return state


def test_stale_rollback_copies_are_removed_by_a_run_that_keeps_config_json(host, monkeypatch):
    monkeypatch.setattr(ds, "FACTS_FILE", {"owner": ME, "group": MY_GROUP, "mode": "0644"})
    wanted = _wanted(host)
    record = os.path.join(str(host["dest"]), ".inference-gpu-host-source.json")
    weights = ds.stat_path(host["weights"])
    with open(record, "w") as handle:
        handle.write(to_nice_json(dict(ds.wanted_source(wanted, None),
                                       installed={"size": weights["size"], "mtime": weights["mtime"]})) + "\n")
    os.chmod(record, 0o644)
    _converge(host, wanted, ds.plan(_probe_with_copies(host), wanted))
    settled = ds.plan(_probe_with_copies(host), wanted)
    assert settled["noop"] and settled["stale_rollback_copies"] == []  # a clean host: nothing to remove

    # A run stopped between the drafter (which kept both copies) and vllm_service (which removes them).
    copies = [host["params"]["dest"] + ".prev", host["facts"] + ".prev"]
    for path in copies:
        with open(path, "w") as handle:
            handle.write("{}\n")
    plan = ds.plan(_probe_with_copies(host), wanted)
    assert plan["noop"] and plan["stale_rollback_copies"] == copies and plan["rollback_files"] == []
    # check mode says the same (the file task reports what it would remove)
    check = ds.plan(_probe_with_copies(host, check_mode=True), dict(wanted, check_mode=True))
    assert check["stale_rollback_copies"] == copies

    # A run that rewrites config.json keeps new copies over them: nothing is removed beforehand.
    host["params"] = dict(host["params"], vllm_version="0.20.1")
    plan = ds.plan(_probe_with_copies(host), wanted)
    assert plan["config_write"] and plan["stale_rollback_copies"] == []
    assert plan["rollback_files"] == [host["params"]["dest"], host["facts"]]
    host["params"] = dict(host["params"], vllm_version="0.22.0")

    # New weights: the module decides config.json after the placement, so nothing is called stale.
    os.utime(host["weights"], (1, 1))
    plan = ds.plan(_probe_with_copies(host), wanted)
    assert not plan["config_decided"] and plan["stale_rollback_copies"] == []

    # A state read without the key (an older module) removes nothing.
    state = _probe(host)
    assert ds.plan(state, wanted)["stale_rollback_copies"] == []
