# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Reading systemd (plugins/module_utils/_common/systemd.py): systemctl show, the journal of one invocation,
a command's output streamed; fed, where a log is needed, with the real vLLM logs of data/vllm_logs/."""

from __future__ import absolute_import, division, print_function

import io
import os
import sys

import pytest

from ansible_collections.inference.gpu_host.plugins.module_utils._common.systemd import (
    MAX_VALUE_CHARS,
    SYSTEMD_ENV,
    CommandOutput,
    HeadLines,
    SystemdError,
    UnitJournal,
    check_invocation_id,
    check_unit_name,
    journal_command,
    journal_unavailable,
    module_runner,
    parse_show,
    read_unit_journal,
    show,
    show_value,
)
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.log import find_root_cause, iter_log_lines

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "vllm_logs")


def _raw(name):
    with open(os.path.join(DATA, name), "rb") as fh:
        return fh.read()


# ---- the journal ---------------------------------------------------------------------------------------

def test_journal_command_by_invocation_and_since():
    inv = "0123456789abcdef0123456789abcdef"
    argv = journal_command("vllm@tiny.service", invocation_id=inv, lines=100)
    assert argv[:7] == ["journalctl", "--no-pager", "-q", "-o", "cat", "-n", "100"]
    assert argv[7:] == ["_SYSTEMD_INVOCATION_ID=" + inv, "+", "INVOCATION_ID=" + inv]
    argv = journal_command("u.service", since="2026-12-02 18:00:00")
    assert argv[-4:] == ["-u", "u.service", "--since", "2026-12-02 18:00:00"]
    with pytest.raises(SystemdError, match="32 hex"):
        journal_command("u.service", invocation_id="x; rm -rf /")


def test_read_unit_journal_uses_the_current_invocation():
    calls = []
    inv = "fedcba9876543210fedcba9876543210"

    def run(argv):
        calls.append(argv)
        if argv[:2] == ["systemctl", "show"]:
            return 0, inv + "\n", ""
        return 0, "line one\nline two\n", ""

    log, info = read_unit_journal(run, "vllm@tiny.service")
    lines = list(iter_log_lines(log))  # the output run returned, as a file (like a streamed journal)
    assert lines == ["line one", "line two"]
    assert info["invocation_id"] == inv
    assert calls[0] == ["systemctl", "show", "-p", "InvocationID", "--value", "vllm@tiny.service"]
    assert "_SYSTEMD_INVOCATION_ID=" + inv in calls[1]


def test_read_unit_journal_falls_back_to_start_time():
    def run(argv):
        if "InvocationID" in argv:
            return 0, "\n", ""
        if "ExecMainStartTimestamp" in argv:
            return 0, "Wed 2026-12-02 18:12:25 UTC\n", ""
        return 0, "x\n", ""

    _lines, info = read_unit_journal(run, "vllm@tiny.service")
    assert info["since"] == "Wed 2026-12-02 18:12:25 UTC"
    assert info["invocation_id"] is None


def test_parse_show():
    props = parse_show("ActiveState=active\nSubState=running\nInvocationID=ab\nNRestarts=0\n")
    assert props == {"ActiveState": "active", "SubState": "running", "InvocationID": "ab", "NRestarts": "0"}


def test_command_output_streams_and_checks_the_exit_status():
    script = ("import sys; out = sys.stdout.buffer; out.write(open(sys.argv[1], 'rb').read().replace("
              "b'No module', b'\\xffNo module')); out.flush(); sys.stderr.write('boom ' * 10000); "
              "sys.exit(int(sys.argv[2]))")
    log = os.path.join(DATA, "gpu-0.22.0-flash-attn-4.log")
    with CommandOutput([sys.executable, "-c", script, log, "0"], "reading test output") as out:
        res = find_root_cause(out)
    assert res["hint_id"] == "flash_attn_ops"
    assert res["cause"].startswith("\ufffdNo module")
    with pytest.raises(SystemdError, match=r"^reading test output failed \(.*, rc=3\): boom boom") as err:
        with CommandOutput([sys.executable, "-c", script, log, "3"], "reading test output") as out:
            find_root_cause(out)
    assert len(str(err.value)) < MAX_VALUE_CHARS + 1000
    with pytest.raises(SystemdError, match="cannot run /nonexistent/journalctl"):
        CommandOutput(["/nonexistent/journalctl"], "reading the journal")


def test_read_unit_journal_streams_bytes():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "0123456789abcdef0123456789abcdef\n", ""

    def stream(argv, what):
        calls.append(argv)
        return io.BytesIO(_raw("cpu-0.32.0-drafter-fc-width-mismatch.log").replace(b"Tried", b"\xffTried"))

    log, info = read_unit_journal(run, "vllm@tiny.service", stream=stream)
    res = find_root_cause(log)
    assert res["hint_id"] == "weight_shape_mismatch"
    assert res["cause"].startswith("\ufffdTried to load weights")
    assert info["invocation_id"] == "0123456789abcdef0123456789abcdef"
    assert "_SYSTEMD_INVOCATION_ID=0123456789abcdef0123456789abcdef" in calls[-1]


def test_read_unit_journal_without_stream_decodes_bytes_with_replacement():
    def run(argv):
        if "InvocationID" in argv:
            return 0, b"0123456789abcdef0123456789abcdef\n", b""
        return 0, b"ok\n\xff bad\n" + b"z" * 9000 + b"\n", b""

    log, _info = read_unit_journal(run, "vllm@tiny.service")
    lines = list(iter_log_lines(log))
    assert lines[:2] == ["ok", "\ufffd bad"]
    assert lines[2].endswith(" [... cut: the line has 9000 bytes]")


