# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Nothing from an inventory reaches the unit unquoted (issue 27).

The role's real templates (vllm.service.j2, vllm.env.j2) are rendered here by Ansible's own Templar
with the role's defaults/main.yml and vars/main.yml (so its vllm_* filters run as in a play) over a
read of the host like the one vllm_service_host_state returns. A value either is refused with an
error naming its variable, or the unit has exactly the directives it has with the defaults.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import (
    UNIT_SETTINGS,
    VllmUnitError,
    check_unit_value,
    check_unit_values,
    device_groups,
    hardening_directives,
    unit_values,
)

ROLE = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "roles", "vllm_service"))
# The directory holding ansible_collections/ as this test imports the collection.
COLLECTIONS_PATH = os.path.abspath(os.path.join(os.path.dirname(vllm_unit.__file__), *[os.pardir] * 5))
INJECTION = "infinity\nExecStartPre=/bin/sh -c 'id > /root/pwned'"

# What vllm_service_host_state returns on a host with vLLM installed, a service account and one GPU
# node anyone may open (so no SupplementaryGroups= line whatever the user is).
STATE = {
    "venv": {"real": "/opt/vllm-env.generations/g1"},
    "vllm": {"installed": True, "version": "0.32.0", "behaviour": {"shutdown_timeout": True}},
    "passwd": ["x", "999", "999", "", "/var/lib/vllm", "/bin/false"],
    "group_db": {"vllm": ["x", "999", ""]},
    "devices": [{"path": "/dev/nvidia0", "mode": "0666", "uid": 0, "gid": 0, "ischr": True}],
    "target_config": {}, "drafter_config": None, "record": None,
    "files": {"unit": {"exists": False}, "env": {"exists": False}},
}


class TemplateFailed(Exception):
    """The role's template did not render; the message is Ansible's."""


