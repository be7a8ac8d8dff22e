# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The baseline: the same target served without speculative decoding, and the speed-up against it.

The unit the vllm_service role writes has one ExecStart= whose every argument is one double-quoted word
(_vllm/unit.py's exec_word). The baseline serves that command less ``--speculative-config <json>`` through a
*runtime* drop-in (/run/systemd/system/<unit>.d/): the role-managed unit file is never rewritten (a converge or
a drift check sees nothing), and /run is emptied at boot, so a host that reboots mid-baseline comes back with
speculation. The key of a baseline record is (venv generation, sha256 of the unit text without speculation).

- plan(unit_text, unit_name) -> {speculative, unit_sha, dropin_dir, dropin_path, dropin}; dropin_path(unit_name)
- speedup(record, baseline) -> the "DFlash: N x the plain target" comparison
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import hashlib
import math
import re

SPEC_FLAGS = ("--speculative-config", "--speculative_config")
DROPIN_ROOT = "/run/systemd/system"
DROPIN_NAME = "50-inference-gpu-host-baseline.conf"
_WORD = re.compile(r'"(?:[^"\\]|\\.)*"')
_UNIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9:_.@-]*\.service\Z")


class BaselineError(ValueError):
    """A unit the baseline cannot be derived from (a sentence naming the unit and what is wrong)."""


def _unquoted(word):
    return re.sub(r"\\(.)", r"\1", word[1:-1])


def exec_words(value, unit_name="the unit"):
    """The double-quoted words of one ExecStart= value, verbatim (quotes and escapes kept)."""
    words, pos = [], 0
    text = value.strip()
    while pos < len(text):
        match = _WORD.match(text, pos)
        if not match:
            raise BaselineError("%s: ExecStart= is not the vllm_service role's (every argument one double-quoted "
                                "word), at %r" % (unit_name, text[pos:pos + 40]))
        words.append(match.group(0))
        pos = match.end()
        while pos < len(text) and text[pos] == " ":
            pos += 1
    if not words:
        raise BaselineError("%s: ExecStart= is empty" % unit_name)
    return words


def _exec_line(unit_text, unit_name):
    """(index of the one ExecStart= line, its value)."""
    lines = (unit_text or "").splitlines()
    found = [(i, line[len("ExecStart="):]) for i, line in enumerate(lines) if line.startswith("ExecStart=")]
    if len(found) != 1:
        raise BaselineError("%s: expected one ExecStart= line (the vllm_service role writes one), found %d"
                            % (unit_name, len(found)))
    return found[0]


def without_speculation(words):
    """(the words less --speculative-config and its value, whether one was there)."""
    kept, removed, skip = [], False, False
    for word in words:
        text = _unquoted(word)
        if skip:
            skip = False
            continue
        if text in SPEC_FLAGS:
            removed, skip = True, True
            continue
        if text.split("=", 1)[0] in SPEC_FLAGS:
            removed = True
            continue
        kept.append(word)
    return kept, removed


def dropin_path(unit_name):
    """The baseline's runtime drop-in of the unit ``unit_name`` (BaselineError for a name that is not a service's)."""
    if not isinstance(unit_name, str) or not _UNIT_NAME.match(unit_name):
        raise BaselineError("unit %r: expected a systemd service name (name.service)" % (unit_name,))
    return "%s/%s.d/%s" % (DROPIN_ROOT, unit_name, DROPIN_NAME)


def plan(unit_text, unit_name):
    """What the baseline of the unit ``unit_name`` (whose file holds ``unit_text``) serves, and how.

    Returns {speculative (bool: the unit serves with --speculative-config), exec_start (the command without it),
    unit_sha (sha256 of the unit text with that command: the baseline's unit hash), dropin_dir, dropin_path,
    dropin (the drop-in's text)}. BaselineError when the unit is not the role's.
    """
    path = dropin_path(unit_name)
    index, value = _exec_line(unit_text, unit_name)
    words, removed = without_speculation(exec_words(value, unit_name))
    exec_start = " ".join(words)
    lines = unit_text.splitlines()
    lines[index] = "ExecStart=" + exec_start
    plain = "\n".join(lines) + ("\n" if unit_text.endswith("\n") else "")
    dropin_dir = path.rsplit("/", 1)[0]
    dropin = ("# inference.gpu_host serving_benchmark: the baseline (the same command without --speculative-config).\n"
              "# A runtime drop-in: removed when the baseline ends, and gone after a reboot.\n"
              "[Service]\nExecStart=\nExecStart=%s\n" % exec_start)
    return {"speculative": removed, "exec_start": exec_start,
            "unit_sha": hashlib.sha256(plain.encode("utf-8")).hexdigest(),
            "dropin_dir": dropin_dir, "dropin_path": path, "dropin": dropin}


def _positive(figures, key):
    value = (figures or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def speedup(record, baseline):
    """The speculative ``record`` against the ``baseline`` record: {ratio_c1, ratio_cN, together, baseline_time,
    baseline_key, text}, or None when either lacks the single-request tok/s. ``together``: the baseline was measured
    beside these very figures (its measured_with is the record's key), else it is the last recorded one, measured
    beside other figures; the text says which (and stays the same on a run that measures nothing)."""
    if not isinstance(record, dict) or not isinstance(baseline, dict):
        return None
    spec, plain = record.get("figures") or {}, baseline.get("figures") or {}
    c1, base_c1 = _positive(spec, "tok_s_c1"), _positive(plain, "tok_s_c1")
    if c1 is None or base_c1 is None:
        return None
    cn, base_cn = _positive(spec, "tok_s_cN"), _positive(plain, "tok_s_cN")
    same_n = spec.get("concurrency") == plain.get("concurrency")
    ratio_cn = round(cn / base_cn, 2) if cn and base_cn and same_n else None
    together = bool(record.get("key")) and baseline.get("measured_with") == record.get("key")
    when = baseline.get("time") or "time unknown"
    source = ("the baseline measured beside these figures, %s" % when if together else
              "the last recorded baseline, %s, measured beside other figures" % when)
    text = "DFlash: %.2f x the plain target (single-request tok/s %.1f vs %.1f%s; %s)" % (
        c1 / base_c1, c1, base_c1,
        ", %.2f x at concurrency %s" % (ratio_cn, spec.get("concurrency")) if ratio_cn is not None else "", source)
    return {"ratio_c1": round(c1 / base_c1, 2), "ratio_cN": ratio_cn, "together": together,
            "baseline_time": baseline.get("time"), "baseline_key": baseline.get("key"), "text": text}
