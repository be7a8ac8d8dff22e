# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Real flash-attn wheels in real venvs, for the flash_attn_guard and venv_lock tests.

- ``fa4_wheel()``: the real ``flash-attn-4`` wheel from the package index (4.0.0b12, what
  ``uv pip install flash-attn`` gave ct129; issue 3).
- ``fa2_wheel()``: the real ``flash-attn`` 2.8.3 sdist built into a Python-only wheel with
  ``FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE`` (and ``FLASH_ATTENTION_FORCE_BUILD=TRUE``: without it
  setup.py's bdist_wheel first tries to fetch a prebuilt wheel from GitHub, which this network
  must not reach, and with a CPU torch it crashes on ``torch.version.cuda`` being None). The build
  needs torch present (``--no-build-isolation``): ``torch==2.13.0`` comes from the local wheel
  directory that pip's configuration names (the CPU build).

Both are cached in ``~/.cache/inference.gpu_host/wheels/`` (``IGH_WHEEL_CACHE`` overrides), so a
machine downloads and builds them once. There is no skip: if a wheel cannot be obtained the
fixture raises with the installer's output.

Installs use ``python -m venv --without-pip`` venvs and an outside installer (``pip --python`` or
``uv pip install --python``), both with ``--no-deps``, as on ct129.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FA4_VERSION = "4.0.0b12"
FA2_VERSION = "2.8.3"
FA4_WHEEL = "flash_attn_4-%s-py3-none-any.whl" % FA4_VERSION
FA2_WHEEL = "flash_attn-%s-py3-none-any.whl" % FA2_VERSION
TORCH_FOR_BUILD = "torch==2.13.0"
BUILD_REQUIREMENTS = [TORCH_FOR_BUILD, "wheel", "packaging", "ninja", "psutil", "setuptools"]

