"""execution-environment.yml (ansible-builder v3): it names what the controller side of the collection needs, in
step with the dev lock and galaxy.yml, and `ansible-builder create` (from the dev venv) turns it into a build
context that installs exactly that. No image is built."""
import ast
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EE_FILE = os.path.join(ROOT, "execution-environment.yml")
BUILDER = shutil.which("ansible-builder", path=os.path.dirname(sys.executable)) or shutil.which("ansible-builder")
# Controller-side scripts the roles run with ansible_playbook_python (delegated to localhost).
CONTROLLER_SCRIPTS = ["roles/serving_benchmark/files/plot_benchmarks.py"]
# Collections a playbook may name that ship with ansible-core or are this collection.
BUILTIN = {"ansible.builtin", "ansible.legacy", "inference.gpu_host"}
FQCN = re.compile(r"\b((?:ansible|community)\.[a-z_]+)\.[a-z_]+")


def _load(path):
    with open(os.path.join(ROOT, path)) as fh:
        return yaml.safe_load(fh) if path.endswith((".yml", ".yaml")) else fh.read()


def _lock_pins():
    """name -> version of every package requirements-dev.txt pins (uv pip compile --generate-hashes)."""
    return {m.group(1).lower(): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^ \\\n]+)", _load("requirements-dev.txt"), re.M)}


def _requirement(spec):
    match = re.match(r"^([A-Za-z0-9_.-]+)\s*(.*)$", spec.strip())
    return match.group(1).lower(), match.group(2).strip()


@pytest.fixture(scope="module")
def ee():
    return _load("execution-environment.yml")


def test_schema_v3_with_pinned_controller(ee):
    assert ee["version"] == 3
    pins = _lock_pins()
    deps = ee["dependencies"]
    for key in ("ansible_core", "ansible_runner"):
        name, spec = _requirement(deps[key]["package_pip"])
        assert spec == "==" + pins[name], "%s: %s, the dev lock pins %s" % (key, spec, pins[name])
    assert deps["python_interpreter"]["python_path"].endswith("python3.11")


def test_python_requirements_pinned_as_the_dev_lock_or_bounded(ee):
    pins = _lock_pins()
    for spec in ee["dependencies"]["python"]:
        name, constraint = _requirement(spec)
        if name in pins:
            assert constraint == "==" + pins[name], "%s: the dev lock pins %s" % (spec, pins[name])
        else:
            assert re.search(r"[<>=]", constraint), "%s: not in the dev lock, so it needs a version range" % spec


def test_controller_scripts_imports_are_in_the_ee(ee):
    named = {_requirement(spec)[0] for spec in ee["dependencies"]["python"]}
    for script in CONTROLLER_SCRIPTS:
        tree = ast.parse(_load(script))
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        third_party = {name for name in imported if name not in sys.stdlib_module_names and name != "__future__"}
        assert third_party <= named, "%s imports %s, not in execution-environment.yml" % (script, third_party - named)


def test_collections_cover_galaxy_yml_and_every_fqcn_used(ee):
    collections = {c["name"]: c.get("version", "*") for c in ee["dependencies"]["galaxy"]["collections"]}
    for name, version in _load("galaxy.yml")["dependencies"].items():
        assert collections.get(name) == version, "%s %s (galaxy.yml) is not in the EE as such" % (name, version)
    used = set()
    # Tasks, play keywords and ansible.cfg's callbacks name collections; Python files import ansible.* instead.
    for top in ("roles", "playbooks", "plugins", "site.yml", "ansible.cfg"):
        base = os.path.join(ROOT, top)
        paths = [base] if os.path.isfile(base) else [
            os.path.join(d, f) for d, _dirs, files in os.walk(base) for f in files if f.endswith((".yml", ".j2"))]
        for path in paths:
            with open(path) as fh:
                used |= {m.group(1) for m in FQCN.finditer(fh.read())}
    assert used - BUILTIN <= set(collections), "used, not in the EE: %s" % sorted(used - BUILTIN - set(collections))


@pytest.mark.skipif(BUILDER is None, reason="ansible-builder is not installed (requirements-dev.txt has it)")
def test_ansible_builder_create(tmp_path, ee):
    context = tmp_path / "context"
    proc = subprocess.run([BUILDER, "create", "-f", EE_FILE, "-c", str(context), "--output-filename", "Containerfile"],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    build = context / "_build"
    assert (build / "requirements.txt").read_text().split() == ee["dependencies"]["python"]
    assert yaml.safe_load((build / "requirements.yml").read_text()) == ee["dependencies"]["galaxy"]
    assert (build / "bindep.txt").read_text().splitlines() == ee["dependencies"]["system"]
    containerfile = (context / "Containerfile").read_text()
    refs = "%s %s" % (ee["dependencies"]["ansible_core"]["package_pip"], ee["dependencies"]["ansible_runner"]["package_pip"])
    assert 'ARG ANSIBLE_INSTALL_REFS="%s"' % refs in containerfile
    assert "FROM %s" % "$EE_BASE_IMAGE" in containerfile
    assert 'ARG EE_BASE_IMAGE="%s"' % ee["images"]["base_image"]["name"] in containerfile
