# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The plumbing of every filter file of the collection (private to it: no other collection may import this).

A filter is one module_utils function: ``filters({name: to(module, function, errors)})`` gives the FilterModule's map.
The module is imported on the filter's first call, not when the file loads: to find one filter, Ansible loads every
filter file of the collection, in every task's worker process. The function's input errors (``errors``: names of
exception classes in that module or builtins, space-separated) become an AnsibleFilterError that starts with the
filter's name; any other exception is a bug and is left as it is.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import builtins
import importlib
import inspect

from ansible.errors import AnsibleFilterError

_MODULE_UTILS = "ansible_collections.inference.gpu_host.plugins.module_utils."


def to(module, function, errors, plain=False):
    """One filter's target: ``function`` of module_utils ``module`` (like "_vllm.unit"), the names of its input
    errors, and whether its arguments are copied into plain dicts and lists first (Ansible passes its lazily
    templated containers, which are Mappings and Sequences but not dicts and lists)."""
    return (module, function, tuple(errors.split()), plain)


def message(name, exc):
    """The error's text, starting with the filter's name (once: module_utils may name the filter already)."""
    text = str(exc)
    return text if text.startswith(name + ":") else "%s: %s" % (name, text)


class _Filter(object):
    """A filter: callable like the module_utils function it names, which it imports on its first call."""

    def __init__(self, name, target):
        self.__name__ = self.__qualname__ = name
        self._module, self._function, self._errors, self._plain = target
        self._loaded = None

    def _load(self):
        if self._loaded is None:
            module = importlib.import_module(_MODULE_UTILS + self._module)
            errors = tuple(getattr(module, e, None) or getattr(builtins, e) for e in self._errors)
            self._loaded = (getattr(module, self._function), errors)
        return self._loaded

    @property
    def __signature__(self):
        # What the documentation test compares with the filter's options; only that imports the module early.
        return inspect.signature(self._load()[0])

    def __call__(self, *args, **kwargs):
        function, errors = self._load()
        if self._plain:
            from ansible_collections.inference.gpu_host.plugins.module_utils._common.plain_data import plain
            args = [plain(a) for a in args]
            kwargs = dict((k, plain(v)) for k, v in kwargs.items())
        try:
            return function(*args, **kwargs)
        except errors as exc:
            # The messages name variables and keys, never a secret's value.
            raise AnsibleFilterError(message(self.__name__, exc))


def filters(table):
    """{filter name: filter} of ``table`` ({filter name: to(...)})."""
    return dict((name, _Filter(name, target)) for name, target in table.items())