CACHE = os.environ.get("IGH_WHEEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "inference.gpu_host", "wheels")
PIP_VENV = os.path.join(os.path.dirname(CACHE), "pip-venv")

_memo = {}


def _run(cmd, timeout=1800, env=None, cwd=None):
    """Run a command; raise with its whole output if it fails (no skip, ever)."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=timeout, env=env, cwd=cwd, check=False)
    if proc.returncode != 0:
        raise RuntimeError("command failed (rc %d): %s\n%s" % (proc.returncode, " ".join(cmd), proc.stdout[-6000:]))
    return proc.stdout


@contextlib.contextmanager
def _cache_lock():
    # two test sessions on one machine must not build into the cache at once
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def uv():
    """The uv executable (needed for ``uv pip install`` and ``uv pip compile``)."""
    path = shutil.which("uv")
    if not path:
        raise RuntimeError("uv is not on PATH; these tests install and compile locks with uv (pip install uv)")
    return path


def pip():
    """A pip command (list) that supports ``--python``: ``<cache>/pip-venv`` made once with ensurepip.

    The dev venv has no pip of its own; a venv made by ``python -m venv`` carries the bundled pip,
    which reads the machine's pip configuration (index, find-links, CA bundle).
    """
    if "pip" not in _memo:
        exe = os.path.join(PIP_VENV, "bin", "pip")
        with _cache_lock():
            if not os.path.exists(exe):
                _run([sys.executable, "-m", "venv", PIP_VENV])
        _memo["pip"] = [exe, "--disable-pip-version-check"]
    return list(_memo["pip"])


def fa4_wheel():
    """Path of the real flash-attn-4 wheel (downloaded once)."""
    target = os.path.join(CACHE, FA4_WHEEL)
    pip_cmd = pip()  # before taking the lock: pip() takes it too, and flock does not nest
    with _cache_lock():
        if not os.path.isfile(target):
            tmp = tempfile.mkdtemp(dir=CACHE)
            try:
                _run(pip_cmd + ["download", "--no-deps", "--only-binary=:all:", "-d", tmp, "flash-attn-4==%s" % FA4_VERSION],
                     timeout=600)
                got = os.path.join(tmp, FA4_WHEEL)
                if not os.path.isfile(got):
                    raise RuntimeError("pip download flash-attn-4==%s gave %s, not %s" % (FA4_VERSION, os.listdir(tmp), FA4_WHEEL))
                os.replace(got, target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def fa2_wheel():
    """Path of the real flash-attn 2.8.3 wheel built from its sdist without CUDA (built once).

    The build's wall time is kept beside it in ``<wheel>.build.json``.
    """
    target = os.path.join(CACHE, FA2_WHEEL)
    with _cache_lock():
        if not os.path.isfile(target):
            tmp = tempfile.mkdtemp(dir=CACHE)
            try:
                start = time.time()
                build_venv = os.path.join(tmp, "build-venv")
                _run([sys.executable, "-m", "venv", build_venv])
                build_pip = [os.path.join(build_venv, "bin", "pip"), "--disable-pip-version-check"]
                _run(build_pip + ["install"] + BUILD_REQUIREMENTS)
                venv_ready = time.time()
                env = dict(os.environ, FLASH_ATTENTION_SKIP_CUDA_BUILD="TRUE", FLASH_ATTENTION_FORCE_BUILD="TRUE")
                out = os.path.join(tmp, "out")
                _run(build_pip + ["wheel", "--no-build-isolation", "--no-deps", "--no-binary", "flash-attn", "-w", out,
                                  "flash-attn==%s" % FA2_VERSION], env=env)
                done = time.time()
                got = os.path.join(out, FA2_WHEEL)
                if not os.path.isfile(got):
                    raise RuntimeError("building flash-attn==%s gave %s, not %s" % (FA2_VERSION, os.listdir(out), FA2_WHEEL))
                with open(target + ".build.json", "w") as handle:
                    json.dump({"build_venv_seconds": round(venv_ready - start, 1),
                               "wheel_build_seconds": round(done - venv_ready, 1),
                               "built": time.strftime("%Y-%m-%dT%H:%M:%S")}, handle)
                os.replace(got, target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return target


# ---------------------------------------------------------------------------
# venvs

def make_venv(path):
    """A bare venv (no pip inside, like one an outside installer fills); returns its path."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], timeout=120)
    return str(path)


def copy_venv(src, dst):
    """Copy a venv (symlinks kept; a venv finds itself through bin/../pyvenv.cfg, so the copy works
    in its new place): lets several tests start from one slow pip-made state."""
    shutil.copytree(str(src), str(dst), symlinks=True)
    return str(dst)


def python_of(venv):
    return os.path.join(str(venv), "bin", "python")


def site_packages(venv):
    out = _run([python_of(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], timeout=60)
    return out.strip()


def install(venv, *wheels, **kwargs):
    """Install wheel files with ``--no-deps`` using ``installer`` = ``uv`` (default) or ``pip``."""
    installer = kwargs.get("installer", "uv")  # uv: 0.5 s a call here, pip --python: 5 s
    if installer == "uv":
        cmd = [uv(), "pip", "install", "--python", python_of(venv), "--no-deps", "--no-index", "--quiet"]
    else:
        cmd = pip() + ["--python", python_of(venv), "install", "--no-deps", "--no-index", "--quiet"]
    _run(cmd + [str(w) for w in wheels], timeout=300)


def pip_uninstall(venv, name):
    """``pip uninstall -y`` with pip from outside the venv, as on ct129."""
    return _run(pip() + ["--python", python_of(venv), "uninstall", "-y", name], timeout=300)


def find_spec(venv, name="flash_attn"):
    """``importlib.util.find_spec(name)`` inside the venv (top level only: does not run the package).

    Returns None or ``{"origin": ..., "locations": [...], "namespace": bool}``.
    """
    code = ("import importlib.util, json, sys; s = importlib.util.find_spec(sys.argv[1]); "
            "print(json.dumps(None if s is None else {'origin': s.origin, "
            "'locations': list(s.submodule_search_locations or []), 'namespace': s.loader is None}))")
    return json.loads(_run([python_of(venv), "-c", code, name], timeout=60))


def tree(root):
    """Every path under ``root`` -> (kind, size, sha256 or link target): a before/after listing."""
    root = str(root)
    listing = {}
    for current, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(current, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                listing[rel] = ("link", 0, os.readlink(full))
            elif os.path.isdir(full):
                listing[rel] = ("dir", 0, "")
            else:
                with open(full, "rb") as handle:
                    listing[rel] = ("file", os.path.getsize(full), hashlib.sha256(handle.read()).hexdigest())
    return listing


def record_paths(site, dist_info_glob):
    """Paths (relative to site-packages) listed in the RECORD of the dist-info matching a glob."""
    import csv
    import glob
    found = glob.glob(os.path.join(site, dist_info_glob))
    assert len(found) == 1, found
    with open(os.path.join(found[0], "RECORD"), newline="") as handle:
        return [row[0] for row in csv.reader(handle) if row]
