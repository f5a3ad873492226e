"""The compiled codec (`partita_native`), for the tests that check it against pure Python."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from partita.protocol.native import mode, native_decoder
from partita.protocol.schemas import current_schema


def compiled_decoder() -> Callable[[bytes, int], tuple[tuple[Any, ...], int]]:
    """The compiled decoder whenever it is installed, PARTITA_NATIVE=off or not."""
    try:
        import partita_native  # lazy: the optional compiled module
    except ImportError:
        if mode() == "on":
            raise
        pytest.skip("partita_native is not built: scripts/setup builds it with Rust's cargo")
    assert partita_native is not None
    decode = native_decoder(current_schema().raw, want=True)
    assert decode is not None
    return decode
