# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The host side of the roles' reads and of the run lock, as one module (host_state): in one round trip, the
host's run lock taken or released (host_run_lock's host side) and one role's state read (base, python_env, drafter
or vllm_service: the same function and argument spec as that read's own module, base_host_state and the others).

Why one module: Ansible builds a module's payload on the controller once per module name and run, compiling each
module_utils file the module imports to find its own imports (about 0.2 CPU s a module on the test machine). The
action plugins of base_host_state, python_env_host_state, drafter_host_state, vllm_service_host_state and
host_run_lock run this one module on the host, so a run builds one payload instead of five (BENCHMARKS.md, issue
37); the host imports only the read it runs.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError

READS = ("base", "python_env", "drafter", "vllm_service")

# The lock's options on the host (host_run_lock's; record, takeover and id are set by the action plugin).
LOCK_OPTIONS = dict(
    state=dict(type="str", default="acquired", choices=["acquired", "released"]),
    path=dict(type="path", default="/run/inference-gpu-host/run.lock"),
    timeout=dict(type="int", default=0),
    break_id=dict(type="str", default=""),
    record=dict(type="dict"),
    takeover=dict(type="str", default=""),
    id=dict(type="str", default=""),
)


def _read(name):
    """(argument spec, step) of one read; imported here, so that the host imports only the read it runs."""
    if name == "base":
        from ansible_collections.inference.gpu_host.plugins.module_utils._host import base_state as read
    elif name == "python_env":
        from ansible_collections.inference.gpu_host.plugins.module_utils._venv import state as read
    elif name == "drafter":
        from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import state as read
    else:
        from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import service_state as read
    return read.ARGUMENT_SPEC, read.module_result


def read_spec(name):
    """The argument spec of read ``name`` (its own module's)."""
    return _read(name)[0]


class _Part(object):
    """The AnsibleModule a read takes, with that read's validated options as its params."""

    def __init__(self, module, params):
        self._module = module
        self.params = params

    def __getattr__(self, name):
        return getattr(self._module, name)


def read_options(module, name, raw):
    """The options of read ``name`` checked against its module's spec (the values of its no_log options are masked
    in the result, as its own module masks them); module.fail_json naming that module otherwise."""
    checked = ArgumentSpecValidator(read_spec(name)).validate(raw)
    # AnsibleModule takes them from its own validation result the same way.
    module.no_log_values.update(checked._no_log_values)  # pylint: disable=protected-access
    if checked.error_messages:
        # AnsibleModule's words for an unknown option (the validator gives only the names).
        messages = [("Unsupported parameters: %s" % error.msg) if isinstance(error, UnsupportedError) else error.msg
                    for error in checked.errors.errors]
        module.fail_json(msg="%s_host_state: %s" % (name, "; ".join(messages)))
    return checked.validated_parameters


def _lock_step(module, lock):
    from ansible_collections.inference.gpu_host.plugins.module_utils._host.run_lock import RunLockError, host_step
    try:
        return host_step(lock)
    except RunLockError as exc:
        module.fail_json(msg=str(exc))


def run(module, reads, lock, texts=None):
    """{changed: false, run_lock: <host_run_lock's result>, <read>: <its result>, texts: ...}: the lock first (a read
    asked with a lock runs only once this run holds it), then each read (``reads``: {name: validated options}) and the
    ``texts`` files. module.fail_json on a refused lock or a read that fails; a lock taken stays (the run's release
    removes it)."""
    result = {"changed": False}
    if lock:
        result["run_lock"] = _lock_step(module, lock)
        if lock.get("state") != "released" and not result["run_lock"].get("acquired"):
            # Held by another run: nothing is read; the action plugin waits, or fails naming the holder.
            return result
    for name, options in reads.items():
        result[name] = _read(name)[1](_Part(module, options))
    if texts is not None:
        result["texts"] = read_texts(texts)
    return result


# A record file is a few KiB; the bound keeps a runaway file from filling the result.
MAX_TEXT = 1 << 20


def read_texts(paths):
    """[text, ...] of small text files (the drift check's benchmark records), in their order; "" for one that is
    missing, unreadable or not a regular file (a FIFO is never opened for long, so it cannot block the read)."""
    from ansible_collections.inference.gpu_host.plugins.module_utils._common.files import read_text
    return [read_text(path, MAX_TEXT) for path in paths]


def module_main(module):
    """The host_state module: its reads' options checked (before the lock is taken), then run()."""
    params = module.params
    reads = dict((name, read_options(module, name, params[name])) for name in READS if params.get(name) is not None)
    return run(module, reads, params.get("lock"), params.get("texts"))
