"""Property tests of tests/unit/protocol/test_codec.py (property tests live under tests/fuzz)."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from partita.protocol import errors
from partita.protocol.codec import MAGIC
from partita.protocol.records import Record
from tests.support.codec import CODEC, valid_encoding


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_after_a_valid_header_give_a_typed_error_or_a_record(body: bytes) -> None:
    try:
        record = CODEC.decode(MAGIC + CODEC.fingerprint + body)
    except (errors.DecodeError, errors.RecordTooLargeError):
        return
    assert isinstance(record, Record)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0), st.data())
def test_flipping_any_byte_of_a_valid_record_never_escapes_untyped(
    seed: int, data: st.DataObject
) -> None:
    valid = bytearray(valid_encoding())
    index = data.draw(st.integers(min_value=0, max_value=len(valid) - 1))
    valid[index] = seed % 256
    with contextlib.suppress(errors.DecodeError, errors.RecordTooLargeError):
        CODEC.decode(bytes(valid))
