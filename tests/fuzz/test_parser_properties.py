"""Property tests of tests/unit/bpmn/test_parser.py (property tests live under tests/fuzz)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from partita.bpmn import BpmnValidationError, parse_bpmn
from tests.support.paths import BPMN_FIXTURES


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=500))
def test_any_bytes_give_a_validation_error_or_a_model(data: bytes) -> None:
    try:
        parse_bpmn(data, "fuzz.bpmn")
    except BpmnValidationError as error:
        assert error.problems


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_damaged_modeler_files_never_escape_untyped(data: st.DataObject) -> None:
    raw = bytearray((BPMN_FIXTURES / "order-process.bpmn").read_bytes())
    for _ in range(data.draw(st.integers(1, 5))):
        index = data.draw(st.integers(0, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    try:
        parse_bpmn(bytes(raw), "damaged.bpmn")
    except BpmnValidationError as error:
        assert error.problems
