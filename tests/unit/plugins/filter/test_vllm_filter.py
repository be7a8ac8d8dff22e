# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm filters as the vllm_service role calls them, and their documentation files (module_utils/_vllm decides).

systemd_exec (module_utils/_vllm/unit.py's systemd_quote on each argument): every printable value survives
systemd's parsing; control characters are refused.
"""
import json
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.filter.vllm import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.serve import SERVE_SETTINGS, build_serve_argv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import VllmUnitError, systemd_quote
from _result_checks import LazyLike  # noqa: E402  pylint: disable=wrong-import-position

FILTERS = FilterModule().filters()


# -------- The vllm_serve filters as the vllm_service role calls them, and their documentation files.
FILTER_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter")
ENTRY = {"argv": ["/root/ml-env/bin/vllm", "serve"], "model_arg": "positional"}

# The settings dict the role's "Build the command line" task passes (inventories/ct129).
CT129_SETTINGS = {
    "model": "/root/models/Qwen3.6-27B", "served_model_name": "Qwen3.6-27B", "host": "0.0.0.0", "port": 30000,
    "tensor_parallel_size": 2, "gpu_memory_utilization": 0.9, "max_model_len": 32768,
    "max_num_batched_tokens": 32768, "enable_chunked_prefill": None, "reasoning_parser": "qwen3",
    "enable_auto_tool_choice": True, "tool_call_parser": "qwen3_coder", "language_model_only": True,
    "trust_remote_code": True,
    "speculative_config": {"method": "dflash", "model": "/root/models/Qwen3.6-27B-DFlash",
                           "num_speculative_tokens": 15},
    "extra_args": [],
    "shutdown_timeout": None,
}


def serve_argv(settings, entry_point, **render):
    """The command line as the role's render gives it (vllm_unit_values' serve)."""
    return FILTERS["vllm_unit_values"]({}, serve={"settings": settings, "entry_point": entry_point}, **render)["serve"]


def test_the_role_settings_give_build_serve_argv():
    assert set(CT129_SETTINGS) == set(SERVE_SETTINGS)
    assert serve_argv(CT129_SETTINGS, ENTRY) == build_serve_argv(ENTRY, **CT129_SETTINGS)


def test_lazy_containers_are_read_as_plain_dicts():
    settings = dict(CT129_SETTINGS, speculative_config=LazyLike(CT129_SETTINGS["speculative_config"]))
    serve = FILTERS["vllm_unit_values"](LazyLike({}), serve=LazyLike({"settings": LazyLike(settings),
                                                                      "entry_point": LazyLike(ENTRY)}))["serve"]
    assert serve == build_serve_argv(ENTRY, **CT129_SETTINGS)


def test_unknown_and_missing_settings_are_named():
    settings = dict(CT129_SETTINGS, max_model_length=1)
    del settings["port"]
    message = r"unknown settings \['max_model_length'\], missing settings \['port'\]"
    with pytest.raises(AnsibleFilterError, match=message):
        serve_argv(settings, ENTRY)


def test_settings_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match="^vllm_unit_values: expected a dict of settings, got list"):
        serve_argv(["--port", "1"], ENTRY)


def test_a_bad_setting_fails_naming_the_filter_and_the_variable():
    with pytest.raises(AnsibleFilterError, match=r"^vllm_unit_values: vllm_service_port: expected an integer 1-65535"):
        serve_argv(dict(CT129_SETTINGS, port=0), ENTRY)


def test_the_render_takes_the_drains_shutdown_timeout_for_the_command_line():
    settings = dict(CT129_SETTINGS)
    del settings["shutdown_timeout"]
    render = FILTERS["vllm_unit_values"](
        {"vllm_service_unit_name": "vllm-x", "vllm_service_hardening": "full"},
        drain={"shutdown_timeout": 60, "supported": True},
        hardening={"level": "full", "writable_paths": ["/root"]},
        serve={"settings": settings, "entry_point": ENTRY})
    assert render["unit_name"] == "vllm-x" and render["hardening"] == "full"
    assert render["drain"]["kill_mode"] == "mixed"
    drained = dict(settings)
    drained["shutdown_timeout"] = 60
    assert render["serve"] == build_serve_argv(ENTRY, **drained)
    assert "--shutdown-timeout" in render["serve"]["flags"]
    assert ["ReadOnlyPaths", "-/home -/run/user"] in render["hardening_directives"]
    unsupported = FILTERS["vllm_unit_values"]({}, drain={"shutdown_timeout": 60, "supported": None},
                                              serve={"settings": settings, "entry_point": ENTRY})
    assert unsupported["drain"]["kill_mode"] == "control-group"
    assert "--shutdown-timeout" not in unsupported["serve"]["flags"]
    assert set(FILTERS["vllm_unit_values"]({"vllm_service_unit_name": "vllm-x"})) == {"unit_name"}


def test_vllm_restart_result_reads_like_a_task_result():
    assert FILTERS["vllm_restart_result"]("a1\n", "b2\n") == {
        "changed": True, "invocation_before": "a1", "invocation_after": "b2"}
    assert FILTERS["vllm_restart_result"]("a1", "a1")["changed"] is False


def test_vllm_restart_result_says_whether_a_change_can_be_rolled_back():
    rollback = {"enabled": True, "change_pending": True, "previous_present": [True, True]}
    assert FILTERS["vllm_restart_result"]("a1", "b2", LazyLike(rollback))["rollback"] == {"roll_back": True, "reason": ""}
    plan = FILTERS["vllm_restart_result"]("a1", "b2", dict(rollback, previous_present=[False, False]))["rollback"]
    assert plan["roll_back"] is False and "first installation" in plan["reason"]
    # The restart is this comparison's: no new InvocationID, no restart, no rollback.
    plan = FILTERS["vllm_restart_result"]("a1", "a1", rollback)["rollback"]
    assert plan["roll_back"] is False and "did not restart" in plan["reason"]
    assert "rollback" not in FILTERS["vllm_restart_result"]("a1", "b2")


def test_vllm_restart_result_bad_rollback_input():
    rollback = {"enabled": "maybe", "change_pending": True, "previous_present": [True, True]}
    with pytest.raises(AnsibleFilterError, match="^vllm_restart_result: vllm_service_rollback: expected true or false"):
        FILTERS["vllm_restart_result"]("a1", "b2", rollback)
    with pytest.raises(AnsibleFilterError, match="^vllm_restart_result: rollback: expected a dict of enabled"):
        FILTERS["vllm_restart_result"]("a1", "b2", {"enabled": True})


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_is_documented(name):
    """ansible-doc -t filter inference.gpu_host.<name> reads plugins/filter/<name>.yml."""
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["short_description"] and doc["EXAMPLES"] and doc["RETURN"]["_value"]["type"]
    assert "_input" in doc["DOCUMENTATION"]["options"]


@pytest.mark.parametrize("spec, expected", [
    ({"method": "dflash", "model": "/root/models/d/"}, "/root/models/d"),
    ({"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16"}, ""),
    ({"method": "eagle3", "model": "/root/models/e"}, ""),
    ({}, ""), (None, ""),
])
def test_vllm_unit_inputs_drafter_dir(spec, expected):
    values = {"vllm_service_hf_home": "/h", "vllm_service_speculative_config": spec}
    assert FILTERS["vllm_unit_inputs"](values)["drafter_dir"] == expected


def test_vllm_unit_inputs_drafter_dir_bad_input():
    # A speculative config that is not a dict is a problem; without one, no drafter directory is derived.
    got = FILTERS["vllm_unit_inputs"]({"vllm_service_speculative_config": ["dflash"]})
    assert got["problems"] and got["problems"][0].startswith("vllm_service_speculative_config: expected a dict")
    assert got["env_file"] is None and got["drafter_dir"] is None


# -------- vllm_unit_inputs as the vllm_service role calls it (module_utils/_vllm/unit.py decides).


def test_env_file_gives_the_lines_and_whether_a_secret_is_there():
    values = {"vllm_service_hf_home": "/root/.cache/huggingface",
              "vllm_service_environment": LazyLike({"CUDA_VISIBLE_DEVICES": "0,1"})}
    secrets = LazyLike({"secret_environment": LazyLike({"IGH_TOKEN": "a b"}), "hf_token": "", "api_key": "sk-1"})
    got = FILTERS["vllm_unit_inputs"](LazyLike(values), secrets)["env_file"]
    assert got == {"lines": ["HF_HOME=/root/.cache/huggingface", "PYTHONUNBUFFERED=1", "CUDA_VISIBLE_DEVICES=0,1",
                             "IGH_TOKEN='a b'", "VLLM_API_KEY=sk-1"], "secret": True}
    assert FILTERS["vllm_unit_inputs"]({"vllm_service_hf_home": "/h"})["env_file"]["secret"] is False


def test_unit_problems_as_the_role_calls_them_after_the_host_read():
    env = {"vllm_service_environment": LazyLike({"VLLM_USE_V2_MODEL_RUNNER": "0"}),
           "vllm_service_secret_environment": LazyLike({})}
    problems = FILTERS["vllm_unit_inputs"](env, None, "0.34.0")["problems"]
    assert len(problems) == 1
    assert problems[0].startswith("vllm_service_environment: VLLM_USE_V2_MODEL_RUNNER=0: vLLM 0.34.0 refuses it")
    assert FILTERS["vllm_unit_inputs"](env, None, "0.33.0")["problems"] == []
    assert FILTERS["vllm_unit_inputs"](env) == {"problems": [], "env_file": None, "drafter_dir": ""}


def test_serve_argv_without_gpu_memory_utilization():
    settings = dict(CT129_SETTINGS, gpu_memory_utilization=None)
    assert "--gpu-memory-utilization" not in serve_argv(settings, ENTRY)["flags"]


def test_env_file_errors_name_the_filter_and_never_the_secret():
    values = {"vllm_service_hf_home": "/h", "vllm_service_environment": {}}
    with pytest.raises(AnsibleFilterError, match="^vllm_unit_inputs: vllm_service_secret_environment.A_TOKEN") as info:
        FILTERS["vllm_unit_inputs"](values, {"secret_environment": {"A_TOKEN": "hunter2-secret\n"}})
    assert "hunter2" not in str(info.value)
    with pytest.raises(AnsibleFilterError, match="^vllm_unit_inputs: the secrets: expected a mapping"):
        FILTERS["vllm_unit_inputs"](values, ["x"])


def test_hardening_as_the_role_calls_it():
    hardening = {"level": "full", "overrides": LazyLike({}), "writable_paths": ["/root", "/root/.cache/huggingface"],
                 "read_paths": LazyLike({"vllm_service_venv_dir": "/root/ml-env"})}
    got = FILTERS["vllm_unit_values"]({}, hardening=LazyLike(hardening))["hardening_directives"]
    assert ["ReadOnlyPaths", "-/home -/run/user"] in got
    with pytest.raises(AnsibleFilterError, match="^vllm_unit_values: vllm_service_hardening: expected one of"):
        FILTERS["vllm_unit_values"]({}, hardening={"level": "strict", "overrides": {}, "writable_paths": []})


def test_drain_as_the_role_calls_it():
    assert FILTERS["vllm_unit_values"]({}, drain={"shutdown_timeout": 60, "supported": True})["drain"][
        "kill_mode"] == "mixed"
    assert FILTERS["vllm_unit_values"]({}, drain={"shutdown_timeout": 60})["drain"]["kill_mode"] == "control-group"
    with pytest.raises(AnsibleFilterError, match="^vllm_unit_values: vllm_service_shutdown_timeout"):
        FILTERS["vllm_unit_values"]({}, drain={"shutdown_timeout": -1, "supported": True})


# -------- vllm_service_host_check: what preflight derives from the host read, as the role calls it.
GROUP_DB = {"video": ["x", "44", ""], "root": ["x", "0", ""]}
NODES = [{"path": "/dev/nvidia0", "mode": "0660", "uid": 0, "gid": 44, "ischr": True}]
HOST = {"vllm": {"installed": True, "version": "0.29.0", "distribution": "vllm"}, "jit_toolchain": {"problem": None},
        "target_config": {"text_config": {"num_hidden_layers": 64}},
        "drafter_config": {"architectures": ["DFlashDraftModel"], "block_size": 16,
                           "dflash_config": {"target_layer_ids": [1, 16, 31, 46, 61]}},
        "gpus": {"gpu_count": 2, "gpus": [{"name": "NVIDIA RTX A6000"}] * 2},
        "passwd": ["x", "999", "999", "", "/var/lib/vllm", "/bin/false"], "group_db": GROUP_DB, "devices": NODES}
REQUIREMENTS = {"host": "ct129", "check_mode": False, "venv_dir": "/opt/ml-env", "model": "/srv/models/qwen",
                "drafter_model": "/srv/models/dflash", "tensor_parallel_size": 2, "user": "vllm",
                "environments": {"vllm_service_environment": {}, "vllm_service_secret_environment": {}},
                "supplementary_groups": ["video", "render"], "speculative_config": {"method": "dflash"},
                "drafter_result": {}, "environment": {}, "gpu_memory_utilization": 0.9, "max_model_len": 32768,
                "extra_args": ["--max-num-seqs", "32"]}


def host_check(state_change=None, **change):
    return FILTERS["vllm_service_host_check"](dict(HOST, **(state_change or {})), dict(REQUIREMENTS, **change))


def test_the_host_check_derives_access_spec_and_known_problems():
    got = host_check()
    assert got["problems"] == [] and got["device_access"] == {"groups": ["video"], "inaccessible": []}
    # num_speculative_tokens, when not set, is the drafter's block_size - 1.
    assert got["speculative_config"] == {"method": "dflash", "num_speculative_tokens": 15}
    (row,) = [r for r in got["known_problems"] if r["id"] == "dflash-cuda-graphs-illegal-address"]
    assert row["applies"] == "yes" and row["line"].startswith("[dflash-cuda-graphs-illegal-address] error: ")
    assert host_check(speculative_config={})["known_problems"] == []
    assert host_check({"vllm": {"installed": False, "reason": "no venv"}}, check_mode=True)["known_problems"] == []


def test_the_host_check_reads_lazy_containers():
    requirements = dict(REQUIREMENTS, speculative_config=LazyLike({"method": "dflash"}))
    got = FILTERS["vllm_service_host_check"](LazyLike(dict(HOST, group_db=LazyLike(GROUP_DB))), LazyLike(requirements))
    assert got["speculative_config"] == {"method": "dflash", "num_speculative_tokens": 15}


def test_the_host_check_stops_at_a_problem_and_checks_the_access():
    got = host_check({"target_config": None})
    assert got["problems"] == ["vllm_service_model=/srv/models/qwen has no config.json on ct129."]
    assert got["speculative_config"] is None and got["known_problems"] == []
    assert host_check(user="root", supplementary_groups=["video"])["device_access"] == {"groups": [], "inaccessible": []}
    # Check mode on a blank host: the account does not exist yet, so nothing is checked.
    blank = host_check({"passwd": None}, check_mode=True, supplementary_groups=["video"])
    assert blank["device_access"] == {"groups": ["video"], "inaccessible": []}
    denied = host_check({"devices": [dict(NODES[0], mode="0600")]})
    assert denied["device_access"]["inaccessible"] == ["/dev/nvidia0"] and "cannot open /dev/nvidia0" in denied[
        "problems"][0]


@pytest.mark.parametrize("state_change, change, message", [
    ({"passwd": ["x"]}, {}, "^vllm_service_host_check: vllm_service_user=vllm: not in the account"),
    ({}, {"extra_args": "--enforce-eager"}, "^vllm_service_host_check: extra_args: expected a list of strings"),
    ({"drafter_config": {"block_size": 0}}, {}, "^vllm_service_host_check: the drafter's config.json: expected block_size"),
    ({}, {"user": None, "surplus": 1}, "^vllm_service_host_check: expected the host state and a mapping of host, "),
])
def test_a_bad_value_names_the_filter(state_change, change, message):
    with pytest.raises(AnsibleFilterError, match=message):
        host_check(state_change, **change)


# -------- systemd_exec: every printable value survives systemd's parsing; control characters are refused.
quote = systemd_quote
exec_line = FILTERS["systemd_exec"]


def previous_quote(arg):
    """The filter as it was before control characters were refused: printable values must render the same."""
    text = str(arg)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % text


def systemd_words(line):
    """Split an ExecStart= value the way systemd does, for what these filters write.

    In systemd's order: %-specifiers on the whole line (only %% is expected here), then
    whitespace splitting with double quotes and C escapes (only \\\\ and \\" expected), then
    $-expansion per word at exec time (only $$ expected). Anything else fails the test.
    """
    assert "\n" not in line and "\r" not in line and "\0" not in line
    assert not re.search(r"%[^%]", line.replace("%%", "")), "a %-specifier systemd would expand: " + line
    line = line.replace("%%", "%")
    words, pos = [], 0
    while pos < len(line):
        if line[pos] == " ":
            pos += 1
            continue
        assert line[pos] == '"', "an unquoted word: %r" % line[pos:]
        pos += 1
        word = []
        while line[pos] != '"':
            if line[pos] == "\\":
                assert line[pos + 1] in '\\"', "an escape systemd would interpret: %r" % line[pos:pos + 2]
                pos += 1
            word.append(line[pos])
            pos += 1
        pos += 1
        assert pos == len(line) or line[pos] == " "
        word = "".join(word)
        assert not re.search(r"\$[^$]", word.replace("$$", "")), "a $VARIABLE systemd would expand: " + word
        words.append(word.replace("$$", "$"))
    return words


# ------------------------------------------------------------ regressions ---

@pytest.mark.parametrize("value,char", [
    ("x\nExecStartPre=/bin/rm -rf /", 0x0A),
    ("x\rExecStartPre=/bin/rm -rf /", 0x0D),
    ("model\x00", 0x00),
    ("a\tb", 0x09),
    ("\x1b[31m", 0x1B),
    ("\x7f", 0x7F),
    ("next\x85line", 0x85),
    ("line\u2028separator", 0x2028),
])
def test_control_characters_are_refused(value, char):
    with pytest.raises(VllmUnitError) as err:
        quote(value)
    message = str(err.value)
    assert message.startswith("systemd_quote: value %s" % repr(value)[:40])
    assert "control character (U+%04X) at index %d" % (char, value.index(chr(char))) in message
    assert "must be one line of printable text" in message
    with pytest.raises(AnsibleFilterError) as err:
        exec_line(["/opt/venv/bin/vllm", "serve", value])
    assert str(err.value) == "systemd_exec: " + message


def test_long_values_are_cut_in_the_message():
    with pytest.raises(VllmUnitError) as err:
        quote("x" * 100 + "\n")
    assert "'" + "x" * 39 + "..." in str(err.value) and "x" * 60 not in str(err.value)


@pytest.mark.parametrize("value", [None, ["a"], {"a": 1}, ("a",), b"bytes"])
def test_non_scalar_arguments_are_refused(value):
    with pytest.raises(AnsibleFilterError, match="^systemd_exec: systemd_quote: expected a string or a number"):
        exec_line(["vllm", value])


@pytest.mark.parametrize("argv", ["vllm serve", [], {"argv": ["x"]}, None, 42])
def test_systemd_exec_needs_a_non_empty_list(argv):
    with pytest.raises(AnsibleFilterError, match="systemd_exec: expected a non-empty list of arguments"):
        exec_line(argv)


SPEC = json.dumps({"method": "dflash", "model": "/srv/models/q36 dflash", "num_speculative_tokens": 15},
                  sort_keys=True)


@pytest.mark.parametrize("value,rendered", [
    ("/opt/vllm/bin/vllm", '"/opt/vllm/bin/vllm"'),
    ("my model", '"my model"'),
    ("it's", '"it\'s"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("$HOME ${X}", '"$$HOME $${X}"'),
    ("100%", '"100%%"'),
    ("%n%i", '"%%n%%i"'),
    ("C:\\path\\", '"C:\\\\path\\\\"'),
    (";", '";"'),
    (8000, '"8000"'),
    (0.9, '"0.9"'),
    (SPEC, '"' + SPEC.replace('"', '\\"') + '"'),
])
def test_normal_values_render_as_before(value, rendered):
    assert quote(value) == rendered == previous_quote(value) == exec_line([value])
    assert systemd_words(quote(value)) == [str(value)]


def test_a_real_command_line_round_trips():
    argv = ["/opt/vllm/bin/vllm", "serve", "/srv/models/Qwen3.6-27B", "--served-model-name", "qwen 27b",
            "--port", "8000", "--speculative-config", SPEC, "--extra", "50% $HOME \\ ' \""]
    line = exec_line(argv)
    assert line == " ".join(previous_quote(a) for a in argv)
    assert systemd_words(line) == argv
    assert exec_line(tuple(argv)) == line and exec_line(a for a in argv) == line


# ------------------------------------------------------------- properties ---

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_printable = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\u2028\u2029"),
                     max_size=40)


@given(value=_printable)
def test_property_printable_values_parse_back(value):
    rendered = quote(value)
    assert rendered == previous_quote(value)
    assert systemd_words(rendered) == [value]


@given(argv=st.lists(_printable, min_size=1, max_size=6))
def test_property_argv_parses_back(argv):
    assert systemd_words(exec_line(argv)) == argv


@given(head=_printable, control=st.sampled_from([chr(c) for c in list(range(0x20)) + list(range(0x7F, 0xA0))]
                                                + ["\u2028", "\u2029"]), tail=_printable)
def test_property_control_characters_are_refused(head, control, tail):
    value = head + control + tail
    with pytest.raises(VllmUnitError) as err:
        quote(value)
    first = _CONTROL.search(value)
    assert "U+%04X) at index %d" % (ord(first.group()), first.start()) in str(err.value)


# -------- systemd_exec.
def test_systemd_exec_quotes_what_systemd_would_expand():
    assert FILTERS["systemd_exec"](["vllm", '{"a": 1}', "50%", "$HOME"]) == '"vllm" "{\\"a\\": 1}" "50%%" "$$HOME"'
