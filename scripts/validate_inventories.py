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
    for a group or host the inventory does not have, an unencrypted vault file.

Templated values are resolved with the host's variables (role defaults below
them, as in a play); one that needs facts or a vault secret is not
type-checked, and ``-v`` says so. Vault-encrypted files are not read. Groups
without hosts are checked through a stand-in host named ``@<group>``.

Output: one line per finding, ``inventory:host: variable: message`` (host
``-`` for a finding about an inventory file), then a summary line. Exit 0 when
clean, 1 on findings, 2 on a usage error.

  .venv/bin/python scripts/validate_inventories.py [--inventory DIR]... [--json] [-v]
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Read the collection's ansible.cfg wherever this runs from, and never facts
# cached by an earlier playbook run: the result must depend on the repository only.
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))
os.environ["ANSIBLE_CACHE_PLUGIN"] = "memory"

# pylint: disable=wrong-import-position
from ansible.errors import AnsibleError, AnsibleUndefinedVariable, AnsibleValueOmittedError  # noqa: E402
from ansible.inventory.helpers import sort_groups  # noqa: E402
from ansible.inventory.manager import InventoryManager  # noqa: E402
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402
from ansible.module_utils.common.validation import check_type_bool  # noqa: E402
from ansible.parsing.dataloader import DataLoader  # noqa: E402
from ansible.parsing.vault import EncryptedString, is_encrypted_file  # noqa: E402
from ansible.plugins.loader import init_plugin_loader  # noqa: E402
from ansible.template import Templar  # noqa: E402
from ansible.utils.vars import combine_vars  # noqa: E402
from ansible.vars.manager import VariableManager  # noqa: E402
from ansible.vars.plugins import get_vars_from_inventory_sources  # noqa: E402

try:
    # Where a YAML value came from (file, line, column): lets the check quote the
    # text YAML read as a number. Private in ansible-core 2.19; without it the
    # check falls back to the value alone.
    from ansible._internal._datatag._tags import Origin  # noqa: E402
except ImportError:  # pragma: no cover
    Origin = None
# pylint: enable=wrong-import-position

VARS_EXTENSIONS = ("", ".yml", ".yaml", ".json")  # what host_group_vars reads
VAULT_FILE = re.compile(r"^vault([._-]|$)")
UNDEFINED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)' is undefined")
YAML_SCALAR = re.compile(r"[^\s,\]}#]+")


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


def _closest(name, candidates):
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
    return found[0] if found else None


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
                at = getattr(exc, "obj", None)
                at = " (line %s, column %s)" % (at.line_num, at.col_num) if Origin and isinstance(at, Origin) else ""
                self.spec_problem = "role %s: %s cannot be read%s: %s" % (self.name, rel, at, str(exc).splitlines()[0])
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


class Report:
    def __init__(self):
        self.findings = []
        self.notes = []
        self.checked = 0
        self.skipped = 0
        self.hosts = 0
        self.inventories = 0

    @staticmethod
    def _entry(inventory, host, variable, kind, message, source):
        return {"inventory": inventory, "host": host, "variable": variable, "kind": kind,
                "message": message, "source": source}

    def finding(self, inventory, host, variable, kind, message, source=None):
        entry = self._entry(inventory, host, variable, kind, message, source)
        if entry not in self.findings:
            self.findings.append(entry)

    def note(self, inventory, host, variable, kind, message, source=None):
        self.notes.append(self._entry(inventory, host, variable, kind, message, source))


class SourceText:
    """The YAML text of a scalar, to tell ``0644`` or ``0.20`` from what YAML made of it."""

    def __init__(self):
        self._lines = {}

    def of(self, value):
        if Origin is None:
            return None
        origin = Origin.get_tag(value)
        if origin is None or not origin.path or not origin.line_num or not origin.col_num:
            return None
        if origin.path not in self._lines:
            try:
                with open(origin.path, encoding="utf-8", errors="replace") as handle:
                    self._lines[origin.path] = handle.read().splitlines()
            except OSError:
                self._lines[origin.path] = []
        lines = self._lines[origin.path]
        if origin.line_num > len(lines):
            return None
        match = YAML_SCALAR.match(lines[origin.line_num - 1], origin.col_num - 1)
        return match.group(0) if match else None


