# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""systemd_quote / systemd_exec: every printable value survives systemd's parsing; control characters are refused."""

import json
import re

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.inference.gpu_host.plugins.filter.vllm_small import FilterModule

FILTERS = FilterModule().filters()
quote, exec_line = FILTERS["systemd_quote"], FILTERS["systemd_exec"]


def previous_quote(arg):
    """The filter as it was before control characters were refused: printable values must render the same."""
    text = str(arg)
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % text


def systemd_words(line):
    """Split an ExecStart= value the way systemd does, for what these filters write.

    In systemd's order: %-specifiers on the whole line (only %% is expected here), then
    whitespace splitting with double quotes and C escapes (only \\\\ and \\" expected), then
    $-expansion per word at exec time (only $$ expected). Anything else fails the test.
    """
    assert "\n" not in line and "\r" not in line and "\0" not in line
    assert not re.search(r"%[^%]", line.replace("%%", "")), "a %-specifier systemd would expand: " + line
    line = line.replace("%%", "%")
    words, pos = [], 0
    while pos < len(line):
        if line[pos] == " ":
            pos += 1
            continue
        assert line[pos] == '"', "an unquoted word: %r" % line[pos:]
        pos += 1
        word = []
        while line[pos] != '"':
            if line[pos] == "\\":
                assert line[pos + 1] in '\\"', "an escape systemd would interpret: %r" % line[pos:pos + 2]
                pos += 1
            word.append(line[pos])
            pos += 1
        pos += 1
        assert pos == len(line) or line[pos] == " "
        word = "".join(word)
        assert not re.search(r"\$[^$]", word.replace("$$", "")), "a $VARIABLE systemd would expand: " + word
        words.append(word.replace("$$", "$"))
    return words


# ------------------------------------------------------------ regressions ---

@pytest.mark.parametrize("value,char", [
    ("x\nExecStartPre=/bin/rm -rf /", 0x0A),
    ("x\rExecStartPre=/bin/rm -rf /", 0x0D),
    ("model\x00", 0x00),
    ("a\tb", 0x09),
    ("\x1b[31m", 0x1B),
    ("\x7f", 0x7F),
    ("next\x85line", 0x85),
    ("line\u2028separator", 0x2028),
])
def test_control_characters_are_refused(value, char):
    with pytest.raises(AnsibleFilterError) as err:
        quote(value)
    message = str(err.value)
    assert message.startswith("systemd_quote: value %s" % repr(value)[:40])
    assert "control character (U+%04X) at index %d" % (char, value.index(chr(char))) in message
    assert "must be one line of printable text" in message
    with pytest.raises(AnsibleFilterError, match="control character"):
        exec_line(["/opt/venv/bin/vllm", "serve", value])


def test_long_values_are_cut_in_the_message():
    with pytest.raises(AnsibleFilterError) as err:
        quote("x" * 100 + "\n")
    assert "'" + "x" * 39 + "..." in str(err.value) and "x" * 60 not in str(err.value)


@pytest.mark.parametrize("value", [None, ["a"], {"a": 1}, ("a",), b"bytes"])
def test_non_scalar_arguments_are_refused(value):
    with pytest.raises(AnsibleFilterError, match="expected a string or a number"):
        quote(value)


@pytest.mark.parametrize("argv", ["vllm serve", [], {"argv": ["x"]}, None, 42])
def test_systemd_exec_needs_a_non_empty_list(argv):
    with pytest.raises(AnsibleFilterError, match="systemd_exec: expected a non-empty list of arguments"):
        exec_line(argv)


SPEC = json.dumps({"method": "dflash", "model": "/srv/models/q36 dflash", "num_speculative_tokens": 15},
                  sort_keys=True)


@pytest.mark.parametrize("value,rendered", [
    ("/opt/vllm/bin/vllm", '"/opt/vllm/bin/vllm"'),
    ("my model", '"my model"'),
    ("it's", '"it\'s"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("$HOME ${X}", '"$$HOME $${X}"'),
    ("100%", '"100%%"'),
    ("%n%i", '"%%n%%i"'),
    ("C:\\path\\", '"C:\\\\path\\\\"'),
    (";", '";"'),
    (8000, '"8000"'),
    (0.9, '"0.9"'),
    (SPEC, '"' + SPEC.replace('"', '\\"') + '"'),
])
def test_normal_values_render_as_before(value, rendered):
    assert quote(value) == rendered == previous_quote(value)
    assert systemd_words(quote(value)) == [str(value)]


def test_a_real_command_line_round_trips():
    argv = ["/opt/vllm/bin/vllm", "serve", "/srv/models/Qwen3.6-27B", "--served-model-name", "qwen 27b",
            "--port", "8000", "--speculative-config", SPEC, "--extra", "50% $HOME \\ ' \""]
    line = exec_line(argv)
    assert line == " ".join(previous_quote(a) for a in argv)
    assert systemd_words(line) == argv
    assert exec_line(tuple(argv)) == line and exec_line(a for a in argv) == line


# ------------------------------------------------------------- properties ---

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_printable = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\u2028\u2029"),
                     max_size=40)


@given(value=_printable)
def test_property_printable_values_parse_back(value):
    rendered = quote(value)
    assert rendered == previous_quote(value)
    assert systemd_words(rendered) == [value]


@given(argv=st.lists(_printable, min_size=1, max_size=6))
def test_property_argv_parses_back(argv):
    assert systemd_words(exec_line(argv)) == argv


@given(head=_printable, control=st.sampled_from([chr(c) for c in list(range(0x20)) + list(range(0x7F, 0xA0))]
                                                + ["\u2028", "\u2029"]), tail=_printable)
def test_property_control_characters_are_refused(head, control, tail):
    value = head + control + tail
    with pytest.raises(AnsibleFilterError) as err:
        quote(value)
    first = _CONTROL.search(value)
    assert "U+%04X) at index %d" % (ord(first.group()), first.start()) in str(err.value)
