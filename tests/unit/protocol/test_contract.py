"""The Avro schema, the Python model and the docs describe the same records."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import pytest
from msgspec import NODEFAULT
from msgspec.structs import fields

from partita.protocol import enums
from partita.protocol.convert import snake_case
from partita.protocol.docgen import render
from partita.protocol.enums import ValueType
from partita.protocol.intents import ALL_INTENT_NAMES, INTENTS_BY_VALUE_TYPE
from partita.protocol.schemas import current_schema, named_types
from partita.protocol.values import VALUE_CLASSES
from tests.support.paths import ROOT

RAW = json.loads(current_schema().path.read_text())


AVRO_ENUMS = named_types(RAW, "enum")
AVRO_RECORDS = named_types(RAW, "record")


PYTHON_ENUMS = [
    c for c in vars(enums).values() if isinstance(c, type) and issubclass(c, Enum) and c is not Enum
]


def test_every_avro_enum_but_intent_is_a_python_enum() -> None:
    """Both ways: the parametrized test below checks each Python enum's symbols."""
    assert {c.__name__ for c in PYTHON_ENUMS} == set(AVRO_ENUMS) - {"Intent"}


@pytest.mark.parametrize("enum_cls", PYTHON_ENUMS, ids=lambda c: c.__name__)
def test_python_enums_have_the_avro_symbols(enum_cls: type[Enum]) -> None:
    assert [m.name for m in enum_cls] == AVRO_ENUMS[enum_cls.__name__]["symbols"]


def test_the_avro_intent_enum_is_the_union_of_every_value_types_intents() -> None:
    assert AVRO_ENUMS["Intent"]["symbols"] == list(ALL_INTENT_NAMES)


def test_every_value_type_has_intents_and_commands_are_not_past_tense() -> None:
    assert set(INTENTS_BY_VALUE_TYPE) == set(ValueType)
    commands = 0
    for value_type in ValueType:
        intents = list(INTENTS_BY_VALUE_TYPE[value_type])
        assert intents, value_type
        for intent in intents:
            if not intent.is_event:
                commands += 1
                assert not intent.name.endswith(("ED", "ING")), intent
    assert commands > 0  # the check above ran


def test_every_value_type_has_a_value_class_with_an_avro_record() -> None:
    """Both ways: the parametrized test below checks each class's fields and defaults."""
    assert set(VALUE_CLASSES) == set(ValueType)
    value_records = {name for name in AVRO_RECORDS if name.endswith("Value")}
    assert {c.__name__ for c in VALUE_CLASSES.values()} == value_records


@pytest.mark.parametrize("cls", list(VALUE_CLASSES.values()), ids=lambda c: c.__name__)
def test_value_dataclasses_match_their_avro_records(cls: type[Any]) -> None:
    avro = AVRO_RECORDS[cls.__name__]
    python_fields = fields(cls)
    assert [f.name for f in python_fields] == [snake_case(f["name"]) for f in avro["fields"]]
    for python_field, avro_field in zip(python_fields, avro["fields"], strict=True):
        default = (
            python_field.default
            if python_field.default is not NODEFAULT
            else python_field.default_factory()  # type: ignore[misc]
        )
        expected = avro_field["default"]
        if isinstance(default, Enum):
            default = default.name
        if isinstance(default, bytes):
            default = default.decode("latin-1")
        if isinstance(default, tuple):
            default = list(default)
        assert default == expected, f"{cls.__name__}.{python_field.name}"


def test_the_records_reference_in_docs_is_generated_from_the_schema() -> None:
    committed = (ROOT / "docs" / "internals" / "records.md").read_text()
    assert committed == render(), (
        "docs/internals/records.md is stale: run"
        " `python -m partita.protocol.docgen > docs/internals/records.md`"
    )