def literal_problems(spec, value, path, source_text, templated=False):
    """Values Ansible's validator would coerce silently: a string or number for a bool,
    a bool or a reinterpreted number for a string. ``templated``: only the bool part,
    on a template's result. Returns (path, message) pairs; path names the item inside a
    list or dict."""
    wanted = spec.get("type") or "str"  # the validator's default type
    problems = []
    if value is None or isinstance(value, EncryptedString) or (not templated and _is_template(value)):
        return problems
    if wanted == "bool" and not isinstance(value, bool):
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
            text = source_text.of(value)
            if (text is None and isinstance(value, float)) or (text is not None and text != str(value)):
                shown = text if text is not None else value
                problems.append((path, 'expected a string, YAML read %s as the %s %s (Ansible would pass "%s"): quote it'
                                 % (shown, _number_type(value), value, value)))
    elif wanted == "list" and isinstance(value, list) and spec.get("elements"):
        element_spec = {"type": spec["elements"], "options": spec.get("options")}
        for index, item in enumerate(value):
            problems.extend(literal_problems(element_spec, item, "%s[%d]" % (path, index), source_text, templated))
    elif wanted == "dict" and isinstance(value, dict) and isinstance(spec.get("options"), dict):
        for key, sub_spec in spec["options"].items():
            if key in value:
                problems.extend(literal_problems(sub_spec or {}, value[key], "%s.%s" % (path, key), source_text, templated))
    return problems


def _number_type(value):
    for base in (bool, int, float):
        if isinstance(value, base):
            return base.__name__
    return type(value).__name__


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
        """(label, entity, vars) in the order VariableManager applies them (later wins)."""
        groups = sort_groups(host.get_groups())
        all_group = [g for g in groups if g.name == "all"]
        others = [g for g in groups if g.name != "all"]
        layers = []
        for group in all_group:
            self.own_vars(group)
            inline, files = self._own[("Group", group.name)]
            layers += [("inventory file, group all", group, inline), ("group_vars/all", group, files)]
        for group in others:
            self.own_vars(group)
            layers.append(("inventory file, group %s" % group.name, group, self._own[("Group", group.name)][0]))
        for group in others:
            layers.append(("group_vars/%s" % group.name, group, self._own[("Group", group.name)][1]))
        self.own_vars(host)
        inline, files = self._own[("Host", host.name)]
        layers += [("inventory file, host %s" % host.name, host, inline), ("host_vars/%s" % host.name, host, files)]
        return layers

    # -- one host -------------------------------------------------------------------------

    def check_host(self, host, label, pseudo):
        layers = self._layers(host)
        winner = {}
        for source, entity, values in layers:
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
        templar = Templar(loader=self.loader, variables=combine_vars(self.role_defaults, host_vars))
        for name in sorted(host_vars):
            role, private = role_of(name, self.roles)
            if role is None or not unchecked(name):
                continue
            self.check_variable(label, name, host_vars[name], role, private, templar,
                                winner.get(name, ("?", None))[0])

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
                shown = ", ".join("%s (%s)" % (g.name, _show(value)) for g, value in setters)
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

    def check_variable(self, label, name, value, role, private, templar, source):
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
        if spec is None:
            hint = _closest(name, role.options)
            report.finding(self.name, label, name, "unknown_variable",
                           "role %s has no such variable (typo, removed or renamed?)%s%s"
                           % (role.name, "; did you mean %s?" % hint if hint else
                              "; see roles/%s/meta/argument_specs.yml" % role.name, where), source)
            return
        spec = spec or {}
        report.checked += 1
        problems = literal_problems(spec, value, name, self.source_text)
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
            problems = literal_problems(spec, resolved, name, self.source_text, templated=True)
            if problems:
                self._literal_findings(label, name, problems, where, source)
                return
        result = ArgumentSpecValidator({name: copy.deepcopy(spec)}).validate({name: resolved})
        if result.error_messages:
            message = "; ".join(result.error_messages)
            shown = "" if "got: " in message else " (value %s)" % _show(resolved)
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
    parser = argparse.ArgumentParser(
        description="Validate inventories against the roles' meta/argument_specs.yml (exit 0 clean, 1 findings).")
    parser.add_argument("--inventory", action="append", metavar="DIR",
                        help="an inventory directory (repeatable; default: every directory under inventories/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of lines")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print what was not checked and why (templates that need facts, vaulted files)")
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
