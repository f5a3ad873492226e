"""The variables' JSON text (partita.protocol.json_text): what it accepts, what it refuses and
why, and what it writes back. Property tests against the standard library are in
tests/fuzz/test_json_text_properties.py."""

from __future__ import annotations

import re

import pytest

from partita.processing.behavior.variables import variables_document
from partita.processing.context import RejectionError
from partita.protocol import json_text


def test_integers_keep_every_digit_past_64_bits() -> None:
    text = '{"big": 123456789012345678901234567890, "low": -9223372036854775809}'
    value = json_text.parse(text)
    assert value == {"big": 123456789012345678901234567890, "low": -9223372036854775809}
    assert json_text.write(value) == text.replace(": ", ":").replace(", ", ",")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e999}', "a number out of range (beyond a 64-bit float)"),
        ('{"a": "\\ud800 x"}', "a lone UTF-16 surrogate escape"),
        ('{"a": "\\udc00"}', "a lone UTF-16 surrogate escape"),
        ('{"a": 1,}', "Expecting property name enclosed in double quotes: line 1 column 9"),
        ('{"a": 1} x', "Extra data: line 1 column 10"),
        ('{"a":', "Expecting value: line 1 column 6"),
        ("[" + "1" * 4301 + "]", "Exceeds the limit (4300 digits)"),
    ],
)
def test_what_python_reads_but_json_is_not_is_refused_saying_what_and_where(
    text: str, reason: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(reason)):
        json_text.parse(text)
    with pytest.raises(RejectionError) as refused:  # what a client's rejection says
        variables_document(text)
    assert refused.value.reason.startswith(f"variables are not valid JSON: {reason}")


def test_a_document_nested_too_deeply_is_a_rejection_not_a_crash() -> None:
    with pytest.raises(RejectionError, match="nested too deeply"):
        variables_document('{"a": ' + "[" * 5000 + "]" * 5000 + "}")


def test_writing_is_compact_utf8_in_insertion_order() -> None:
    value = {"z": "Jürgen \u2028 </script>", "a": [1, None, True, 0.5], "\u00e9": {}}
    assert json_text.write(value) == '{"z":"Jürgen \u2028 </script>","a":[1,null,true,0.5],"é":{}}'
    assert json_text.write('\x01\n"\\') == '"\\u0001\\n\\"\\\\"'
