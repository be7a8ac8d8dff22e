# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

# THE one home of what counts as a credential: the vllm_service role's guard on extra arguments
# (vllm_serve.py), its secret-by-name environment entries (vllm_unit.py) and the masking of every
# report (the drift_report callback) ask the same functions, so what the guard refuses is what the
# masking hides.
#
# A command-line flag is a credential flag when vLLM's own parser could read it as one:
# * its name (after the dashes, before "=" and before a "." of FlexibleArgumentParser's dotted
#   JSON form, a trailing "+" dropped) lower-cased with "_" as "-" (FlexibleArgumentParser turns
#   "_" into "-") is a non-empty prefix of a credential flag vLLM has (CREDENTIAL_FLAGS): argparse's
#   allow_abbrev takes any unambiguous prefix ("--api-ke" is --api-key), and an ambiguous one is
#   refused by vLLM anyway, so refusing every prefix costs nothing and needs no list of vLLM's flags;
# * or the name ends like a credential (--s3-secret, --db-password, --x-token), or its last
#   dash-separated part is a prefix of at least 4 characters of such a word (--db-passw, --x-toke):
#   an abbreviation of a credential flag of a vLLM or a plugin this list does not know.
#
# Public API (stdlib only):
# * CREDENTIAL_FLAGS: {"--api-key": "api_key", "--hf-token": "hf_token"} (flag -> vllm_service_<variable>)
# * CREDENTIAL_NAME: regex, a NAME (environment variable, mapping key) that ends like a credential
# * flag_name(arg) -> "api-key" for "--API_KE.x=1"; "" when ``arg`` is not a long flag
# * credential_flag(arg) -> "--api-key" / "--hf-token" (the flag it abbreviates or spells), "*" (named like a
#   credential), or None
# * redact(text) -> text with every credential value masked; redact_data(obj) -> the same over JSON-like data
# * MASK: what a masked value becomes
# * API_KEY: regex, the form of vLLM's --api-key the collection accepts (sent as "Authorization: Bearer <key>")

import re
from collections.abc import Mapping

MASK = "********"

# vLLM serve's flags whose value is a credential (vllm/entrypoints/openai/cli_args.py --api-key,
# vllm/engine/arg_utils.py --hf-token; every wheel the versions table was read from), with the role variable that
# carries each instead (written only to the 0600 environment file).
CREDENTIAL_FLAGS = {"--api-key": "api_key", "--hf-token": "hf_token"}

# The API key is sent as "Authorization: Bearer <key>": printable ASCII without spaces (\Z: "$" would let a
# final newline through). The role's check of vllm_service_api_key and the modules' of their api_key use this.
API_KEY = re.compile(r"^[\x21-\x7e]+\Z")

# The words that make a name a credential's; the name must end with one (mask_token_id and
# max_tokens are not secrets).
_WORDS = ("token", "secret", "password", "passwd", "passphrase", "api-key", "apikey", "private-key", "credential",
          "credentials")
_CREDENTIAL = r"(?:token|secret|passw(?:or)?d|passphrase|api[_-]?key|private[_-]?key|credentials?)"
CREDENTIAL_NAME = re.compile(r"(?i)%s\Z" % _CREDENTIAL)
_MIN_WORD_PREFIX = 4


def flag_name(arg):
    """The name vLLM's parser looks up for a long flag: "api-key" for "--API_Key.x+=1"; "" for anything else."""
    if not isinstance(arg, str) or not arg.startswith("--"):
        return ""
    name = arg.lstrip("-").split("=", 1)[0].split(".", 1)[0]
    return name.rstrip("+").replace("_", "-").lower()


def credential_flag(arg):
    """The credential flag ``arg`` could be read as by vLLM's parser: "--api-key", "--hf-token", "*" or None.

    "*" is a flag named like a credential that vLLM (as far as CREDENTIAL_FLAGS knows) does not have.
    """
    name = flag_name(arg)
    if not name:
        return None
    for flag in CREDENTIAL_FLAGS:
        if flag[2:].startswith(name):
            return flag
    if CREDENTIAL_NAME.search(name):
        return "*"
    parts = name.split("-")
    for start in range(len(parts)):
        tail = "-".join(parts[start:])
        if len(tail) >= _MIN_WORD_PREFIX and any(word.startswith(tail) for word in _WORDS):
            return "*"
    return None


# ---------------------------------------------------------------- masking text
_LONG_FLAG = re.compile(r"(?<![\w-])--[\w.+-]+")
# KEY=VALUE and key: value where the key names a credential (VLLM_API_KEY=..., "HF_TOKEN": "...").
# A whole name is matched, then its ending checked: a regex ending in the credential word would
# try every start inside a long dotted name (minutes for 40 KB of "a.a.a.").
_KEY = re.compile(r"(?<![\w.-])([\w.-]+)([\"']?)([ \t]*[=:][ \t]*)")
_DOUBLE_INSIDE = re.compile(r'(?:[^"\\\n]|\\.)*')
_SINGLE_INSIDE = re.compile(r"[^'\n]*")
_DOUBLE = re.compile(r'"((?:[^"\\\n]|\\.)*)"?')
_SINGLE = re.compile(r"'([^'\n]*)'?")
_BARE = re.compile(r"\S+")
_JSON_BARE = re.compile(r"[^\s,}\]]+")
# Between a flag and its value: spaces, or a JSON/Python list's comma (a line break and a diff's
# +/- marker with it when a list is printed one item a line).
_SEP = re.compile(r"[ \t]*,?[ \t]*(?:\n[+\- ]?[ \t]*)?")
# "Authorization: Bearer X" as a header line, a curl -H argument or a JSON object's entry.
_AUTHORIZATION = re.compile(r"(?i)\bauthorization[\"']?[ \t]*[:=][ \t]*([\"']?)(?:bearer|basic|token)[ \t]+")
_OTHER = (
    # a bearer token alone, a Hugging Face token, a URL's password
    (re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}\b"), "hf_" + MASK),
    (re.compile(r"(?i)(https?://[^/\s:@]+:)[^@\s/]+@"), r"\1" + MASK + "@"),
)


