# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""What a flash_attn conflict means for the installed vLLM, and whether flash-attn 2's compiled extension loads
with the venv's torch. Standard library only (runs on the managed node).

* vllm_impact(vllm_version, distribution) -> {"fatal": bool | None, "sentence": str}
* ABI_PROBE: a Python program for the venv's interpreter; prints one JSON object
* abi_verdict(probe_stdout, owner_label) -> {"state": "ok" | "no_extension" | "mismatch" | "unloadable", ...}

The extension is ``flash_attn_2_cuda`` (a top-level module of the flash-attn 2 wheels, linked against one torch
build's libc10/libtorch). A wheel built for another torch fails at dlopen with ``undefined symbol: <C++ name>``,
the message vLLM shows when it imports flash_attn; a vLLM that tolerates flash-attn-4 alone (the versions table's
flash_attn4_alone_fatal) suppresses only ModuleNotFoundError, so this still stops the engine (see docs/flash-attn.md).
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import re

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

__all__ = ["ABI_PROBE", "abi_verdict", "vllm_impact"]

EXTENSION = "flash_attn_2_cuda"
# torch first: the extension links against libc10/libtorch, which importing torch loads (flash_attn/__init__ does
# the same). Only ImportError is caught: anything else is a bug to see in full.
ABI_PROBE = r"""
import importlib, importlib.util, json
out = {"extension": None, "torch": None, "torch_cuda": None, "torch_error": None, "error": None}
spec = importlib.util.find_spec("%s")
if spec is not None:
    out["extension"] = spec.origin
    try:
        import torch
        out["torch"] = str(torch.__version__)
        out["torch_cuda"] = getattr(torch.version, "cuda", None)
    except ImportError as exc:
        out["torch_error"] = "%%s: %%s" %% (type(exc).__name__, exc)
    try:
        importlib.import_module("%s")
    except ImportError as exc:
        out["error"] = "%%s: %%s" %% (type(exc).__name__, exc)
print(json.dumps(out))
""" % (EXTENSION, EXTENSION)

_UNDEFINED = re.compile(r"undefined symbol: (\S+)")


def vllm_impact(vllm_version, distribution="vllm"):
    """What flash-attn-4 without flash-attn 2's flash_attn.ops does to ``vllm_version``, in one sentence."""
    if not vllm_version:
        return {"fatal": None, "sentence": ""}
    fatal = vllm_versions.flash_attn4_alone_fatal(vllm_version, distribution)
    if fatal:
        sentence = ("%s %s stops at model load with \"No module named 'flash_attn.ops'\" in this state"
                    % (distribution, vllm_version))
    elif fatal is False:
        sentence = ("%s %s starts without flash_attn.ops (its import is optional since vllm-project/vllm PR 42679), "
                    "but the pinned flash-attn 2 is shadowed, so the collection still treats it as a conflict"
                    % (distribution, vllm_version))
    else:
        sentence = "what %s %s does in this state is not known" % (distribution, vllm_version)
    return {"fatal": fatal, "sentence": sentence}


def abi_verdict(probe_stdout, owner_label):
    """The ABI check's result from ABI_PROBE's output; ``owner_label`` names the wheel ("flash-attn 2.8.3").

    States: ``ok`` (the extension loaded with this torch), ``no_extension`` (a Python-only build, e.g. built with
    FLASH_ATTENTION_SKIP_CUDA_BUILD, or no flash-attn 2), ``mismatch`` (undefined symbol: built for another
    torch), ``unloadable`` (another load error, e.g. no CUDA driver library on this host). Raises ValueError when
    the output is not the probe's JSON.
    """
    try:
        probe = json.loads(probe_stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ValueError("the ABI probe printed no JSON: %r" % probe_stdout[-500:])
    if not isinstance(probe, dict) or not all(isinstance(probe.get(k), (str, type(None))) for k in
                                              ("extension", "torch", "torch_cuda", "torch_error", "error")):
        raise ValueError("the ABI probe printed %r, expected its JSON object of strings" % probe_stdout[-500:])
    torch = probe.get("torch")
    build = "torch %s (CUDA %s)" % (torch, probe.get("torch_cuda")) if torch else "torch not importable (%s)" % (
        probe.get("torch_error") or "not installed")
    result = dict(probe, build=build)
    if not probe.get("extension"):
        return dict(result, state="no_extension",
                    message="%s has no compiled %s in this venv (a Python-only build): nothing to load"
                            % (owner_label, EXTENSION))
    error = probe.get("error")
    if not error:
        return dict(result, state="ok", message="%s's %s loads with %s" % (owner_label, EXTENSION, build))
    symbol = _UNDEFINED.search(error)
    if symbol:
        return dict(result, state="mismatch", symbol=symbol.group(1),
                    message="%s's compiled extension %s does not match %s: undefined symbol %s. The wheel was built "
                            "for another torch; install a flash-attn 2 wheel built for this torch, Python and CUDA "
                            "(python_env_flash_attn_wheel; docs/flash-attn.md says how to build one once per fleet)"
                            % (owner_label, probe["extension"], build, symbol.group(1)))
    return dict(result, state="unloadable",
                message="%s's %s did not load with %s, not for an ABI mismatch: %s"
                        % (owner_label, EXTENSION, build, error[:1000]))
