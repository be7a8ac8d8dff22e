#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Validate the shipped inventories against the roles' ``meta/argument_specs.yml``.

Every inventory under ``inventories/*/`` (or each ``--inventory DIR``) is loaded
with ansible-core's own InventoryManager, VariableManager and DataLoader, so
variable precedence is Ansible's. Each host's variables that belong to a role
(``<role>_*``, longest role name first) are checked against the ``main`` entry
point of ``roles/<role>/meta/argument_specs.yml`` with ansible-core's
ArgumentSpecValidator, the validator of the ``validate_argument_spec`` action.

Findings (exit 1):
  * a variable with a role's prefix that the role does not document (typo,
    removed or renamed), with the closest documented name;
  * a string (``"yes"``, ``"false"``) or a number where a bool is expected,
    checked on the raw value because Ansible's validator coerces it silently;
    a bool, or a number YAML read differently from its text (``0644``,
    ``0.20``), where a string is expected;
  * a value of the wrong type or not among the choices (Ansible's messages);
  * a precedence conflict: one variable set to different values in two groups
    of the same depth and priority that share a host, which Ansible settles
    silently by group name;
  * a template that refers to an undefined variable with a role's prefix;
  * a role variable set for a role without an argument spec, a role's private
    ``__<role>_*`` variable set in an inventory, a group_vars/host_vars entry
    for a group or host the inventory does not have, an unencrypted vault file;
  * a variable whose prefix is a near miss of a role's (``vllm_servce_api_key``:
    edit distance 1-2 from ``vllm_service``), which no role would read, with the
    role's closest variable;
  * a string (or a number) where a role expects a list or a mapping, checked on
    the raw value because Ansible's validator splits ``"a,b"`` on commas, makes
    ``5`` into ``["5"]`` or parses ``"k=v"`` silently;
  * a control character (a newline, a carriage return, NUL ...) in any string of
    a ``vllm_service_*`` value: those are rendered into the systemd unit and its
    environment file, where a newline would start a directive of its own; and
    whatever module_utils/_vllm/unit.py's check_unit_value (the role's own check of
    what it renders there) refuses;
  * a host defined in two inventory files of one inventory (Ansible merges both
    definitions silently), naming each host variable the files set to different
    values, the values (a credential's masked, a vaulted one never decrypted) and
    the file whose value Ansible takes: it reads an inventory directory's files in
    ASCII order of their names (subdirectories in place), and a later file's host
    variable replaces an earlier one's;
  * a YAML file whose aliases expand past a bound (a "billion laughs" bomb), that
    nests too deep, has more nodes than any inventory needs or is over 4 MiB: it is
    named and that inventory is not loaded at all (loading it would hang).

Templated values are resolved with the host's variables (role defaults below
them, as in a play); one that needs facts or a vault secret is not
type-checked, and ``-v`` says so. Vault-encrypted files are not read. Groups
without hosts are checked through a stand-in host named ``@<group>``.

Only public API is used: ansible-core's, and PyYAML's ``compose`` to read the
text a number was written as back from the YAML file that set it (the winning
group_vars/host_vars file or YAML inventory file); a number set elsewhere (an
INI inventory) is judged by its value alone, so only a float is reported there.
The line and column of a spec file that cannot be read are PyYAML's.

Output: one line per finding, ``inventory:host: variable: message`` (host
``-`` for a finding about an inventory file), then a summary line. Exit 0 when
clean, 1 on findings, 2 on a usage error.

  .venv/bin/python scripts/validate_inventories.py [--inventory DIR]... [--json] [-v]
"""

from __future__ import annotations

import argparse
import copy
import difflib
import importlib.util
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_parser():
    parser = argparse.ArgumentParser(
        description="Validate inventories against the roles' meta/argument_specs.yml (exit 0 clean, 1 findings).")
    parser.add_argument("--inventory", action="append", metavar="DIR",
                        help="an inventory directory (repeatable; default: every directory under inventories/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of lines")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print what was not checked and why (templates that need facts, vaulted files)")
    return parser


# Run by a Python without ansible-core (the machine's python3 in a fresh clone): --help still answers, anything else
# says which Python to use, instead of a traceback.
try:
    import ansible  # noqa: F401  pylint: disable=unused-import
    import yaml  # PyYAML, ansible-core's own YAML library: reads back the text a value was written as
except ImportError as _missing:
    if __name__ != "__main__":
        raise
    build_parser().parse_args()
    sys.stderr.write("validate_inventories.py: needs ansible-core and PyYAML (%s): run it with the dev venv's Python, "
                     ".venv/bin/python scripts/validate_inventories.py (bash scripts/bootstrap.sh makes .venv)\n"
                     % _missing)
    sys.exit(2)

# Read the collection's ansible.cfg wherever this runs from, and never facts
# cached by an earlier playbook run: the result must depend on the repository only.
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))
os.environ["ANSIBLE_CACHE_PLUGIN"] = "memory"

# pylint: disable=wrong-import-position
from ansible.errors import AnsibleError, AnsibleUndefinedVariable, AnsibleValueOmittedError  # noqa: E402
from ansible.inventory.helpers import sort_groups  # noqa: E402
from ansible.inventory.manager import IGNORED, InventoryManager  # noqa: E402
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402
from ansible.module_utils.common.validation import check_type_bool  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.parsing.utils.addresses import parse_address  # noqa: E402
from ansible.parsing.vault import EncryptedString, is_encrypted_file  # noqa: E402
from ansible.plugins.inventory import detect_range, expand_hostname_range  # noqa: E402
from ansible.plugins.loader import init_plugin_loader  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.utils.vars import combine_vars  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402
from ansible.vars.plugins import get_vars_from_inventory_sources  # noqa: E402
# pylint: enable=wrong-import-position

VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")  # what host_group_vars reads
INVENTORY_EXTENSIONS = (".yml", ".yaml", ".json")  # what the yaml inventory plugin reads
VAULT_FILE = re.compile(r"^vault([._-]|$)")
UNDEFINED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)' is undefined")
NODE_PROPERTIES = re.compile(r"^(?:[&!]\S*\s+)+")  # an anchor or tag before a scalar
# YAML read before Ansible reads it: a document whose aliases expand past these bounds is refused, naming the
# file (PyYAML builds aliases as shared references, but everything that walks the values afterwards - merging
# group and host variables, templating - walks every expansion: a 9-level "billion laughs" never finishes).
MAX_YAML_BYTES = 4 * 1024 * 1024
MAX_YAML_NODES = 200000          # nodes as written (an inventory file has hundreds)
MAX_YAML_EXPANSION = 10000       # nodes that exist only by expanding aliases
MAX_YAML_DEPTH = 100             # levels of nesting (Python's own readers recurse per level)
# What the vllm_service role renders into its unit and environment file: no control character may reach them
# (C0, DEL, C1, line and paragraph separators, lone surrogates), as module_utils/_vllm/unit.py refuses them too.
UNIT_PREFIX = "vllm_service_"
CONTROL = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it: the same events


def _is_template(value):
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_is_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_is_template(v) for v in value)
    return False


def _show(value, limit=60):
    """Short, plain rendering of a value for a message."""
    if isinstance(value, EncryptedString):
        return "<vaulted>"
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _closest(name, candidates, cutoff=0.75):
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def edit_distance(a, b, limit):
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def near_miss(name, roles):
    """(role, closest variable) when ``name`` starts with a near miss of a role's prefix (``vllm_servce_api_key``:
    ``vllm_servce`` is 1 edit from ``vllm_service``) and the role has a variable close to what it would then be
    called; (None, None) otherwise. Names with a role's exact prefix never get here (role_of takes them)."""
    if name.startswith(("ansible_", "__")):
        return None, None
    for role in roles:
        if not role.options:
            continue
        limit = 1 if len(role.name) <= 7 else 2  # "base" one edit away is already "case", "bash"
        for cut in range(max(1, len(role.name) - limit), min(len(name) - 1, len(role.name) + limit) + 1):
            if name[cut] != "_" or name[:cut] == role.name:
                continue
            if edit_distance(name[:cut], role.name, limit) <= limit:
                meant = role.name + name[cut:]
                closest = meant if meant in role.options else _closest(meant, role.options, cutoff=0.85)
                if closest:
                    return role, closest
    return None, None


def control_characters(value, path):
    """(path, message) for each string in ``value`` (lists and mappings walked, keys too) holding a control
    character; the message shows the character and where, never the value (it may be a secret)."""
    found = []
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            match = CONTROL.search(item)
            if match:
                found.append((where, "holds the control character %s at position %d: rendered into the systemd unit or "
                                     "its environment file it would end the line and start a directive of its own; "
                                     "remove it" % (ascii(match.group())[1:-1], match.start())))
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append(("%s.%s" % (where, key), key))
                stack.append(("%s.%s" % (where, key), sub))
        elif isinstance(item, (list, tuple)):
            stack.extend(("%s[%d]" % (where, i), sub) for i, sub in enumerate(item))
    return sorted(set(found))


def yaml_bound_problem(text):
    """None when the YAML ``text`` is within the bounds, else what exceeds them (a sentence).

    The text is composed, never constructed: composing is linear in the text (an alias is a reference to the
    node it names), and the size it would have with every alias expanded is counted once per distinct node.
    Text that is not YAML is left to Ansible (None)."""
    if len(text) > MAX_YAML_BYTES:
        return "is %d bytes, over the %d this check reads" % (len(text), MAX_YAML_BYTES)
    try:
        documents = list(yaml.compose_all(text, Loader=_FAST_LOADER))
    except RecursionError:  # PyYAML's pure-Python composer, without libyaml
        return "nests more than %d levels deep" % MAX_YAML_DEPTH
    except (yaml.YAMLError, ValueError):
        return None
    expanded = {}
    for root in documents:
        if root is None:
            continue
        # Post-order walk with an explicit stack (no recursion): size = 1 + the children's expanded sizes.
        stack = [(root, False, 1)]
        on_path = set()
        while stack:
            node, done, depth = stack.pop()
            key = id(node)
            if depth > MAX_YAML_DEPTH:
                return "nests more than %d levels deep" % MAX_YAML_DEPTH
            if done:
                on_path.discard(key)
                children = _children(node)
                expanded[key] = 1 + sum(expanded[id(c)] for c in children)
                continue
            if key in expanded:
                continue
            if key in on_path:
                return "has a recursive alias (a node that contains itself)"
            on_path.add(key)
            stack.append((node, True, depth))
            for child in _children(node):
                if id(child) in on_path:
                    return "has a recursive alias (a node that contains itself)"
                if id(child) not in expanded:
                    stack.append((child, False, depth + 1))
    written = len(expanded)
    if written > MAX_YAML_NODES:
        return "has %d nodes, over the %d any inventory needs" % (written, MAX_YAML_NODES)
    total = sum(expanded[id(root)] for root in documents if root is not None)
    if total - written > MAX_YAML_EXPANSION:
        return ("has aliases that expand to more than %d nodes (%s with every alias expanded, from %d written): a "
                "\"billion laughs\" bomb or an anchor used far too often; write the values out"
                % (MAX_YAML_EXPANSION, "{:,}".format(total) if total < 10 ** 15 else "about 10^%d" % (len(str(total)) - 1),
                   written))
    return None


def _children(node):
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def yaml_file_problem(path):
    """yaml_bound_problem for a file (vault-encrypted or unreadable files: None, left to Ansible)."""
    try:
        if os.path.getsize(path) > MAX_YAML_BYTES:
            return "is %d bytes, over the %d this check reads" % (os.path.getsize(path), MAX_YAML_BYTES)
        with open(path, "rb") as handle:
            if is_encrypted_file(handle):
                return None
            handle.seek(0)
            data = handle.read(MAX_YAML_BYTES + 1)
    except OSError:
        return None
    return yaml_bound_problem(data.decode("utf-8", errors="replace"))


class Role:
    """A role's documented options (``main`` entry point) and its defaults."""

    def __init__(self, loader, path):
        self.name = os.path.basename(path)
        self.options = None
        self.spec_problem = None
        self.defaults = {}
        spec_file = None
        # Ansible reads meta/argument_specs.yml, else an argument_specs key in meta/main.yml.
        for base in ("argument_specs", "main"):
            for ext in (".yml", ".yaml"):
                candidate = os.path.join(path, "meta", base + ext)
                if spec_file is None and os.path.isfile(candidate):
                    if base == "main" and not self._has_specs(candidate):
                        continue
                    spec_file = candidate
        rel = os.path.relpath(spec_file or os.path.join(path, "meta", "argument_specs.yml"), ROOT)
        if spec_file is None:
            self.spec_problem = "role %s has no %s: its variables cannot be validated" % (self.name, rel)
        else:
            try:
                data = loader.load_from_file(spec_file, cache="none") or {}
                entry = (data.get("argument_specs") or {}).get("main")
                if not isinstance(entry, dict):
                    self.spec_problem = "role %s has no 'main' entry point in %s" % (self.name, rel)
                else:
                    self.options = dict(entry.get("options") or {})
            except (AnsibleError, AttributeError) as exc:
                at = yaml_error_position(spec_file)
                self.spec_problem = "role %s: %s cannot be read%s: %s" % (self.name, rel, at, str(exc).splitlines()[0])
        # The role's renamed variables (vars/main.yml __<role>_renamed: old name -> new place).
        self.renamed = {}
        try:
            for found in loader.find_vars_files(os.path.join(path, "vars"), "main"):
                table = (loader.load_from_file(found, cache="none") or {}).get("__%s_renamed" % self.name)
                self.renamed.update(table if isinstance(table, dict) else {})
        except AnsibleError:
            self.renamed = {}
        try:
            for found in loader.find_vars_files(os.path.join(path, "defaults"), "main"):
                self.defaults = combine_vars(self.defaults, loader.load_from_file(found, trusted_as_template=True) or {})
        except AnsibleError:
            self.defaults = {}  # a role being written: templates fall back to inventory values

    @staticmethod
    def _has_specs(meta_main):
        with open(meta_main, encoding="utf-8", errors="replace") as handle:
            return re.search(r"^argument_specs:", handle.read(), re.M) is not None


def load_roles(loader):
    roles_dir = os.path.join(ROOT, "roles")
    names = sorted(os.listdir(roles_dir)) if os.path.isdir(roles_dir) else []
    roles = [Role(loader, os.path.join(roles_dir, name)) for name in names if os.path.isdir(os.path.join(roles_dir, name))]
    # Longest name first, so a role named like another's prefix cannot claim its variables.
    return sorted(roles, key=lambda r: (-len(r.name), r.name))


def role_of(name, roles):
    """(role, private) for a variable name, (None, False) when no role's prefix matches."""
    private = name.startswith("__")
    bare = name[2:] if private else name
    for role in roles:
        if bare.startswith(role.name + "_"):
            return role, private
    return None, False


class _Loader(DataLoader):
    """DataLoader that skips vault-encrypted files instead of failing without a secret."""

    def __init__(self):
        super().__init__()
        self.vaulted = set()

    def load_from_file(self, file_name, *args, **kwargs):  # pylint: disable=arguments-differ
        path = self.path_dwim(file_name)
        try:
            with open(path, "rb") as handle:
                encrypted = is_encrypted_file(handle)
        except OSError:
            encrypted = False
        if encrypted:
            self.vaulted.add(path)
            return {}
        return super().load_from_file(file_name, *args, **kwargs)


def _redaction():
    """module_utils/_common/redaction.py (standard library only), loaded from this checkout by its path: the one home
    of what counts as a credential, with or without the collection on the Python path."""
    path = os.path.join(ROOT, "plugins", "module_utils", "_common", "redaction.py")
    spec = importlib.util.spec_from_file_location("_igh_redaction", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REDACTION = _redaction()
# Variables every inventory source sets on its hosts (InventoryData.add_host): never a difference of their own.
SOURCE_VARIABLES = ("inventory_file", "inventory_dir")


def _comparable(value):
    """A value with each vaulted string replaced by its ciphertext: compared without a vault secret."""
    if isinstance(value, EncryptedString):
        return ("<vaulted>", value._ciphertext)  # pylint: disable=protected-access
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_comparable(item) for item in value]
    return value


def _unvaulted(value):
    if isinstance(value, EncryptedString):
        return "<vaulted>"
    if isinstance(value, dict):
        return {key: _unvaulted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unvaulted(item) for item in value]
    return value


def show_secret_safe(name, value):
    """_show for a value a message names: a variable named like a credential is masked whole, a vaulted value is
    <vaulted>, and credentials inside (an --api-key in a list, a token-named key) are masked as redaction.py masks
    every report."""
    if REDACTION.CREDENTIAL_NAME.search(name) and not isinstance(value, EncryptedString):
        return json.dumps(REDACTION.MASK)
    return _show(REDACTION.redact_data(_unvaulted(value)))


def host_differences(definitions):
    """The host variables that the files defining one host set to different values.

    ``definitions``: (file, {variable: value}) in the order Ansible reads the files. Returns one dict per differing
    variable, by name: {"variable", "values": [(file, value)...] in read order, "winner": the last file that sets it}
    (the inventory's host replaces a variable each time a later file sets it: Host.set_variable)."""
    setters = {}
    for path, variables in definitions:
        for name, value in variables.items():
            if name not in SOURCE_VARIABLES:
                setters.setdefault(name, []).append((path, value))
    found = []
    for name in sorted(setters):
        values = setters[name]
        if len(values) > 1 and any(_comparable(v) != _comparable(values[0][1]) for _p, v in values[1:]):
            found.append({"variable": name, "values": values, "winner": values[-1][0]})
    return found


class Report:
    def __init__(self):
        self.findings = []
        self.notes = []
        self.checked = 0
        self.skipped = 0
        self.hosts = 0
        self.inventories = 0

    @staticmethod
    def _entry(inventory, host, variable, kind, message, source, details=None):
        entry = {"inventory": inventory, "host": host, "variable": variable, "kind": kind,
                 "message": message, "source": source}
        if details is not None:
            entry["details"] = details
        return entry

    def finding(self, inventory, host, variable, kind, message, source=None, details=None):
        entry = self._entry(inventory, host, variable, kind, message, source, details)
        if entry not in self.findings:
            self.findings.append(entry)

    def note(self, inventory, host, variable, kind, message, source=None):
        self.notes.append(self._entry(inventory, host, variable, kind, message, source))


class _TagTolerantLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """PyYAML's SafeLoader that accepts Ansible's own tags: it finds where else loading fails."""


for _tag in ("!unsafe", "!vault", "!vault-encrypted"):
    _TagTolerantLoader.add_constructor(_tag, lambda loader, node: None)


def yaml_error_position(path):
    """`` (line L, column C)`` where PyYAML stops reading ``path`` (a syntax error, or a
    mapping key Ansible cannot use such as an unquoted ``{{ }}``), "" when it reads."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            yaml.load(handle.read(), Loader=_TagTolerantLoader)  # nosec B506: a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return " (line %d, column %d)" % (mark.line + 1, mark.column + 1)
    except (OSError, yaml.YAMLError):
        pass
    return ""


def _same_number(found, value):
    """Whether YAML's reading of a node is the value Ansible holds (type and value)."""
    if _number_type(found) != _number_type(value):
        return False
    return repr(float(found)) == repr(float(value)) if isinstance(value, float) else found == value


class SourceText:
    """The YAML text of a scalar, to tell ``0644`` or ``0.20`` from what YAML made of it.

    Ansible's loaded variables do not say (in public API) where a value was
    written, so the files that set a host's variables are read again with
    PyYAML's ``compose``: its nodes keep their marks, and the text between a
    scalar's start and end mark is what was written. Places are searched the way
    Ansible applies them, last applied first; the first that holds the variable
    path (``name``, ``[index]``, ``.key``) is the one whose value won, and its
    text counts only when YAML reads it as the very value Ansible holds, so a
    value that came from anywhere else (an INI inventory, a vars plugin) falls
    back to the value alone."""

    def __init__(self):
        self._documents = {}
        self._inventories = {}

    def document(self, path):
        """(text, root node) of a YAML file, (None, None) when it cannot be read as one document."""
        if path not in self._documents:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    text = handle.read()
                self._documents[path] = (text, yaml.compose(text, Loader=yaml.SafeLoader))
            except (OSError, yaml.YAMLError):
                self._documents[path] = (None, None)
        return self._documents[path]

    def vars_file_places(self, paths):
        """Places of the vars files of one group or host (``find_vars_files`` order)."""
        places = []
        for path in paths:
            text, node = self.document(path)
            if node is not None:
                places.append((text, node))
        return places

    def inventory_places(self, directory, kind, name):
        """Places in the YAML inventory files of ``directory`` that set variables of
        one group (``kind`` "group": its ``vars:``) or host (``kind`` "host": its
        entry under ``hosts:``), in the order the yaml inventory plugin reads them."""
        if directory not in self._inventories:
            found = {}
            for path in _inventory_files(directory):
                text, root = self.document(path)
                if isinstance(root, yaml.MappingNode):
                    for key, value in root.value:
                        self._walk_group(text, key, value, found)
            self._inventories[directory] = found
        return self._inventories[directory].get((kind, name), [])

    def _walk_group(self, text, key, group, found):
        if not isinstance(key, yaml.ScalarNode) or not isinstance(group, yaml.MappingNode):
            return
        for section, body in group.value:
            if not isinstance(section, yaml.ScalarNode) or not isinstance(body, yaml.MappingNode):
                continue
            if section.value == "vars":
                found.setdefault(("group", key.value), []).append((text, body))
            elif section.value == "children":
                for child, child_body in body.value:
                    self._walk_group(text, child, child_body, found)
            elif section.value == "hosts":
                for pattern, host_vars in body.value:
                    if isinstance(pattern, yaml.ScalarNode) and isinstance(host_vars, yaml.MappingNode):
                        for host in _host_names(pattern.value):
                            found.setdefault(("host", host), []).append((text, host_vars))

    @staticmethod
    def child(node, key):
        """The node at a mapping key or sequence index (the last of duplicate keys, as YAML
        loaders keep; keys merged in with ``<<`` after the mapping's own), or None."""
        if isinstance(node, yaml.SequenceNode):
            return node.value[key] if isinstance(key, int) and 0 <= key < len(node.value) else None
        if not isinstance(node, yaml.MappingNode) or isinstance(key, int):
            return None
        merged = []
        for key_node, value_node in reversed(node.value):
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:merge":
                merged.extend(value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node])
            elif isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return value_node
        for source in merged:
            found = SourceText.child(source, key)
            if found is not None:
                return found
        return None

    @staticmethod
    def text_in(places, keys, value):
        """The text written for ``value`` at ``keys`` (variable name, then list indexes and
        dict keys) in ``places`` ((text, node) pairs, last applied first), or None."""
        for text, node in places:
            for key in keys:
                node = SourceText.child(node, key)
                if node is None:
                    break
            if node is None:
                continue
            if not isinstance(node, yaml.ScalarNode):
                return None
            try:
                found = yaml.SafeLoader("").construct_object(node)
            except (yaml.YAMLError, ValueError, TypeError):  # PyYAML raises ValueError for 0x_
                return None
            if not _same_number(found, value):
                return None
            return NODE_PROPERTIES.sub("", text[node.start_mark.index:node.end_mark.index])
        return None


class HostSource:
    """SourceText for one host: ``of(keys, value)`` searches the host's places."""

    def __init__(self, source_text, places):
        self.source_text = source_text
        self.places = places

    def of(self, keys, value):
        return self.source_text.text_in(self.places, keys, value)


def _host_names(pattern):
    """Hosts a YAML inventory's host key names (``node[01:04]`` is four), as its plugin expands it."""
    try:
        pattern = parse_address(pattern, allow_ranges=True)[0]
    except Exception:  # pylint: disable=broad-except  # the plugin keeps such a key as it is, so do we
        pass
    try:
        return expand_hostname_range(pattern) if detect_range(pattern) else [pattern]
    except Exception:  # pylint: disable=broad-except  # not a range after all
        return [pattern]


def _inventory_files(directory):
    """The YAML files an inventory directory's sources are read from, in InventoryManager's order."""
    found = []
    for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        full = os.path.join(directory, entry)
        if entry.startswith(".") or entry in ("group_vars", "host_vars"):
            continue
        if os.path.isdir(full):
            found.extend(_inventory_files(full))
        elif os.path.splitext(entry)[1] in INVENTORY_EXTENSIONS:
            found.append(full)
    return found


def literal_problems(spec, value, path, source_text, templated=False, keys=None):
    """Values Ansible's validator would coerce silently: a string or number for a bool,
    a bool or a reinterpreted number for a string. ``templated``: only the bool part,
    on a template's result. ``source_text.of(keys, value)`` gives the text a number was
    written as (None when unknown); ``keys`` leads to ``value`` (default: ``path``, the
    variable's name). Returns (path, message) pairs; path names the item inside a list or dict."""
    keys = (path,) if keys is None else keys
    wanted = spec.get("type") or "str"  # the validator's default type
    problems = []
    if value is None or isinstance(value, EncryptedString) or (not templated and _is_template(value)):
        return problems
    if isinstance(value, bool) and wanted in ("list", "dict"):
        problems.append((path, "expected a %s, %s the boolean %s" % ("list" if wanted == "list" else "mapping",
                                                                     "templates to" if templated else "got",
                                                                     str(value).lower())))
    elif wanted == "bool" and not isinstance(value, bool):
        if isinstance(value, str):
            try:
                coerced = "would silently read it as %s" % str(check_type_bool(value)).lower()
            except TypeError:
                coerced = "cannot read it as a boolean"
            what = "templates to" if templated else "got"
            problems.append((path, 'expected a boolean, %s the string "%s": Ansible %s; write true or false '
                             "without quotes" % (what, value, coerced)))
        elif isinstance(value, (int, float)):
            problems.append((path, "expected a boolean, %s the number %s: write true or false"
                             % ("templates to" if templated else "got", value)))
    elif wanted in ("str", "path") and not templated and not isinstance(value, str):
        if isinstance(value, bool):
            problems.append((path, 'expected a string, got the boolean %s (YAML reads unquoted yes/no/true/false '
                             'as booleans; Ansible would pass "%s"): quote it' % (str(value).lower(), value)))
        elif isinstance(value, (int, float)):
            text = source_text.of(keys, value)
            if (text is None and isinstance(value, float)) or (text is not None and text != str(value)):
                shown = text if text is not None else value
                problems.append((path, 'expected a string, YAML read %s as the %s %s (Ansible would pass "%s"): quote it'
                                 % (shown, _number_type(value), value, value)))
    elif wanted == "list" and not isinstance(value, list) and isinstance(value, (str, int, float)):
        # Ansible's validator would not refuse these: check_type_list splits a string on commas, wraps a number.
        what = "templates to" if templated else "got"
        if isinstance(value, str):
            problems.append((path, "expected a list, %s the string %s: Ansible would silently split it on commas into "
                             "%s; write a YAML list" % (what, _show(value), _show(value.split(",")))))
        else:
            problems.append((path, "expected a list, %s the %s %s: Ansible would silently make it [\"%s\"]; write a "
                             "YAML list" % (what, _number_type(value), value, value)))
    elif wanted == "dict" and isinstance(value, str):
        # check_type_dict parses "k=v, k2=v2" and JSON text silently.
        problems.append((path, "expected a mapping, %s the string %s: Ansible would silently parse it as JSON or "
                         "key=value pairs; write a YAML mapping" % ("templates to" if templated else "got", _show(value))))
    elif wanted == "list" and isinstance(value, list) and spec.get("elements"):
        element_spec = {"type": spec["elements"], "options": spec.get("options")}
        for index, item in enumerate(value):
            problems.extend(literal_problems(element_spec, item, "%s[%d]" % (path, index), source_text, templated,
                                             keys + (index,)))
    elif wanted == "dict" and isinstance(value, dict) and isinstance(spec.get("options"), dict):
        for key, sub_spec in spec["options"].items():
            if key in value:
                problems.extend(literal_problems(sub_spec or {}, value[key], "%s.%s" % (path, key), source_text,
                                                 templated, keys + (key,)))
    return problems


def _number_type(value):
    for base in (bool, int, float):
        if isinstance(value, base):
            return base.__name__
    return type(value).__name__


def _unit_checker():
    """module_utils/_vllm/unit.py's own check of a value rendered into the unit, when this checkout has it
    (check_unit_value(variable, value) -> None or the message), else None and the control-character check here."""
    try:
        from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import unit as vllm_unit  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return getattr(vllm_unit, "check_unit_value", None)


def unit_value_problems(name, value):
    """(path, message) pairs for a vllm_service_* value that must not reach the unit as it is."""
    found = control_characters(value, name)
    checker = _unit_checker()
    if checker is not None and not found:
        try:
            message = checker(name, value)
        except Exception as exc:  # pylint: disable=broad-except  # its own error is its message
            message = str(exc)
        if message:
            # Its messages start with the variable's name, which the finding's line already gives.
            found.append((name, message[len(name) + 2:] if message.startswith(name + ": ") else message))
    return found


class InventoryCheck:
    """Loads one inventory directory the way ``ansible-playbook -i DIR`` does and checks it."""

    def __init__(self, path, roles, report, source_text):
        self.path = os.path.normpath(path)
        self.name = os.path.basename(self.path)
        self.roles = roles
        self.report = report
        self.source_text = source_text
        self.loader = _Loader()
        # Playbook-adjacent group_vars would come from the root site.yml's directory.
        self.loader.set_basedir(ROOT)
        self.role_defaults = {}
        for role in sorted(roles, key=lambda r: r.name):
            self.role_defaults = combine_vars(self.role_defaults, role.defaults)
        self.inventory = None
        self.variables = None
        self._own = {}

    def run(self):
        self.report.inventories += 1
        if self.check_yaml_bounds():
            return  # Ansible's loader would hang on it: nothing of this inventory is loaded
        try:
            self.inventory = InventoryManager(loader=self.loader, sources=[self.path])
            self.variables = VariableManager(loader=self.loader, inventory=self.inventory)
        except AnsibleError as exc:
            self.report.finding(self.name, "-", "-", "inventory_error", "cannot be loaded: %s" % exc)
            return
        hosts = list(self.inventory.hosts.values())
        if not hosts:
            self.report.finding(self.name, "-", os.path.basename(self.path), "inventory_error",
                                "no hosts: the inventory could not be parsed (see Ansible's warnings above)")
        self.check_vars_files()
        self.check_hosts_in_two_files()
        try:
            for host in hosts:
                self.check_host(host, host.name, pseudo=False)
            # Groups kept for later hosts (another GPU class): check their own variables now.
            for group in list(self.inventory.groups.values()):
                if group.name in ("all", "ungrouped") or group.get_hosts() or not self.own_vars(group):
                    continue
                stand_in = "@" + group.name
                self.inventory.add_host(stand_in, group=group.name)
                self.check_host(self.inventory.get_host(stand_in), stand_in, pseudo=True)
        except AnsibleError as exc:
            self.report.finding(self.name, "-", "-", "inventory_error", "variables cannot be loaded: %s" % exc)
        for path in sorted(self.loader.vaulted):
            self.report.note(self.name, "-", os.path.relpath(path, self.path), "vaulted_file",
                             "vault-encrypted, not read (no vault secret here): the variables it sets are not checked")

    # -- YAML bombs, hosts defined twice ------------------------------------------------

    def _files(self):
        """Every file under the inventory that Ansible may read as YAML (sources, group_vars, host_vars)."""
        for folder, dirs, files in os.walk(self.path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for entry in sorted(files):
                if not entry.startswith(".") and os.path.splitext(entry)[1] in VARS_EXTENSIONS:
                    yield os.path.join(folder, entry)

    def check_yaml_bounds(self):
        """Refuse (naming each) the YAML files whose aliases or size would make loading them hang; True if any."""
        bad = False
        for path in self._files():
            problem = yaml_file_problem(path)
            if problem:
                bad = True
                self.report.finding(self.name, "-", os.path.relpath(path, self.path), "yaml_bound",
                                    "%s %s: refused before Ansible reads it, and this inventory is not loaded"
                                    % (os.path.relpath(path, self.path), problem))
        return bad

    def _source_files(self, directory):
        """The files InventoryManager reads as inventory sources in ``directory``, in its order."""
        found = []
        for entry in sorted(os.listdir(directory)):
            if IGNORED.search(entry.encode("utf-8", "surrogateescape")):
                continue
            full = os.path.join(directory, entry)
            found += self._source_files(full) if os.path.isdir(full) else [full]
        return found

    def check_hosts_in_two_files(self):
        """A host defined in two inventory files: Ansible merges the definitions (groups and variables of both,
        the later file winning) without a word, so what the host gets is set in two places. Each host variable
        the files set differently is named, with the values and the file Ansible takes it from."""
        where = {}
        for path in self._source_files(self.path):  # Ansible's read order
            try:
                hosts = InventoryManager(loader=_Loader(), sources=[path]).hosts
            except AnsibleError:
                continue  # reported by the whole inventory's load
            for name, host in hosts.items():
                where.setdefault(name, []).append((os.path.relpath(path, self.path), dict(host.vars)))
        for name, definitions in sorted(where.items()):
            if len(definitions) < 2:
                continue
            files = [path for path, _vars in definitions]
            differences = host_differences(definitions)
            said, details = [], []
            for diff in differences:
                taken = self._taken(name, diff)
                shown = ", ".join("%s %s" % (path, show_secret_safe(diff["variable"], value))
                                  for path, value in diff["values"])
                said.append("%s (%s: %s)" % (diff["variable"], shown, taken))
                details.append({"variable": diff["variable"], "winner": diff["winner"], "taken": taken,
                                "values": [[path, show_secret_safe(diff["variable"], value)]
                                           for path, value in diff["values"]]})
            differ = ("; the host variables that differ: %s (Ansible reads an inventory directory's files in ASCII "
                      "order of their names, a later file's host variable replacing an earlier one's)"
                      % ", ".join(said)) if said else ""
            self.report.finding(self.name, name, "-", "host_in_two_files",
                                "defined in %s: Ansible merges the definitions silently (groups and variables "
                                "of each, the later file winning)%s; define the host in one file"
                                % (" and ".join(files), differ), details=details or None)

    def _taken(self, host_name, diff):
        """Which value the whole inventory gives the host: the last file's (read order), unless host_vars/ sets it
        too (above every inventory file's host variables), or hash_behaviour=merge merges the files' mappings."""
        read_order = "Ansible takes %s's" % diff["winner"]
        host = self.inventory.get_host(host_name) if self.inventory is not None else None
        if host is None:
            return read_order
        try:
            label = None
            for source, _entity, values, _from_files in self._layers(host):
                if diff["variable"] in values:
                    label = source
            value = self.variables.get_vars(host=host, include_hostvars=False).get(diff["variable"])
        except AnsibleError:
            return read_order
        if label is not None and not label.startswith("inventory file"):
            return "Ansible takes neither: %s sets it, above every inventory file's host variables" % label
        if _comparable(value) == _comparable(diff["values"][-1][1]):
            return read_order
        return "Ansible merges them (hash_behaviour=merge) into %s" % show_secret_safe(diff["variable"], value)

    # -- files Ansible would silently ignore or that leak secrets ------------------------

    def check_vars_files(self):
        for subdir, names, kind in (("group_vars", set(self.inventory.groups), "group"),
                                    ("host_vars", set(self.inventory.hosts), "host")):
            top = os.path.join(self.path, subdir)
            if not os.path.isdir(top):
                continue
            for entry in sorted(os.listdir(top)):
                if entry.startswith(".") or entry.endswith("~"):
                    continue
                full = os.path.join(top, entry)
                stem, ext = os.path.splitext(entry)
                if os.path.isdir(full):
                    name = entry
                elif ext in VARS_EXTENSIONS:
                    name = stem
                else:
                    continue  # e.g. vault.yml.example: Ansible does not read it either
                if name not in names:
                    hint = _closest(name, names)
                    self.report.finding(self.name, "-", "%s/%s" % (subdir, entry), "orphan_vars_file",
                                        "no %s named %s in this inventory, so Ansible never reads it%s"
                                        % (kind, name, " (did you mean %s?)" % hint if hint else ""))
            for folder, _dirs, files in os.walk(top):
                for entry in sorted(files):
                    stem, ext = os.path.splitext(entry)
                    if not VAULT_FILE.match(entry) or ext not in VARS_EXTENSIONS:
                        continue
                    full = os.path.join(folder, entry)
                    with open(full, "rb") as handle:
                        if is_encrypted_file(handle):
                            continue
                    self.report.finding(self.name, "-", os.path.relpath(full, self.path), "plaintext_vault",
                                        "is not vault-encrypted: encrypt it (ansible-vault encrypt --vault-id <id>@prompt %s) "
                                        "before it is shared" % os.path.relpath(full, self.path))

    # -- where each value comes from ------------------------------------------------------

    def own_vars(self, entity):
        """Variables one group or host sets itself: inventory-file vars, then its vars files."""
        key = (entity.__class__.__name__, entity.name)
        if key not in self._own:
            inline = dict(entity.vars)
            files = get_vars_from_inventory_sources(self.loader, [self.path], [entity], "task")
            self._own[key] = (inline, files)
        return combine_vars(*self._own[key])

    def _layers(self, host):
        """(label, entity, vars, from_files) in the order VariableManager applies them (later wins);
        from_files: the entity's group_vars/host_vars files, else the inventory file's vars."""
        groups = sort_groups(host.get_groups())
        all_group = [g for g in groups if g.name == "all"]
        others = [g for g in groups if g.name != "all"]
        layers = []
        for group in all_group:
            self.own_vars(group)
            inline, files = self._own[("Group", group.name)]
            layers += [("inventory file, group all", group, inline, False), ("group_vars/all", group, files, True)]
        for group in others:
            self.own_vars(group)
            layers.append(("inventory file, group %s" % group.name, group, self._own[("Group", group.name)][0], False))
        for group in others:
            layers.append(("group_vars/%s" % group.name, group, self._own[("Group", group.name)][1], True))
        self.own_vars(host)
        inline, files = self._own[("Host", host.name)]
        layers += [("inventory file, host %s" % host.name, host, inline, False),
                   ("host_vars/%s" % host.name, host, files, True)]
        return layers

    def _places(self, layers):
        """The YAML mappings that set a host's variables, last applied first (for SourceText)."""
        places = []
        for _label, entity, _values, from_files in reversed(layers):
            kind = "host" if entity.__class__.__name__ == "Host" else "group"
            if from_files:
                found = self.loader.find_vars_files(os.path.join(self.path, kind + "_vars"), entity.name)
                places += reversed(self.source_text.vars_file_places(found))
            else:
                places += reversed(self.source_text.inventory_places(self.path, kind, entity.name))
        return HostSource(self.source_text, places)

    # -- one host -------------------------------------------------------------------------

    def check_host(self, host, label, pseudo):
        layers = self._layers(host)
        winner = {}
        for source, entity, values, _from_files in layers:
            for name in values:
                winner[name] = (source, entity)
        if pseudo:
            # Report only what no real host of this inventory gets checked through.
            def unchecked(name):
                entity = winner.get(name, (None, None))[1]
                return entity is not None and (entity is host or not entity.get_hosts() or
                                               entity.get_hosts() == [host])
        else:
            self.report.hosts += 1
            self.check_conflicts(host, label, winner)

            def unchecked(name):  # pylint: disable=unused-argument
                return True

        host_vars = self.variables.get_vars(host=host, include_hostvars=False)
        source_text = self._places(layers)
        templar = Templar(loader=self.loader, variables=combine_vars(self.role_defaults, host_vars))
        for name in sorted(host_vars):
            role, private = role_of(name, self.roles)
            if role is None and name in winner and unchecked(name):
                self.check_near_miss(label, name, winner[name][0])
            if role is None or not unchecked(name):
                continue
            self.check_variable(label, name, host_vars[name], role, private, templar,
                                winner.get(name, ("?", None))[0], source_text)

    def check_near_miss(self, label, name, source):
        role, closest = near_miss(name, self.roles)
        if role is not None:
            self.report.finding(self.name, label, name, "near_miss_prefix",
                                "no role reads it: its prefix is a near miss of role %s's (%s_); did you mean %s? "
                                "(set in %s)" % (role.name, role.name, closest, source), source)

    def check_conflicts(self, host, label, winner):
        by_level = {}
        for group in host.get_groups():
            if group.name != "all":
                by_level.setdefault((group.depth, group.priority), []).append(group)
        for (depth, _priority), groups in sorted(by_level.items()):
            if len(groups) < 2:
                continue
            groups = sort_groups(groups)
            names = set()
            for group in groups:
                names.update(self.own_vars(group))
            for name in sorted(names):
                setters = [(g, self.own_vars(g)[name]) for g in groups if name in self.own_vars(g)]
                if len(setters) < 2 or all(value == setters[0][1] for _g, value in setters[1:]):
                    continue
                shown = ", ".join("%s (%s)" % (g.name, show_secret_safe(name, value)) for g, value in setters)
                source, entity = winner.get(name, (None, None))
                if entity in [g for g, _value in setters]:
                    self.report.finding(
                        self.name, label, name, "precedence_conflict",
                        "set to different values in groups %s, at the same depth (%d) and priority: Ansible "
                        "silently takes %s's (it orders such groups by name); set it in one of them only, in "
                        "host_vars, or give the groups different ansible_group_priority" % (shown, depth, entity.name),
                        source)
                else:
                    self.report.note(self.name, label, name, "masked_conflict",
                                     "set to different values in groups %s at depth %d, but %s overrides both"
                                     % (shown, depth, source), source)

    def check_variable(self, label, name, value, role, private, templar, source, source_text):
        report = self.report
        where = " (set in %s)" % source
        if private:
            report.finding(self.name, label, name, "private_variable",
                           "is private to role %s (__%s_*): an inventory must not set it%s" % (role.name, role.name, where),
                           source)
            return
        if role.options is None:
            report.finding(self.name, label, name, "no_argument_specs", "%s%s" % (role.spec_problem, where), source)
            return
        spec = role.options.get(name)
        if spec is None and name in role.renamed:
            report.finding(self.name, label, name, "renamed_variable",
                           "role %s no longer reads it: renamed (changelog, breaking changes): %s is now %s%s"
                           % (role.name, name, role.renamed[name], where), source)
            return
        if spec is None:
            hint = _closest(name, role.options)
            report.finding(self.name, label, name, "unknown_variable",
                           "role %s has no such variable (typo, removed or renamed?)%s%s"
                           % (role.name, "; did you mean %s?" % hint if hint else
                              "; see roles/%s/meta/argument_specs.yml" % role.name, where), source)
            return
        spec = spec or {}
        report.checked += 1
        problems = literal_problems(spec, value, name, source_text)
        if problems:
            self._literal_findings(label, name, problems, where, source)
            return
        if isinstance(value, EncryptedString):
            report.skipped += 1
            report.note(self.name, label, name, "not_templated", "vaulted value: type not checked", source)
            return
        try:
            resolved = templar.template(value)
        except AnsibleValueOmittedError:
            report.skipped += 1
            report.note(self.name, label, name, "not_templated", "resolves to omit: the role's default applies", source)
            return
        except AnsibleUndefinedVariable as exc:
            missing = UNDEFINED.search(str(exc))
            ref_role = role_of(missing.group(1), self.roles)[0] if missing else None
            if ref_role is not None and ref_role.options is not None and missing.group(1) not in ref_role.options:
                hint = _closest(missing.group(1), ref_role.options)
                report.finding(self.name, label, name, "undefined_reference",
                               "refers to %s, which is neither set nor a variable of role %s%s%s"
                               % (missing.group(1), ref_role.name, "; did you mean %s?" % hint if hint else "", where),
                               source)
                return
            report.skipped += 1
            report.note(self.name, label, name, "not_templated",
                        "cannot be templated here (needs facts or a vault secret?): %s; type not checked"
                        % str(exc).splitlines()[0], source)
            return
        except AnsibleError as exc:
            report.skipped += 1
            report.note(self.name, label, name, "not_templated",
                        "cannot be templated here: %s; type not checked" % str(exc).splitlines()[0], source)
            return
        if _is_template(value):
            problems = literal_problems(spec, resolved, name, source_text, templated=True)
            if problems:
                self._literal_findings(label, name, problems, where, source)
                return
        if name.startswith(UNIT_PREFIX):
            unsafe = unit_value_problems(name, resolved)
            for path, message in unsafe:
                inside = "" if path == name else "%s: " % path[len(name):].lstrip(".")
                report.finding(self.name, label, name, "unit_value", inside + message + where, source)
            if unsafe:
                return
        result = ArgumentSpecValidator({name: copy.deepcopy(spec)}).validate({name: resolved})
        if result.error_messages:
            message = "; ".join(result.error_messages)
            shown = "" if "got: " in message else " (value %s)" % show_secret_safe(name, resolved)
            report.finding(self.name, label, name, "invalid_value", message + shown + where, source)

    def _literal_findings(self, label, name, problems, where, source):
        for path, message in problems:
            inside = "" if path == name else "%s: " % path[len(name):].lstrip(".")
            self.report.finding(self.name, label, name, "literal_type", inside + message + where, source)


def default_inventories():
    top = os.path.join(ROOT, "inventories")
    found = []
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        path = os.path.join(top, name)
        if os.path.isdir(path) and not name.startswith("."):
            found.append(path)
    return found


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)

    paths = args.inventory or default_inventories()
    for path in paths:
        if not os.path.isdir(path):
            parser.error("--inventory %s: not a directory" % path)

    # What the ansible CLIs do first: without it no FQCN lookup or filter resolves.
    init_plugin_loader()
    report = Report()
    roles = load_roles(DataLoader())
    source_text = SourceText()
    seen = set()
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        InventoryCheck(path, roles, report, source_text).run()

    summary = {
        "inventories": report.inventories,
        "hosts": report.hosts,
        "roles": sorted(r.name for r in roles),
        "variables_checked": report.checked,
        "not_type_checked": report.skipped,
        "findings": len(report.findings),
    }
    if args.json:
        json.dump({"ok": not report.findings, "summary": summary, "findings": report.findings,
                   "notes": report.notes}, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        for entry in report.findings:
            print("%s:%s: %s: %s" % (entry["inventory"], entry["host"], entry["variable"], entry["message"]))
        if args.verbose:
            for entry in report.notes:
                print("note: %s:%s: %s: %s" % (entry["inventory"], entry["host"], entry["variable"], entry["message"]))
        print("%s: %d finding(s); %d inventor%s, %d hosts, %d role variables checked against roles %s "
              "(%d not type-checked%s)"
              % ("FAILED" if report.findings else "ok", len(report.findings), report.inventories,
                 "y" if report.inventories == 1 else "ies", report.hosts,
                 report.checked, ", ".join(summary["roles"]), report.skipped,
                 ", -v says why" if report.skipped and not args.verbose else ""))
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