@pytest.mark.parametrize("unit", ["", "-u", "--since=yesterday", "a b.service", "x;rm.service", "u\n.service",
                                  "x" * 300, None, 3])
def test_unit_names_are_checked(unit):
    with pytest.raises(SystemdError, match="^unit must be a systemd unit name"):
        check_unit_name(unit)
    with pytest.raises(SystemdError):
        journal_command(unit)


def test_journal_lines_are_checked():
    for bad in (0, -5, 10 ** 9, True, "5"):
        with pytest.raises(SystemdError, match="journal_lines must be an integer from 1 to 1000000"):
            journal_command("vllm@tiny.service", lines=bad)


def test_head_lines_stops_a_long_command_early():
    out = CommandOutput([sys.executable, "-c", "import sys\nfor i in range(10**7): sys.stdout.write('%d\\n' % i)"],
                        "counting")
    with HeadLines(out, 3) as log:
        lines = [log.readline(), log.readline(), log.readline(), log.readline()]
    assert lines == [b"0\n", b"1\n", b"2\n", b""]


# ---- systemctl show ------------------------------------------------------------------------------------

def test_parse_show_with_properties_gives_exactly_those():
    props = parse_show("ActiveState=active\nControlGroup=/system.slice/x.service\nOther=1\nnot a line\n",
                       ("ActiveState", "ControlGroup", "InvocationID"))
    assert props == {"ActiveState": "active", "ControlGroup": "/system.slice/x.service", "InvocationID": ""}
    assert parse_show(b"A=\xff b \n") == {"A": "\ufffd b"}
    assert parse_show(None) == {} and parse_show("", ["A"]) == {"A": ""}


def test_show_asks_for_the_properties_and_checks_the_unit():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "ActiveState=failed\nLoadState=loaded\n", ""

    assert show(run, "vllm@tiny.service", ["ActiveState"]) == {"ActiveState": "failed", "LoadState": "loaded"}
    assert calls[-1] == ["systemctl", "show", "vllm@tiny.service", "--no-pager", "-pActiveState"]
    show(run, "vllm@tiny.service", ["ActiveState"], systemctl="/bin/systemctl", must_exist=True)
    assert calls[-1] == ["/bin/systemctl", "show", "vllm@tiny.service", "--no-pager", "-pActiveState", "-pLoadState"]
    with pytest.raises(SystemdError, match="^unit must be a systemd unit name"):
        show(run, "-x", ["ActiveState"])
    assert len(calls) == 2


def test_show_failures_say_what_failed():
    with pytest.raises(SystemdError, match=r"^systemctl show u.service failed \(rc=1\): Failed to connect to bus"):
        show(lambda argv: (1, "", b"Failed to connect to bus\n"), "u.service", ["ActiveState"])

    def not_found(argv):
        return 0, "ActiveState=inactive\nLoadState=not-found\n", ""

    assert show(not_found, "u.service", ["ActiveState"])["LoadState"] == "not-found"
    with pytest.raises(SystemdError, match=r"^systemd unit u.service not found \(LoadState=not-found\)"):
        show(not_found, "u.service", ["ActiveState"], must_exist=True)


def test_show_value():
    assert show_value(lambda argv: (0, " abc \n", ""), "u.service", "InvocationID") == "abc"
    assert show_value(lambda argv: (1, "abc", "boom"), "u.service", "InvocationID") == ""


@pytest.mark.parametrize("value", ["", "x" * 31, "g" * 32, "0" * 33, None, 5, "0123456789abcdef0123456789abcde\n"])
def test_invocation_ids_are_checked(value):
    with pytest.raises(SystemdError, match="^inv must be a systemd invocation id"):
        check_invocation_id(value, "inv")


# ---- through a module ----------------------------------------------------------------------------------

class _Module(object):
    """What UnitJournal uses of an AnsibleModule, answering from ``answers`` (argv[1:] prefix -> (rc, out, err))."""

    def __init__(self, answers):
        self.answers = answers
        self.calls = []

    def get_bin_path(self, name, required=False):
        return "/usr/bin/" + name

    def run_command(self, argv, environ_update=None, errors=None):
        self.calls.append((argv, environ_update, errors))
        for prefix, answer in self.answers:
            if argv[1:1 + len(prefix)] == prefix:
                return answer
        return 0, "", ""


def test_module_runner_and_unit_journal_state():
    module = _Module([(["show", "vllm@tiny.service"], (0, "ActiveState=active\nLoadState=loaded\n", ""))])
    assert module_runner(module)(["systemctl", "x"]) == (0, "", "")
    assert module.calls[-1] == (["systemctl", "x"], SYSTEMD_ENV, "replace")
    journal = UnitJournal(module, "vllm@tiny.service")
    assert journal.state(["ActiveState"]) == {"ActiveState": "active", "LoadState": "loaded"}
    assert module.calls[-1][0][0] == "/usr/bin/systemctl"
    with pytest.raises(SystemdError, match="^unit must be"):
        UnitJournal(module, "a b")


def test_journal_unavailable():
    stopped = _Module([(["show", "systemd-journald.service"], (0, "ActiveState=inactive\nSubState=dead\n", ""))])
    assert UnitJournal(stopped, "u.service").unavailable() == (
        "systemd-journald.service is inactive/dead, so nothing the unit printed was kept")
    running = _Module([(["show", "systemd-journald.service"], (0, "ActiveState=active\nSubState=running\n", ""))])
    assert UnitJournal(running, "u.service").unavailable() is None
    assert UnitJournal(running, "u.service").unavailable("journalctl failed") == "journalctl failed"
    assert journal_unavailable(lambda argv: (1, "", "no bus")) is None  # systemctl cannot say: taken as it is
