"""The batch key index of the overlay (partita.state.overlay._KeyIndex) against a sorted
set: every prefix finds exactly the keys added with it, in order, each once, whatever the
order and the repetitions of the adds (a savepoint rollback can add a key again)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from partita.state.overlay import _KeyIndex
from tests.support.fuzz_profiles import fuzz_settings

_KEYS = st.binary(min_size=0, max_size=12).map(lambda tail: b"\x00\x00\x00\x00\x00\x00\x00" + tail)
"""Keys that mostly share their first 8 bytes (one group), as a job type's queue does."""


@fuzz_settings()
@given(st.lists(_KEYS | st.binary(max_size=12), max_size=60), st.lists(st.binary(max_size=10)))
def test_every_prefix_finds_the_keys_added_with_it_sorted_and_once(
    keys: list[bytes], extra_prefixes: list[bytes]
) -> None:
    index = _KeyIndex()
    for key in keys:
        index.add(key)
    prefixes = {key[:n] for key in keys for n in range(len(key) + 1)} | set(extra_prefixes)
    for prefix in prefixes:
        expected = sorted({key for key in keys if key.startswith(prefix)})
        assert index.with_prefix(prefix) == expected, prefix
