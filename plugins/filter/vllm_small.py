# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vLLM subsystem's small filters: the unit's quoting, the model files' fingerprint, the versions table.

Each filter's user documentation is its own plugins/filter/<name>.yml (ansible-doc -t filter).
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib

from collections.abc import Iterable, Mapping, Sequence

from ansible.errors import AnsibleFilterError
# The collection's module_utils are imported inside each filter, not here: to find one filter,
# Ansible loads every filter file of the collection, in every task's worker process.


def _systemd_quote(arg):
    """Quote one argument for an ExecStart= line so systemd passes it intact.

    systemd splits on whitespace, honours double quotes with C escapes, expands
    %-specifiers and $VARIABLES: escape all of them (systemd.service(5), "Command lines").
    The result is one double-quoted word: backslash and double quote are
    backslash-escaped, % becomes %% and $ becomes $$; spaces, single quotes,
    semicolons and JSON pass through as they are.

    Refused with AnsibleFilterError (naming the start of the value and what was
    expected): a value holding a newline, carriage return, tab, NUL or any other
    control character (which could end the line and start a new unit directive),
    and a value that is not a string or number (None, a list, a dict), whose
    Python form would reach the command line.
    """
    if arg is None or isinstance(arg, (Mapping, bytes, bytearray)) or (
            isinstance(arg, Sequence) and not isinstance(arg, str)):
        raise AnsibleFilterError(
            "systemd_quote: expected a string or a number for one command-line argument, got %s %s"
            % (type(arg).__name__, _value_start(arg)))
    # One definition of what no unit line may hold, and of the quoting (module_utils/_vllm/unit.py):
    # a newline or CR would end the line and start a new directive (ExecStartPre=), NUL ends it for
    # systemd's reader; such a value is refused rather than escaped.
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.unit import UNSAFE, exec_word
    text = str(arg)
    bad = UNSAFE.search(text)
    if bad:
        raise AnsibleFilterError(
            "systemd_quote: value %s has a control character (U+%04X) at index %d; a systemd command-line "
            "argument must be one line of printable text (no newline, carriage return, tab or NUL)"
            % (_value_start(text), ord(bad.group()), bad.start()))
    return exec_word(text)


def _value_start(value, length=40):
    """The start of a value for an error message, as Python's repr (so control characters show as escapes)."""
    text = repr(value)
    return text if len(text) <= length else text[:length] + "..."


def _systemd_exec(argv):
    """Quote a whole argv for ExecStart= (see systemd_quote): a non-empty list of strings or numbers.

    A string is refused (it would be quoted one character at a time), and so is an
    empty list (an empty ExecStart= resets the unit's command list).
    """
    if isinstance(argv, (str, bytes, Mapping)) or not isinstance(argv, Iterable):
        raise AnsibleFilterError("systemd_exec: expected a non-empty list of arguments (argv), got %s %s"
                                 % (type(argv).__name__, _value_start(argv)))
    args = list(argv)
    if not args:
        raise AnsibleFilterError("systemd_exec: expected a non-empty list of arguments (argv), got an empty list")
    return " ".join(_systemd_quote(a) for a in args)


def _file_fingerprint(files):
    """One string for a set of files from find/stat results (path, size, mtime).

    Multi-GB weights are never hashed on every run: a changed size or mtime is
    what a copy, a re-download or an edit leaves behind.
    """
    rows = []
    for entry in files or []:
        try:
            rows.append("%s\t%d\t%.6f" % (entry["path"], int(entry["size"]), float(entry["mtime"])))
        except (KeyError, TypeError, ValueError):
            raise AnsibleFilterError("file_fingerprint: each entry needs path, size and mtime (got %r)" % (entry,))
    return "sha256:" + hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def _vllm_version_table(version, distribution="vllm"):
    """What the versions table says of a pinned vLLM, read on the controller (no round trip)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError, behaviour, known_problems
    try:
        return {"version": str(version), "distribution": distribution, "behaviour": behaviour(str(version)),
                "known_problems": known_problems(str(version), distribution)}
    except VllmVersionError as exc:
        raise AnsibleFilterError("vllm_version_table: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"systemd_quote": _systemd_quote, "systemd_exec": _systemd_exec, "file_fingerprint": _file_fingerprint, "vllm_version_table": _vllm_version_table}
