# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Every script under scripts/ answers --help from a fresh clone, as the docs run it (issue 41): the Python scripts
with the machine's python3 (no venv, no collection path) and with the dev venv's python, the shell scripts with
`bash scripts/X.sh --help`, printing their header and running nothing else (only sed is on PATH)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPTS = sorted(os.listdir(os.path.join(ROOT, "scripts")))
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
SYSTEM_PYTHON = shutil.which("python3", path=SYSTEM_PATH)
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
# Not commands a user runs with --help:
NOT_ASKED = {
    # ansible-test runs it as its get-pip stand-in (bootstrap.sh copies it there); any argument goes to pip install,
    # after ensurepip has run.
    "ansible_test_get_pip.py": "ansible-test's get-pip stand-in, not a command",
    # Their first step is bootstrap.sh; they take no --help (yet), so asking would install and run everything
    # (tested here once they mention --help).
    "run-local.sh": "starts bootstrap.sh and site.yml at once; no --help of its own",
    "test-all.sh": "starts bootstrap.sh and the whole suite at once; no --help of its own",
}


def clean_env(home, path):
    return {"PATH": path, "HOME": home, "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """What a fresh clone holds: the tracked files and the new ones git does not ignore (no .venv, no .cache)."""
    dest = str(tmp_path_factory.mktemp("clone"))
    listed = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"], check=True,
                            capture_output=True).stdout.decode("utf-8", "surrogateescape").split("\0")
    for rel in filter(None, listed):
        src = os.path.join(ROOT, rel)
        if not os.path.lexists(src):
            continue  # deleted in the work tree, not yet in the index
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), target)
        elif os.path.isfile(src):
            shutil.copy2(src, target)
    return dest


def header(path):
    """The comment block after the shebang, as --help prints it."""
    lines = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if number == 0:
                continue
            if not line.startswith("#"):
                break
            text = line[1:].rstrip("\n")
            lines.append(text[1:] if text.startswith(" ") else text)
    return "\n".join(lines) + "\n"


def listing(top):
    return sorted(os.path.join(folder, name) for folder, _dirs, files in os.walk(top) for name in files)


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.endswith(".py")])
@pytest.mark.parametrize("python", ["system", "venv"])
def test_python_script_help(clone, tmp_path, script, python):
    if script in NOT_ASKED:
        pytest.skip(NOT_ASKED[script])
    interpreter = SYSTEM_PYTHON if python == "system" else VENV_PYTHON
    if not interpreter or not os.path.exists(interpreter):
        pytest.skip("no %s python here" % python)
    path = SYSTEM_PATH if python == "system" else os.path.dirname(VENV_PYTHON) + ":" + SYSTEM_PATH
    proc = subprocess.run([interpreter, os.path.join("scripts", script), "--help"], cwd=clone, capture_output=True,
                          text=True, timeout=120, env=clean_env(str(tmp_path), path), check=False)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stdout.startswith("usage: %s" % script), proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s.endswith(".sh")])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_shell_script_help_prints_its_header_and_runs_nothing(clone, tmp_path, script, flag):
    text = header(os.path.join(clone, "scripts", script))
    assert text.strip(), "scripts/%s has no header saying what it does" % script
    with open(os.path.join(clone, "scripts", script), encoding="utf-8") as handle:
        handled = "--help" in handle.read()
    if script in NOT_ASKED and not handled:  # asked as soon as it takes --help
        pytest.skip(NOT_ASKED[script])
    assert "scripts/%s" % script in text, "the header shows no command line:\n" + text
    # Only sed on PATH: were anything else run (apt-get, git, lxc, ansible-test), bash would fail to find it.
    only = tmp_path / "bin"
    only.mkdir()
    os.symlink(shutil.which("sed"), str(only / "sed"))
    before = listing(clone)
    proc = subprocess.run([shutil.which("bash"), os.path.join("scripts", script), flag], cwd=clone,
                          capture_output=True, text=True, timeout=60, env=clean_env(str(tmp_path), str(only)),
                          check=False)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stdout == text
    assert proc.stderr == ""
    assert listing(clone) == before


def test_every_script_is_covered():
    kinds = set(os.path.splitext(s)[1] for s in SCRIPTS if not os.path.isdir(os.path.join(ROOT, "scripts", s)))
    assert kinds <= {".py", ".sh"}, "a script of another kind: add it to this test"
    assert set(NOT_ASKED) <= set(SCRIPTS)
