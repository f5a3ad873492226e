"""Typed errors of the partition state store. Each names the column family and the key."""

from __future__ import annotations

from typing import Any

from partita.errors import PartitaError


class StateError(PartitaError):
    """Base of state store errors."""


class StoreLockedError(StateError):
    """Another process (or another handle in this one) has the store open: RocksDB's lock."""


class ColumnFamilyError(StateError):
    """An operation on one column family failed; `column_family` and `key` say where."""

    def __init__(self, column_family: str, key: Any, problem: str) -> None:
        self.column_family = column_family
        self.key = key
        super().__init__(f"{problem}: key {key!r} in column family {column_family!r}")


class KeyExistsError(ColumnFamilyError):
    """`insert` of a key that is already present."""

    def __init__(self, column_family: str, key: Any) -> None:
        super().__init__(column_family, key, "insert of an existing key")


class KeyNotFoundError(ColumnFamilyError):
    """`update` or `delete_existing` of a key that is absent."""

    def __init__(self, column_family: str, key: Any, operation: str) -> None:
        super().__init__(column_family, key, f"{operation} of a missing key")


class EncodingError(StateError):
    """A key or value cannot be encoded or decoded (wrong type, unknown value version)."""


class SavepointError(StateError):
    """Rollback or release without a matching savepoint."""
