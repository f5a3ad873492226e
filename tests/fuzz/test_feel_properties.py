"""Property tests of tests/unit/feel/test_feel.py (property tests live under tests/fuzz)."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from partita.feel import (
    FeelError,
    evaluate,
)
from tests.support.feel_variables import VARIABLES


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='=()[]{}.,:+-*/<>!"abcxyz0123456789 ifthenelsandornotsum', max_size=40))
def test_any_text_gives_a_value_or_a_feel_error(text: str) -> None:
    with contextlib.suppress(FeelError):
        evaluate(text, VARIABLES)
