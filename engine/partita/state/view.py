"""The read-only view of a partition's state that processors get.

Processors decide and appliers mutate (Zeebe's immutable/mutable state split): a processor's
context holds its state as a `StateView`, whose column families offer reads only, so a write
from a processor is a type error (mypy), not a convention. Appliers get the `PartitionDb`.
`PartitionDb` is a `StateView` as it is (its column families have the reads too).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, TypeVar

from partita.state.columns import ColumnFamilyDef

K = TypeVar("K")
V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


class ReadOnlyColumn(Protocol[K, V_co]):
    """The reads of a column family (see `ColumnFamily`), seeing the batch's own writes."""

    def get(self, key: K) -> V_co | None: ...

    def exists(self, key: K) -> bool: ...

    def items(self, prefix: bytes = b"") -> Iterator[tuple[K, V_co]]: ...

    def is_empty(self) -> bool: ...

    def count(self) -> int: ...


class StateView(Protocol):
    """A partition's state, read only."""

    def column(self, definition: ColumnFamilyDef[K, V]) -> ReadOnlyColumn[K, V]: ...
