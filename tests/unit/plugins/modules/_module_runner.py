"""Run one of the collection's modules for real, as Ansible would: a child Python with an args file.

Shared by the module tests here, each of which wraps it with its own defaults.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
COLLECTIONS = os.path.join(ROOT, ".collections")
PREFIX = "ansible_collections.inference.gpu_host.plugins.modules."


def run_module(module, workdir, module_args, check=False, diff=False, env=None, check_rc=False, args_name=None):
    """Run plugins/modules/<module>.py with ``module_args`` in ``workdir``; return its JSON result.

    check/diff set Ansible's check and diff mode. ``env`` adds environment variables. With
    ``check_rc`` the exit status must agree with the result's ``failed``. Each call writes a new
    args file unless ``args_name`` names one.
    """
    args = dict(module_args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    workdir = str(workdir)
    if args_name is None:
        args_name = "args-%d.json" % len([n for n in os.listdir(workdir) if n.startswith("args-")])
    args_file = os.path.join(workdir, args_name)
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    child_env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    child_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", PREFIX + module, args_file], env=child_env, cwd=workdir,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          check=False)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("module printed no JSON (rc %d)\nstdout: %s\nstderr: %s"
                             % (proc.returncode, proc.stdout, proc.stderr))
    if check_rc:
        assert (proc.returncode != 0) == bool(result.get("failed")), proc.stderr
    return result


def run_playbook(workdir, playbook, *options):
    """Run ``playbook`` (its text) with ansible-playbook -c local against localhost in ``workdir``, the collection on
    the collections path and the json callback; return (the parsed output, the process). It must exit 0."""
    path = os.path.join(str(workdir), "play.yml")
    with open(path, "w") as handle:
        handle.write(playbook)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="False")
    env.pop("ANSIBLE_CONFIG", None)
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    program = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([program] + list(options) + ["-c", "local", "-i", "localhost,", path], env=env,
                          cwd=str(workdir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout[proc.stdout.index("{"):]), proc