class Renderer(object):
    """The role's real templates, rendered by Ansible (_vllm_unit_render.py, a process of its own)."""

    def __init__(self):
        worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_vllm_unit_render.py")
        self.proc = subprocess.Popen([sys.executable, worker, COLLECTIONS_PATH, ROLE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, universal_newlines=True, env=dict(
                                         os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH))

    def render(self, name="vllm.service.j2", **variables):
        values = {"__vllm_service_state": STATE}
        values.update(variables)
        self.proc.stdin.write(json.dumps({"template": name, "vars": values}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise TemplateFailed(reply["error"])
        return reply["text"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def renderer():
    rendering = Renderer()
    yield rendering
    rendering.close()


def directives(unit):
    """[(section, directive), ...] of a unit as systemd reads it (comments and blank lines skipped)."""
    out, section = [], None
    for line in unit.split("\n"):
        assert not line.endswith("\\"), "a line systemd would join to the next: %r" % line
        if not line.strip() or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        assert "=" in line, "not a directive: %r" % line
        out.append((section, line.split("=", 1)[0]))
    return out


def assignments(env_file):
    return [line.split("=", 1)[0] for line in env_file.split("\n") if line.strip() and not line.startswith("#")]


def template_error(excinfo):
    return str(excinfo.value)


# ------------------------------------------------------------ regressions ---

def test_defaults_render_as_before(renderer):
    unit = renderer.render()
    assert "LimitMEMLOCK=infinity\n" in unit and "User=vllm\nGroup=vllm\n" in unit
    assert "SyslogIdentifier=vllm-default\n" in unit and "Description=vLLM target on port 8000\n" in unit
    assert "EnvironmentFile=/etc/vllm/default.env\n" in unit
    assert "# Environment of vllm-default.service" in renderer.render("vllm.env.j2")


@pytest.mark.parametrize("variable, value", [
    ("vllm_service_limit_memlock", INJECTION),            # the row: it ran as root on restart
    ("vllm_service_limit_memlock", "infinity\r"),
    ("vllm_service_limit_memlock", "infinity\n"),          # a YAML "|" block's trailing newline
    ("vllm_service_group", "vllm\nExecStartPre=/bin/sh -c 'id > /root/pwned'"),
    ("vllm_service_user", "vllm\nExecStartPre=/bin/true"),
    ("vllm_service_unit_name", "vllm-x\nExecStartPre=/bin/true"),
    ("vllm_service_instance", "default\n"),
    ("vllm_service_served_model_name", "m\nExecStartPre=/bin/true"),
    ("vllm_service_limit_nofile", "1048576\nExecStartPre=/bin/true"),
    ("vllm_service_timeout_start_sec", "1800\nExecStartPre=/bin/true"),
    ("vllm_service_restart_sec", "10\u2028x"),
    ("vllm_service_start_limit_burst", "3\x00"),
    ("vllm_service_start_limit_interval_sec", "900\x85"),
])
def test_a_control_character_is_refused_naming_the_variable(renderer, variable, value):
    with pytest.raises(TemplateFailed) as info:
        renderer.render(**{variable: value})
    message = template_error(info)
    assert "vllm_unit_values: %s: " % variable in message
    assert "control character" in message
    # The same check as the role's preflight and the inventory checker ask.
    assert check_unit_value(variable, value).startswith(variable + ": ")


@pytest.mark.parametrize("variable, value, expected", [
    ("vllm_service_limit_memlock", "infinity; ExecStartPre=/bin/true", "LimitMEMLOCK=: infinity, or bytes"),
    ("vllm_service_limit_memlock", "lots", "LimitMEMLOCK=: infinity, or bytes"),
    ("vllm_service_group", "vllm ExecStartPre=/bin/true", "a group name"),
    ("vllm_service_group", "%n", "a group name"),
    ("vllm_service_user", "", "a user name"),
    ("vllm_service_unit_name", "../../../etc/cron.d/x", "a systemd unit name"),
    ("vllm_service_unit_name", "-x", "a systemd unit name"),
    ("vllm_service_unit_name", "vllm@", "a template"),
    ("vllm_service_instance", "..", "a directory"),
    ("vllm_service_instance", "a/b", "letters, digits"),
    ("vllm_service_served_model_name", "model\\", "ends with a backslash"),
    ("vllm_service_timeout_start_sec", -1, "an integer >= 0"),
    ("vllm_service_limit_nofile", "1e6", "LimitNOFILE=: an integer"),
    ("vllm_service_port", 0, "an integer 1-65535"),
    ("vllm_service_restart_sec", True, "an integer >= 0"),
    ("vllm_service_user", ["root"], "a user name"),
])
def test_a_value_outside_its_form_is_refused(renderer, variable, value, expected):
    with pytest.raises(TemplateFailed, match=re.escape("%s: " % variable)) as info:
        renderer.render(**{variable: value})
    assert expected in template_error(info)


@pytest.mark.parametrize("variable, value, line", [
    ("vllm_service_limit_memlock", "64K", "LimitMEMLOCK=64K"),
    ("vllm_service_limit_memlock", "8G:infinity", "LimitMEMLOCK=8G:infinity"),
    ("vllm_service_limit_memlock", 65536, "LimitMEMLOCK=65536"),
    ("vllm_service_limit_nofile", "infinity", "LimitNOFILE=infinity"),
    ("vllm_service_user", "root", "User=root"),
    ("vllm_service_group", 0, "Group=0"),
    ("vllm_service_unit_name", "vllm-qwen36-27b", "SyslogIdentifier=vllm-qwen36-27b"),
    ("vllm_service_served_model_name", "Qwen 27B 100% $HOME", "Description=vLLM Qwen 27B 100%% $HOME on port 8000"),
])
def test_values_in_their_form_render(renderer, variable, value, line):
    assert line + "\n" in renderer.render(**{variable: value})


def test_the_environment_file_refuses_a_bad_unit_name(renderer):
    with pytest.raises(TemplateFailed, match="vllm_service_unit_name: .*control character"):
        renderer.render("vllm.env.j2", vllm_service_unit_name="x\nHF_TOKEN=stolen")


@pytest.mark.parametrize("args, flag", [
    (["--api-ke", "KEY-27"], "--api-key"),     # the row: vLLM's parser takes the abbreviation
    (["--hf-tok=KEY-27"], "--hf-token"),
    (["--api_key", "KEY-27"], "--api-key"),
    (["--API-KEY=KEY-27"], "--api-key"),
    (["--api-key.x", "KEY-27"], "--api-key"),
    (["--hf_tok", "KEY-27"], "--hf-token"),
])
def test_an_abbreviated_credential_flag_never_reaches_the_unit(renderer, args, flag):
    with pytest.raises(TemplateFailed) as info:
        renderer.render(vllm_service_extra_args=args)
    message = template_error(info)
    assert "vllm_service_extra_args[0]" in message
    assert ("as %s:" % flag in message) or ("'%s'" % flag in message)
    assert "KEY-27" not in message
    assert "KEY-27" not in str(check_unit_value("vllm_service_extra_args", args))


def test_hardening_overrides_cannot_add_a_command_or_the_environment():
    for name in ("ExecStartPre", "ExecStopPost", "ExecReload", "PassEnvironment", "UnsetEnvironment"):
        with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: %s runs a command" % name):
            hardening_directives("full", {name: "/bin/true"}, [])
    for name in ("ExecStart", "Environment", "EnvironmentFile", "User"):
        with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: %s is set by the role" % name):
            hardening_directives("full", {name: "/bin/true"}, [])
    with pytest.raises(VllmUnitError, match="vllm_service_hardening_overrides: 'ProtectHome\\\\n' is not a systemd"):
        hardening_directives("full", {"ProtectHome\n": "yes"}, [])
    with pytest.raises(VllmUnitError, match="ends with a backslash"):
        hardening_directives("full", {"ProtectHome": "yes\\"}, [])
    with pytest.raises(VllmUnitError, match="has a %"):
        hardening_directives("full", {}, ["/srv/%h"])


def test_full_matches_refuse_a_trailing_newline():
    # re's "$" matches before a final newline: every pattern of the one home is a full match.
    with pytest.raises(VllmUnitError, match="supplementary_groups\\[0\\]"):
        device_groups("vllm", ["video\n"], {}, [])
    assert check_unit_values({"vllm_service_environment": {"A\n": "1"}}) == [
        "vllm_service_environment: 'A\\n' is not an environment variable name (letters, digits and _, not starting "
        "with a digit)"]
    assert check_unit_value("vllm_service_api_key", "key\n").startswith("vllm_service_api_key: has a control")


def test_a_host_group_that_is_not_a_name_is_refused():
    with pytest.raises(VllmUnitError, match="the group owning /dev/nvidia0"):
        device_groups("vllm", [], {"bad\nname": ["x", "44", ""]},
                      [{"path": "/dev/nvidia0", "mode": "0660", "uid": 0, "gid": 44, "ischr": True}])


def test_unit_values_api():
    got = unit_values({"vllm_service_served_model_name": "a%b", "vllm_service_port": "08000",
                       "vllm_service_limit_memlock": "infinity", "__vllm_service_env_path": "/etc/vllm/x.env"})
    assert got == {"served_model_name": "a%b", "port": "8000", "limit_memlock": "infinity", "env_path": "/etc/vllm/x.env",
                   "description": "vLLM a%%b on port 8000"}
    with pytest.raises(VllmUnitError, match="'vllm_service_nope' is not one of"):
        unit_values({"vllm_service_nope": 1})
    with pytest.raises(VllmUnitError, match="expected a mapping"):
        unit_values(["x"])


def test_check_unit_values_for_the_inventory_checker():
    variables = {"vllm_service_limit_memlock": INJECTION, "vllm_service_group": "vllm\nX=1",
                 "vllm_service_unit_name": "{{ 'vllm-' ~ vllm_service_instance }}",
                 "vllm_service_extra_args": ["--hf-tok=T0KEN"], "vllm_service_api_key": "a b",
                 "vllm_service_port": 8000, "other_role_variable": "x\ny"}
    problems = check_unit_values(variables, skip_templates=True)
    assert [p.split(":", 1)[0] for p in problems] == [
        "vllm_service_api_key", "vllm_service_extra_args[0]", "vllm_service_group", "vllm_service_limit_memlock"]
    assert not any("T0KEN" in p or "a b" in p for p in problems)
    # Without skip_templates (a rendered value), a template's text is judged as it is.
    assert any(p.startswith("vllm_service_unit_name") for p in check_unit_values(variables))
    assert check_unit_value("vllm_service_port", 8000) is None
    assert check_unit_value("python_env_venv_dir", "x\ny") is None


# ------------------------------------------------------------- properties ---

# Variables rendered into the unit as one value each, and the directive(s) each may touch.
RENDERED = sorted(set(UNIT_SETTINGS) - {"vllm_service_hardening", "vllm_service_local_facts_dir",
                                        "__vllm_service_env_path"}) + [
    "vllm_service_host", "vllm_service_reasoning_parser", "vllm_service_tool_call_parser"]
# Text that tries to break out of its line: line breaks, separators, "=", "[", quotes, backslashes, specifiers.
hostile = st.lists(st.sampled_from(list("\n\r\x00\t\x0b\x0c\x85\u2028\u2029 =[]#;\\\"'%$/-_.:@") +
                                   ["ExecStartPre", "infinity", "vllm", "1", "K"] + list("aZ09")),
                   max_size=12).map("".join)
values = st.one_of(hostile, st.text(max_size=24), st.integers(-5, 70000))


@pytest.fixture(scope="module")
def baseline(renderer):
    return directives(renderer.render()), assignments(renderer.render("vllm.env.j2"))


# A default made from another variable is checked as what it becomes: its error names it.
DERIVED = {"vllm_service_model": ("vllm_service_served_model_name",)}


# Each example is one real render (about 30 ms): a smaller budget than the unit stage's default.
@settings(max_examples=60, deadline=None)
@given(variable=st.sampled_from(RENDERED), value=values)
def test_property_a_value_is_refused_or_the_unit_keeps_its_directives(renderer, baseline, variable, value):
    try:
        unit = renderer.render(**{variable: value})
    except TemplateFailed as exc:
        assert any(name in str(exc) for name in (variable,) + DERIVED.get(variable, ())), str(exc)
        return
    assert directives(unit) == baseline[0], (variable, value)


@settings(max_examples=60, deadline=None)
@given(environment=st.dictionaries(st.one_of(st.sampled_from(["A", "B_1", "NCCL_X", "A\n", "HF_HOME", "x y", "1A"]),
                                             st.text(max_size=6)),
                                   values, max_size=3))
def test_property_the_environment_file_gets_exactly_its_assignments(renderer, baseline, environment):
    try:
        env_file = renderer.render("vllm.env.j2", vllm_service_environment=environment)
    except TemplateFailed as exc:
        assert "vllm_service_environment" in str(exc), str(exc)
        return
    expected = baseline[1][:2] + sorted(environment)
    assert assignments(env_file) == expected


# ------------------------------------------------------------ the real role ---

ROLE_PLAY = """
- name: The vllm_service role on hostile inventory values
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: inference.gpu_host.vllm_service
"""
HOSTILE_HOSTS = {
    "memlock": {"vllm_service_limit_memlock": INJECTION},
    "group": {"vllm_service_group": "vllm\nExecStartPre=/bin/sh -c 'id > /root/pwned'"},
    "unitname": {"vllm_service_unit_name": "vllm-x\nExecStartPre=/bin/true"},
    "apike": {"vllm_service_extra_args": ["--api-ke", "KEY-27-abbreviated"]},
    "hftok": {"vllm_service_extra_args": ["--hf-tok=KEY-27-equals"]},
}


def test_the_role_refuses_them_before_it_reads_the_host(tmp_path):
    """A real run of the role (check mode, local connection): each host fails at the first check, naming the
    variable, with no task after it run and no secret in the output."""
    playbook = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable)) or shutil.which(
        "ansible-playbook")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "vllm_service_local_facts_dir": str(tmp_path / "facts")}
    inventory = {"all": {"hosts": dict((name, dict(values, **local)) for name, values in HOSTILE_HOSTS.items())}}
    (tmp_path / "hosts.json").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(ROLE_PLAY)
    # No ansible.cfg of the clone (its profile_tasks would print into the JSON, its fact cache write to ~).
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_PATH,
               ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run([playbook, "--check", "--diff", "-i", str(tmp_path / "hosts.json"), str(tmp_path / "play.yml")],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    tasks = report["plays"][0]["tasks"]
    ran = [t["task"]["name"] for t in tasks]
    # Argument validation, then the check: nothing read from the host, nothing written.
    assert len(ran) == 3 and ran[-1].endswith(" : Check the values the unit is rendered from"), ran
    assert "KEY-27" not in proc.stdout + proc.stderr
    results = tasks[-1]["hosts"]
    expected = {"memlock": "vllm_service_limit_memlock: ", "group": "vllm_service_group: ",
                "unitname": "vllm_service_unit_name: ", "apike": "vllm_service_extra_args[0]: '--api-ke' is read by",
                "hftok": "vllm_service_extra_args[0]: '--hf-tok' is read by"}
    for host, start in expected.items():
        assert results[host]["failed"] is True and start in results[host]["msg"], results[host]
        assert "KEY-27" not in results[host]["msg"]
    assert report["stats"] == dict((host, report["stats"][host]) for host in expected)
    assert all(stats["failures"] == 1 and stats["changed"] == 0 for stats in report["stats"].values())
    assert not (tmp_path / "facts").exists()
