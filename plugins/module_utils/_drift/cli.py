# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The command line of a scheduled drift check (scripts/drift_check.py), as the
# drift_schedule role's unit runs it. Plain Python, stdlib only.

# The environment variable the unit's EnvironmentFile sets from drift_schedule_notify.webhook_url:
# the URL (it carries a token) never appears on the command line.
WEBHOOK_ENV = "DRIFT_WEBHOOK_URL"
# Seconds the drift check leaves itself before systemd's TimeoutStartSec ends the unit (at most half of it,
# so a short timeout still gives the check a positive --timeout of its own).
TIMEOUT_MARGIN = 60
NOTIFY_OUTCOMES = ("drift", "failed", "clean")
# Where the user sets each setting that is not drift_schedule_<setting> itself, for the errors (private_env_names are
# the keys of a mapping).
_PLACES = {"notify_on": "drift_schedule_notify.outcomes", "notify_command": "drift_schedule_notify.command",
           "webhook_url_set": "drift_schedule_notify.webhook_url",
           "private_env_names": "drift_schedule_notify.environment", "timeout_sec": "drift_schedule_timer.timeout_sec"}


def _place(name):
    return _PLACES.get(name, "drift_schedule_" + name)


class DriftCheckCliError(ValueError):
    """A drift_schedule setting that cannot become a command line (the message names it)."""


def _text(name, value, empty=True):
    if not isinstance(value, str):
        raise DriftCheckCliError("%s: expected a string, got %r" % (_place(name), value))
    if not empty and not value.strip():
        raise DriftCheckCliError("%s: expected a non-empty string, got %r" % (_place(name), value))
    return value


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise DriftCheckCliError("%s: expected an integer, got %r" % (_place(name), value))
    return value


def _strings(key, value, empty=False):
    """A list of strings; a string itself is refused (iterating it would make one argument per character)."""
    name = _place(key)
    if isinstance(value, str):
        raise DriftCheckCliError(
            "%s: expected a list of strings, got the string %r (each character would become an "
            "argument): write it as a YAML list, e.g. [%r]" % (name, value, value))
    if not isinstance(value, (list, tuple)):
        raise DriftCheckCliError("%s: expected a list of strings, got %s %r"
                                 % (name, type(value).__name__, value))
    for item in value:
        if not isinstance(item, str) or (not empty and not item.strip()):
            raise DriftCheckCliError("%s: expected a list of non-empty strings, got the item %r in %r"
                                     % (name, item, value))
    return list(value)


def _timeout(value):
    """drift_check.py's --timeout: TimeoutStartSec less the margin, always a whole number >= 1."""
    seconds = _count("timeout_sec", value)
    if seconds < 1:
        raise DriftCheckCliError("%s: expected a positive number of seconds (systemd's TimeoutStartSec= for one "
                                 "check), got %r" % (_place("timeout_sec"), value))
    return seconds - min(TIMEOUT_MARGIN, seconds // 2)


def drift_check_argv(python, script, playbook, report_dir, keep_reports, rotate_artifacts, notify_on,
                     timeout_sec, inventories=(), limit="", tags="", extra_vars=(), vault_password_file="",
                     notify_command="", webhook_url_set=False, private_env_names=()):
    """The argv of scripts/drift_check.py for one schedule; every item a str.

    Types are checked, each error naming its drift_schedule_* variable or dict key (drift_schedule_notify.outcomes,
    drift_schedule_timer.timeout_sec): a list setting given as a string is
    refused (it would be split into one argument per character), ``timeout_sec`` must be a whole number > 0.

    Optional parts appear only when set; ``private_env_names`` (the notify command's
    environment, kept out of reports) are passed sorted, so the unit does not change
    with the order of a mapping.
    """
    timeout = _timeout(timeout_sec)
    notify_on = _strings("notify_on", notify_on)
    for item in notify_on:
        if item not in NOTIFY_OUTCOMES:
            raise DriftCheckCliError("%s: expected items of %s, got %r"
                                     % (_place("notify_on"), ", ".join(NOTIFY_OUTCOMES), item))
    if not isinstance(webhook_url_set, bool):
        raise DriftCheckCliError("%s: expected whether it is set (a boolean), got %r"
                                 % (_place("webhook_url_set"), webhook_url_set))
    argv = [_text("python", python, False), _text("script", script, False),
            "--playbook", _text("playbook", playbook, False)]
    argv += ["--inventory=" + item for item in _strings("inventories", inventories)]
    if limit:
        argv += ["--limit", _text("limit", limit)]
    if tags:
        argv += ["--tags", _text("tags", tags)]
    argv += ["--extra-vars=" + item for item in _strings("extra_vars", extra_vars)]
    if vault_password_file:
        argv += ["--vault-password-file", _text("vault_password_file", vault_password_file)]
    report_dir = _text("report_dir", report_dir, False)
    argv += ["--quiet",
             "--report-dir", report_dir,
             "--keep-reports", str(_count("keep_reports", keep_reports)),
             "--private-data-dir", report_dir + "/runner",
             "--rotate-artifacts", str(_count("rotate_artifacts", rotate_artifacts)),
             "--notify-on", ",".join(notify_on),
             "--timeout", str(timeout)]
    if notify_command:
        argv += ["--notify-command", _text("notify_command", notify_command)]
    if webhook_url_set:
        argv += ["--webhook-url-env", WEBHOOK_ENV]
    argv += ["--private-env=" + name for name in sorted(_strings("private_env_names", private_env_names))]
    return argv


def drift_check_argv_of(settings):
    """drift_check_argv of a mapping of its keywords (the drift_schedule role's settings; the drift_check_argv
    filter), a DriftCheckCliError for anything else."""
    if not isinstance(settings, dict):
        raise DriftCheckCliError("expected a mapping of drift_schedule settings, got %r" % (settings,))
    try:
        return drift_check_argv(**settings)
    except TypeError as exc:
        raise DriftCheckCliError(str(exc))
