"""Typed column families with Zeebe's semantics, read and written through the batch overlay."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

from partita.state.errors import KeyExistsError, KeyNotFoundError
from partita.state.overlay import ABSENT, DELETED, Overlay

if TYPE_CHECKING:
    from partita.state.columns import ColumnFamilyDef

K = TypeVar("K")
V = TypeVar("V")


class ColumnFamily(Generic[K, V]):
    """One column family of a partition. Every read sees the batch's own writes.

    `insert` fails if the key exists, `update` and `delete_existing` fail if it is absent (a
    typed error naming the column family and key); `upsert` and `delete` never fail.
    """

    def __init__(self, definition: ColumnFamilyDef[K, V], overlay: Overlay) -> None:
        self.name = definition.name
        self._key = definition.key.encoder()
        self._decode_key = definition.key.decode
        self._check = definition.value.check
        self._overlay = overlay

    def get(self, key: K) -> V | None:
        value = self._overlay.get(self.name, self._key(key))
        return None if value is ABSENT else value

    def exists(self, key: K) -> bool:
        return self._overlay.get(self.name, self._key(key)) is not ABSENT

    def insert(self, key: K, value: V) -> None:
        if not self._overlay.insert(self.name, self._key(key), self._check(value)):
            raise KeyExistsError(self.name, key)

    def update(self, key: K, value: V) -> None:
        encoded = self._key(key)
        if self._overlay.get(self.name, encoded) is ABSENT:
            raise KeyNotFoundError(self.name, key, "update")
        self._overlay.put(self.name, encoded, self._check(value))

    def upsert(self, key: K, value: V) -> None:
        self._overlay.put(self.name, self._key(key), self._check(value))

    def delete_existing(self, key: K) -> None:
        encoded = self._key(key)
        if self._overlay.get(self.name, encoded) is ABSENT:
            raise KeyNotFoundError(self.name, key, "delete_existing")
        self._overlay.put(self.name, encoded, DELETED)

    def delete(self, key: K) -> None:
        self._overlay.put(self.name, self._key(key), DELETED)

    def delete_prefix(self, prefix: bytes) -> int:
        """Delete every entry whose encoded key starts with `prefix` (values not decoded)."""
        return self._overlay.delete_prefix(self.name, prefix)

    def items(self, prefix: bytes = b"") -> Iterator[tuple[K, V]]:
        """Entries in key order, optionally only those whose encoded key starts with `prefix`."""
        decode_key = self._decode_key
        for raw_key, value in self._overlay.scan(self.name, prefix):
            yield decode_key(raw_key), value

    def is_empty(self) -> bool:
        return next(self._overlay.scan(self.name, b"", values=False), None) is None

    def count(self) -> int:
        return sum(1 for _ in self._overlay.scan(self.name, b"", values=False))

    def entry(self, key: K) -> Entry[V]:
        """One key of this column family, encoded once (for a key touched by every command)."""
        return Entry(self.name, self._key(key), self._check, self._overlay)


class Entry(Generic[V]):
    """A single key of a column family: `get` and `upsert` without encoding the key again."""

    __slots__ = ("_cf", "_check", "_key", "_overlay")

    def __init__(self, cf: str, key: bytes, check: Callable[[V], V], overlay: Overlay) -> None:
        self._cf, self._key, self._check, self._overlay = cf, key, check, overlay

    def get(self) -> V | None:
        value = self._overlay.get(self._cf, self._key)
        return None if value is ABSENT else value

    def upsert(self, value: V) -> None:
        self._overlay.put(self._cf, self._key, self._check(value))
