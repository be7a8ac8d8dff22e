# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What Triton compiles its kernel launchers with (service_state.jit_toolchain): the GPU run 7 stopped at vLLM's
warm-up with 'Failed to find C compiler' in a container without gcc (tests/gpu/README.md)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import log as vllm_log
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.service_state import (
    jit_toolchain, jit_toolchain_problem)


def _tool(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(path, 0o755)
    return path


def _host(tmp_path, gcc=True, header=True, version="3.12.3"):
    root = tmp_path / "root"
    bindir = root / "usr" / "bin"
    if gcc:
        _tool(str(bindir / "gcc"))
    if header:
        inc = root / "usr" / "include" / "python3.12"
        inc.mkdir(parents=True)
        (inc / "Python.h").write_text(u"/* */\n")
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text(u"home = %s\ninclude-system-site-packages = false\nversion = %s\n" % (bindir, version))
    return str(venv), (str(bindir),)


def test_a_host_with_gcc_and_python_headers_has_what_triton_needs(tmp_path):
    venv, search = _host(tmp_path)
    found = jit_toolchain(venv, search=search)
    assert found["cc"].endswith("/usr/bin/gcc") and found["python_h"].endswith("include/python3.12/Python.h")
    assert jit_toolchain_problem(found, "vllm") is None


def test_no_compiler_is_refused_for_cuda_vllm_naming_base_packages(tmp_path):
    venv, search = _host(tmp_path, gcc=False)
    found = jit_toolchain(venv, search=search)
    problem = jit_toolchain_problem(found, "vllm")
    assert found["cc"] == "" and problem.startswith("this host lacks a C compiler")
    assert "gcc or clang" in problem and "base_packages" in problem and "Failed to find C compiler" in problem
    assert jit_toolchain_problem(found, "vllm-cpu") is None  # vllm-cpu: not this check's business


def test_missing_python_headers_are_named_with_their_path(tmp_path):
    venv, search = _host(tmp_path, header=False)
    problem = jit_toolchain_problem(jit_toolchain(venv, search=search), "vllm")
    assert "include/python3.12/Python.h" in problem and "python3-dev" in problem


def test_the_units_cc_is_used_when_set(tmp_path):
    venv, search = _host(tmp_path, gcc=False)
    cc = _tool(str(tmp_path / "opt" / "cc"))
    assert jit_toolchain(venv, cc=cc, search=search)["cc"] == cc
    missing = jit_toolchain(venv, cc=str(tmp_path / "nope"), search=search)
    assert "CC=%s" % (tmp_path / "nope") in jit_toolchain_problem(missing, "vllm", cc=str(tmp_path / "nope"))


def test_a_venv_without_pyvenv_cfg_checks_only_the_compiler(tmp_path):
    _venv, search = _host(tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    found = jit_toolchain(str(bare), search=search)
    assert found["python_h_wanted"] == "" and jit_toolchain_problem(found, "vllm") is None


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_any_pyvenv_cfg_text_is_read_without_error(text):
    import tempfile
    with tempfile.TemporaryDirectory() as venv:
        with open(os.path.join(venv, "pyvenv.cfg"), "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text.replace("\x00", ""))
        found = jit_toolchain(venv, search=())
        assert found["cc"] == "" and isinstance(found["python_h_wanted"], str)


def test_the_root_cause_reader_names_the_compiler():
    journal = ("(EngineCore pid=1086) ERROR 12-05 10:59:30 [core.py:1330] RuntimeError: Failed to find C compiler. "
               "Please specify via CC environment variable or set triton.knobs.build.impl.")
    cause = vllm_log.find_root_cause([journal])
    assert cause["hint_id"] == "no_c_compiler" and "base_packages" in cause["hint"]
