# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# The command line of a scheduled drift check (scripts/drift_check.py), as the
# drift_schedule role's unit runs it. Plain Python, stdlib only.

# The environment variable the unit's EnvironmentFile sets from drift_schedule_webhook_url:
# the URL (it carries a token) never appears on the command line.
WEBHOOK_ENV = "DRIFT_WEBHOOK_URL"
# Seconds the drift check leaves itself before systemd's TimeoutStartSec ends the unit.
TIMEOUT_MARGIN = 60


class DriftCheckCliError(ValueError):
    """A drift_schedule setting that cannot become a command line (the message names it)."""


def _text(name, value):
    if not isinstance(value, str):
        raise DriftCheckCliError("drift_schedule_%s: expected a string, got %r" % (name, value))
    return value


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise DriftCheckCliError("drift_schedule_%s: expected an integer, got %r" % (name, value))
    return value


def drift_check_argv(python, script, playbook, report_dir, keep_reports, rotate_artifacts, notify_on,
                     timeout_sec, inventories=(), limit="", tags="", extra_vars=(), vault_password_file="",
                     notify_command="", webhook_url_set=False, private_env_names=()):
    """The argv of scripts/drift_check.py for one schedule; every item a str.

    Optional parts appear only when set; ``private_env_names`` (the notify command's
    environment, kept out of reports) are passed sorted, so the unit does not change
    with the order of a mapping.
    """
    timeout = _count("timeout_sec", timeout_sec) - TIMEOUT_MARGIN
    argv = [_text("python", python), _text("script", script), "--playbook", _text("playbook", playbook)]
    argv += ["--inventory=" + _text("inventories", item) for item in inventories]
    if limit:
        argv += ["--limit", _text("limit", limit)]
    if tags:
        argv += ["--tags", _text("tags", tags)]
    argv += ["--extra-vars=" + _text("extra_vars", item) for item in extra_vars]
    if vault_password_file:
        argv += ["--vault-password-file", _text("vault_password_file", vault_password_file)]
    argv += ["--quiet",
             "--report-dir", _text("report_dir", report_dir),
             "--keep-reports", str(_count("keep_reports", keep_reports)),
             "--private-data-dir", report_dir + "/runner",
             "--rotate-artifacts", str(_count("rotate_artifacts", rotate_artifacts)),
             "--notify-on", ",".join(_text("notify_on", item) for item in notify_on),
             "--timeout", str(timeout)]
    if notify_command:
        argv += ["--notify-command", _text("notify_command", notify_command)]
    if webhook_url_set:
        argv += ["--webhook-url-env", WEBHOOK_ENV]
    argv += ["--private-env=" + _text("notify_environment", name) for name in sorted(private_env_names)]
    return argv
