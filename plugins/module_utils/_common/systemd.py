# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Reading systemd on the managed node: ``systemctl show`` and one unit's journal (stdlib only).

The one home of "ask systemd about a unit". Callers pass ``run(argv) -> (rc, stdout, stderr)``
(AnsibleModule.run_command through ``module_runner``, subprocess ...), so nothing here imports Ansible;
a journal is streamed (CommandOutput), never held whole in memory.

Names (stable; other files import them):

- ``SystemdError``: a unit name or invocation id that is not one, a systemctl/journalctl that failed,
  a unit that systemd does not know (a ValueError; the message names the option or command).
- ``SYSTEMD_ENV``: the environment systemctl and journalctl run with (C locale, no colour codes).
- ``MAX_JOURNAL_LINES``: the most journal lines one read may ask for; ``MAX_VALUE_CHARS``: the cap on a
  property value (and on a command's error text) returned.
- ``check_unit_name(unit, option="unit")``, ``check_invocation_id(invocation_id, option="invocation_id")``:
  raise SystemdError naming ``option``.
- ``parse_show(text, properties=None)``: ``systemctl show`` output (``A=value`` lines) -> dict; with
  ``properties``, exactly those keys ('' when a line is absent).
- ``show(run, unit, properties, systemctl="systemctl", must_exist=False)``: runs
  ``systemctl show UNIT --no-pager -pA -pB ...`` and returns parse_show()'s dict of what it printed.
- ``show_value(run, unit, prop, systemctl="systemctl")``: one property's value (``--value``), '' when
  systemctl fails.
- ``module_runner(module)``: ``run`` for an AnsibleModule (SYSTEMD_ENV, output decoded with replacement).
- ``journal_command(...)``, ``read_unit_journal(...)``: the argv reading ONE invocation of a unit, and
  reading it (by InvocationID, else since the unit's start).
- ``CommandOutput``, ``HeadLines``: a command's stdout read while it runs; the first N lines of one.
- ``journal_unavailable(run, systemctl="systemctl", read_error=None)``: why a unit's journal cannot hold
  what the unit printed (journald stopped), or None.
- ``UnitJournal(module, unit)``: the above through one module: ``run``, ``state(properties)``, ``open(...)``,
  ``unavailable(...)``.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import io
import os
import re
import subprocess
import tempfile

from ansible_collections.inference.gpu_host.plugins.module_utils._common.result_text import safe_text

__all__ = [
    "SystemdError",
    "SYSTEMD_ENV",
    "MAX_JOURNAL_LINES",
    "MAX_VALUE_CHARS",
    "check_unit_name",
    "check_invocation_id",
    "parse_show",
    "show",
    "show_value",
    "module_runner",
    "journal_command",
    "read_unit_journal",
    "CommandOutput",
    "HeadLines",
    "journal_unavailable",
    "UnitJournal",
]


class SystemdError(ValueError):
    """A bad unit name or invocation id, or systemctl/journalctl failed (the message says which)."""


# The environment of systemctl and journalctl: messages in English, no colour codes in the output.
SYSTEMD_ENV = {"LC_ALL": "C", "SYSTEMD_COLORS": "0"}
JOURNALD_UNIT = "systemd-journald.service"
MAX_JOURNAL_LINES = 1000000
MAX_VALUE_CHARS = 2000
# systemd's unit name characters ("\" for its \x2d escapes); never a leading "-", which systemctl and
# journalctl would read as an option.
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@\\][A-Za-z0-9:_.@\\-]{0,255}$")
_INVOCATION_ID = re.compile(r"^[0-9a-fA-F]{32}$")


def _output_text(out):
    if isinstance(out, (bytes, bytearray)):
        out = bytes(out).decode("utf-8", "replace")
    return safe_text((out or "").strip(), MAX_VALUE_CHARS)


def check_unit_name(unit, option="unit"):
    """Raise SystemdError naming ``option`` unless ``unit`` looks like a systemd unit name."""
    if not isinstance(unit, str) or not _UNIT_NAME.match(unit):
        raise SystemdError("%s must be a systemd unit name such as vllm@tiny.service (letters, digits and :_.@-\\, "
                           "not starting with '-', at most 256 characters), got %r" % (option, safe_text(unit, 300)))


def check_invocation_id(invocation_id, option="invocation_id"):
    """Raise SystemdError naming ``option`` unless ``invocation_id`` is 32 hex digits."""
    if not isinstance(invocation_id, str) or not _INVOCATION_ID.match(invocation_id):
        raise SystemdError("%s must be a systemd invocation id (32 hex digits, as `systemctl show -p InvocationID "
                           "--value UNIT` prints it), got %r" % (option, safe_text(invocation_id, 300)))


def parse_show(text, properties=None):
    """``systemctl show -p A -p B UNIT`` output (``A=value`` lines) -> dict of stripped, capped strings.

    ``properties`` None: every line's property; else exactly these keys, '' for one not printed.
    """
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    props = {} if properties is None else dict((p, "") for p in properties)
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        key = safe_text(key.strip(), 200)
        if sep and (properties is None or key in props):
            props[key] = safe_text(value.strip(), MAX_VALUE_CHARS)
    return props


def show(run, unit, properties, systemctl="systemctl", must_exist=False):
    """The unit's ``properties`` (parse_show() of ``systemctl show UNIT --no-pager -pA -pB ...``).

    SystemdError when systemctl fails, and with ``must_exist`` when systemd does not know the unit
    (``LoadState=not-found``; LoadState is then asked for too).
    """
    check_unit_name(unit)
    properties = list(properties)
    if must_exist and "LoadState" not in properties:
        properties.append("LoadState")
    argv = [systemctl, "show", unit, "--no-pager"] + ["-p%s" % p for p in properties]
    rc, out, err = run(argv)
    if rc != 0:
        raise SystemdError("systemctl show %s failed (rc=%s): %s" % (unit, rc, _output_text(err or out)))
    props = parse_show(out)
    if must_exist and props.get("LoadState") == "not-found":
        raise SystemdError("systemd unit %s not found (LoadState=not-found): check the unit name" % unit)
    return props


def show_value(run, unit, prop, systemctl="systemctl"):
    """One property of the unit (``systemctl show -p PROP --value UNIT``), '' when systemctl fails."""
    rc, out, _err = run([systemctl, "show", "-p", prop, "--value", unit])
    return _output_text(out) if rc == 0 else ""


def module_runner(module):
    """``run(argv)`` for an AnsibleModule: SYSTEMD_ENV, and output decoded with replacement (it may reach
    the result, which must be valid UTF-8)."""
    def run(argv):
        return module.run_command(argv, environ_update=SYSTEMD_ENV, errors="replace")
    return run


def journal_command(unit, invocation_id=None, since=None, lines=5000, journalctl="journalctl", newest=True):
    """argv reading ONE invocation of ``unit`` (its processes' lines and systemd's lines about it).

    With ``invocation_id`` the journal is filtered on it (``_SYSTEMD_INVOCATION_ID`` is set on
    the service's own output, ``INVOCATION_ID`` on systemd's messages about the unit, e.g.
    ``Main process exited, code=killed``); else ``-u unit`` from ``since`` (a journalctl time).
    ``newest``: the last ``lines`` lines (``-n``); False: from the start (the reader stops after
    ``lines`` lines: journalctl has no option for the first N).
    """
    if not unit:
        raise SystemdError("journal_command: a unit name is required")
    check_unit_name(unit)
    if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= MAX_JOURNAL_LINES:
        raise SystemdError("journal_lines must be an integer from 1 to %d, got %r" % (MAX_JOURNAL_LINES, lines))
    argv = [journalctl, "--no-pager", "-q", "-o", "cat"] + (["-n", str(lines)] if newest else [])
    if invocation_id:
        if not _INVOCATION_ID.match(invocation_id):
            raise SystemdError("invocation id %r of unit %s is not 32 hex digits"
                               % (safe_text(invocation_id, 300), unit))
        argv += ["_SYSTEMD_INVOCATION_ID=%s" % invocation_id, "+", "INVOCATION_ID=%s" % invocation_id]
    else:
        argv += ["-u", unit]
        if since:
            argv += ["--since", since]
    return argv


def _as_file(out):
    """What ``run`` returned (str or bytes) as a binary file object, like a streamed journal."""
    if isinstance(out, str):
        out = out.encode("utf-8", "surrogateescape")  # the bytes a surrogateescape decoding came from
    return io.BytesIO(bytes(out or b""))


def read_unit_journal(run, unit, invocation_id=None, since=None, lines=5000,
                      systemctl="systemctl", journalctl="journalctl", stream=None, newest=True):
    """Journal lines of the unit's current/last invocation.

    ``invocation_id`` None: ask systemd for the unit's InvocationID; when it has none (never
    started, or an old systemd), fall back to ``-u unit --since <since or ExecMainStartTimestamp>``.
    Returns ``(log, info)``; info: ``description`` (what was read), ``invocation_id``, ``since``.
    ``log``: a binary file object (read it line by line; with ``newest`` False it ends after ``lines``
    lines): with ``stream`` (``stream(argv, what)`` -> a binary file object such as CommandOutput)
    journalctl's output read while it runs, else the output ``run`` returned.
    """
    check_unit_name(unit)
    if not invocation_id:
        invocation_id = show_value(run, unit, "InvocationID", systemctl) or None
    if not invocation_id and not since:
        ts = show_value(run, unit, "ExecMainStartTimestamp", systemctl)
        if ts and ts.lower() != "n/a":
            since = ts
    argv = journal_command(unit, invocation_id, since, lines, journalctl, newest)
    if invocation_id:
        desc = "journal of %s, invocation %s" % (unit, invocation_id)
    elif since:
        desc = "journal of %s since %s" % (unit, since)
    else:
        desc = "journal of %s (last %d lines)" % (unit, int(lines))
    info = {"description": desc, "invocation_id": invocation_id, "since": since}
    what = "reading the journal of %s" % unit
    if stream is not None:
        log = stream(argv, what)
    else:
        rc, out, err = run(argv)
        if rc != 0:
            raise SystemdError("%s failed (%s, rc=%s): %s" % (what, " ".join(argv), rc, _output_text(err or out)))
        log = _as_file(out)
    return (log if newest else HeadLines(log, lines)), info


class CommandOutput(object):
    """A command's stdout as a binary file object, read while it runs (never whole in memory).

    At the end of the output its exit status is checked: not 0 raises SystemdError saying ``what``
    failed, with the start of its stderr. ``what``: e.g. "reading the journal of vllm@tiny.service".
    """

    def __init__(self, argv, what, environ_update=None):
        env = dict(os.environ)
        env.update(environ_update or {})
        self.argv = list(argv)
        self.what = what
        self._err = tempfile.TemporaryFile()  # a file, not a pipe: a chatty stderr cannot block the command
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=self._err, env=env, close_fds=True)
        except OSError as e:
            self._err.close()
            raise SystemdError("%s failed: cannot run %s: %s" % (what, self.argv[0], e))
        self._done = False

    def readline(self, limit=-1):
        data = self._proc.stdout.readline(limit)
        if not data:
            self.close(check=True)
        return data

    def close(self, check=False):
        if self._done:
            return
        self._done = True
        self._proc.stdout.close()
        rc = self._proc.wait()
        self._err.seek(0)
        err = self._err.read(MAX_VALUE_CHARS).decode("utf-8", "replace").strip()
        self._err.close()
        if check and rc != 0:
            raise SystemdError("%s failed (%s, rc=%s): %s" % (self.what, " ".join(self.argv), rc, err))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class HeadLines(object):
    """The first ``lines`` lines of a binary file object (a CommandOutput), then end of file; closing it
    closes that object (for a command: its stdout, so it ends on its next write)."""

    def __init__(self, fileobj, lines):
        self._f = fileobj
        self._left = lines

    def readline(self, limit=-1):
        if self._left <= 0:
            return b""
        data = self._f.readline(limit)
        if data.endswith(b"\n") or not data:
            self._left -= 1
        return data

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def journal_unavailable(run, systemctl="systemctl", read_error=None):
    """Why the journal cannot hold a unit's output now, or None when it can.

    ``read_error``: the error text of a journalctl that failed (that alone makes the journal
    unavailable). Otherwise journald itself is asked: while it is stopped, nothing a unit prints is
    kept, and journalctl answers "no entries" with exit status 0, which must not read as "the log
    holds nothing". When systemctl cannot say, None: the log is then taken as it is.
    """
    if read_error:
        return safe_text(read_error, MAX_VALUE_CHARS)
    rc, out, _err = run([systemctl, "show", JOURNALD_UNIT, "--no-pager", "-pActiveState", "-pSubState"])
    if rc != 0:
        return None
    props = parse_show(out)
    active = props.get("ActiveState")
    if active and active not in ("active", "reloading"):
        return "%s is %s/%s, so nothing the unit printed was kept" % (JOURNALD_UNIT, active, props.get("SubState"))
    return None


class UnitJournal(object):
    """One unit's state and journal, through a module. ``module``: anything with AnsibleModule's
    ``run_command`` and ``get_bin_path`` (this file imports nothing of Ansible)."""

    def __init__(self, module, unit):
        check_unit_name(unit)
        self.module = module
        self.unit = unit
        self.systemctl = module.get_bin_path("systemctl", required=True)
        self.run = module_runner(module)

    def state(self, properties):
        """show() of the unit's ``properties``; SystemdError when systemd does not know the unit."""
        return show(self.run, self.unit, properties, self.systemctl, must_exist=True)

    def open(self, invocation_id=None, since=None, lines=5000, newest=True):
        """(log, info) as read_unit_journal(), the journal streamed while journalctl runs."""
        journalctl = self.module.get_bin_path("journalctl", required=True)
        return read_unit_journal(self.run, self.unit, invocation_id, since, lines, systemctl=self.systemctl,
                                 journalctl=journalctl, newest=newest,
                                 stream=lambda argv, what: CommandOutput(argv, what, environ_update=SYSTEMD_ENV))

    def unavailable(self, read_error=None):
        """journal_unavailable() through this module: why the journal cannot hold the unit's output, or None."""
        return journal_unavailable(self.run, self.systemctl, read_error)