def _quote_before(text, start):
    """The quote that opens the word holding text[start:] ('"', "'" or ''): a value there ends at its close."""
    pos = start
    while pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_.+-"):
        pos -= 1
    return text[pos - 1] if pos > 0 and text[pos - 1] in "\"'" else ""


def _inside(text, pos, quote):
    """The span of the rest of a quoted word from ``pos`` (up to its closing quote)."""
    return (_DOUBLE_INSIDE if quote == '"' else _SINGLE_INSIDE).match(text, pos).span()


def _word(text, pos, json_like=False):
    """The span of the value word at ``pos`` (inside its quotes when quoted), or None."""
    char = text[pos:pos + 1]
    if char == '"':
        return _DOUBLE.match(text, pos).span(1)
    if char == "'":
        return _SINGLE.match(text, pos).span(1)
    match = (_JSON_BARE if json_like else _BARE).match(text, pos)
    return match.span() if match else None


def _flag_spans(text):
    """The spans of the values of credential flags: "--api-ke=X", "--api-ke X", '"--api-ke", "X"', "'--hf-tok' 'X'"."""
    spans, done = [], 0
    for match in _LONG_FLAG.finditer(text):
        # Inside a value already masked: skipped, so that masking stays linear in the text's length.
        if match.start() < done or credential_flag(match.group()) is None:
            continue
        quote = text[match.start() - 1] if match.start() > 0 and text[match.start() - 1] in "\"'" else ""
        pos = match.end()
        if text.startswith("=", pos):
            span = _inside(text, pos + 1, quote) if quote else _word(text, pos + 1)
            if span:
                spans.append(span)
                done = span[1]
            continue
        if quote:
            if not text.startswith(quote, pos):
                continue
            pos += 1
        # The value is the next word, unless that is another flag; in a quoted argv (a JSON list, a unit's
        # ExecStart=) every further item up to the next flag is one too (vLLM's --api-key takes several).
        while True:
            sep = _SEP.match(text, pos).end()
            if sep == pos and not quote:
                break
            nxt = text[sep:sep + 1]
            if not nxt or nxt == "\n" or text[sep:sep + 2].lstrip("\"'").startswith("-"):
                break
            if quote and nxt not in "\"'":
                break
            span = _word(text, sep)
            if span is None:
                break
            spans.append(span)
            done = span[1]
            if not quote:
                break
            pos = span[1] + 1 if text[span[1]:span[1] + 1] in "\"'" else span[1]
    return [s for s in spans if s and s[1] > s[0]]


def _key_spans(text):
    spans, done = [], 0
    for match in _KEY.finditer(text):
        if match.start() < done or not CREDENTIAL_NAME.search(match.group(1)):
            continue
        pos = match.end()
        key_quote = match.group(2)
        if key_quote:  # "HF_TOKEN": "x" (JSON), 'password': 'x' (a Python dict)
            span = _word(text, pos, json_like=True)
        else:
            quote = _quote_before(text, match.start(1))
            span = _inside(text, pos, quote) if quote else _word(text, pos)
        if span and span[1] > span[0]:
            spans.append(span)
            done = span[1]
    return spans


def _authorization_spans(text):
    spans = []
    for match in _AUTHORIZATION.finditer(text):
        quote = match.group(1) or _quote_before(text, match.start())
        span = _inside(text, match.end(), quote) if quote else _BARE.match(text, match.end())
        span = span if isinstance(span, tuple) else (span.span() if span else None)
        if span and span[1] > span[0]:
            spans.append(span)
    return spans


def _mask(text, spans):
    out, last = [], 0
    for start, end in sorted(spans):
        if start < last:  # overlapping: the earlier span already covers its start
            start = last
            if end <= start:
                continue
        out.append(text[last:start])
        out.append(MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text):
    """Mask what looks like a credential in ``text`` (a diff, a message, a command line).

    The value after a credential flag (credential_flag: abbreviations, "=" forms, "_" spellings, in
    a shell line, a unit's ExecStart=, a JSON or Python list), after a NAME that ends like a credential
    (VLLM_API_KEY=x, "HF_TOKEN": "x", password: x), an Authorization header, a bare Bearer token,
    a Hugging Face hf_ token and a URL's password. Quotes around a value are kept, so JSON stays JSON.
    Masking twice gives the same text.
    """
    if not text or not isinstance(text, str):
        return text
    text = _mask(text, _flag_spans(text))
    text = _mask(text, _key_spans(text))
    text = _mask(text, _authorization_spans(text))
    for pattern, repl in _OTHER:
        text = pattern.sub(repl, text)
    return text


def redact_data(value):
    """redact() over JSON-like data: strings masked, values of credential-named keys masked, and in a list
    (an argv) the items after a credential flag up to the next flag."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and CREDENTIAL_NAME.search(key) and isinstance(item, (str, int, float)) \
                    and not isinstance(item, bool):
                out[key] = MASK
            else:
                out[key] = redact_data(item)
        return out
    if isinstance(value, (list, tuple)):
        out, masking = [], False
        for item in value:
            if isinstance(item, str) and item.startswith("-"):
                masking = credential_flag(item) is not None and "=" not in item
                out.append(redact(item))
            elif masking and isinstance(item, (str, int, float)) and not isinstance(item, bool):
                out.append(MASK)
            else:
                masking = False
                out.append(redact_data(item))
        return out
    return value
