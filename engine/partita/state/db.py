"""One RocksDB per partition (rocksdict, raw mode) with the declared column families.

All reads and writes go through the batch overlay (`partita.state.overlay`); `commit` writes
the overlay and the meta positions in one `WriteBatch` with the WAL on, so after a crash the
store holds exactly the last committed batch. `rollback` discards the overlay.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from rocksdict import AccessType, Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from partita.state.column_family import ColumnFamily
from partita.state.columns import ColumnFamilies, ColumnFamilyDef
from partita.state.errors import StateError, StoreLockedError
from partita.state.overlay import Overlay

_LOG = logging.getLogger("partita.state")

K = TypeVar("K")
V = TypeVar("V")

META = ColumnFamilies.META
LAST_PROCESSED_POSITION = "last_processed_position"
LAST_APPLIED_POSITION = "last_applied_position"
LAST_INGRESS_POSITION = "last_ingress_position"
"""The offset on `<ns>.commands` of the last client command processed (copied into the log)."""
STATE_FORMAT_KEY = "state_format"
STATE_FORMAT = 3
"""The layout of the column families this build reads and writes. A store written with
another layout is upgraded or rebuilt from the log (`partita.state.migrate.open_current`),
never read as if it matched."""


def _existing_column_families(path: Path) -> set[str]:
    if not (path / "CURRENT").exists():
        return set()
    try:
        return set(Rdict.list_cf(str(path)))
    except Exception as exc:  # rocksdict raises plain exceptions
        raise StateError(f"cannot read the column families of the store at {path}: {exc}") from None


def _options() -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    return options


class PartitionDb:
    """The state of one partition. Single-threaded: one batch (overlay) at a time."""

    def __init__(
        self,
        path: Path,
        definitions: tuple[ColumnFamilyDef[Any, Any], ...] | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.definitions = definitions or ColumnFamilies.all()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        declared = {d.name for d in self.definitions}
        self.undeclared = tuple(_existing_column_families(self.path) - declared - {"default"})
        """Column families the store has and this build does not declare (an older layout's):
        opened, since RocksDB opens all or nothing, and dropped by the upgrade."""
        column_families = {
            name: Options(raw_mode=True) for name in (*sorted(declared), *self.undeclared)
        }
        try:
            if read_only:  # no lock: readable while a worker owns the store
                self._db = Rdict(
                    str(self.path),
                    options=_options(),
                    column_families=column_families,
                    access_type=AccessType.read_only(),
                )
            else:
                self._db = Rdict(
                    str(self.path), options=_options(), column_families=column_families
                )
        except Exception as exc:  # rocksdict raises plain exceptions (lock held, corruption)
            problem = StoreLockedError if "/LOCK:" in str(exc) else StateError
            raise problem(f"cannot open the state store at {self.path}: {exc}") from None
        names = [d.name for d in self.definitions] + list(self.undeclared)
        self._handles = {name: self._db.get_column_family_handle(name) for name in names}
        self._cfs = {name: self._db.get_column_family(name) for name in names}
        self._write_options = WriteOptions()
        self._write_options.sync = False  # WAL on; fsync per batch is the OS's job after a crash
        queues = frozenset(d.name for d in self.definitions if d.queue)
        codecs = {d.name: d.value for d in self.definitions}
        self.overlay = Overlay(self._db_get, self._db_scan, codecs, queues)
        self._raw_writes: dict[str, dict[bytes, bytes]] = {}
        """Bytes written past the codecs (the layout number, an upgrade's rewrites)."""
        for name in self._cfs:
            last = self._last_key(name)
            if last is not None:
                self.overlay.ceilings[name] = last
        self._columns: dict[str, ColumnFamily[Any, Any]] = {}
        self.meta: ColumnFamily[str, int] = self.column(META)
        format_key = META.key.encode(STATE_FORMAT_KEY)
        if not read_only and not any(d.name in self.overlay.ceilings for d in self.definitions):
            self._cfs[META.name].put(format_key, str(STATE_FORMAT).encode())
            self._raise_ceiling(META.name, format_key)

    @property
    def state_format(self) -> int | None:
        """The layout version the store was written with (None: before versions existed)."""
        raw = self._db_get(META.name, META.key.encode(STATE_FORMAT_KEY))
        return None if raw is None else int(raw)

    def set_state_format(self, state_format: int) -> None:
        """Record the layout the store holds now (an upgrade's last write, in its batch)."""
        self.put_raw(META.name, META.key.encode(STATE_FORMAT_KEY), str(state_format).encode())

    def put_raw(self, cf: str, key: bytes, value: bytes) -> None:
        """Write `value` as it is at the next commit (an upgrade's rewritten values, the
        layout number); the overlay does not see it."""
        self._raw_writes.setdefault(cf, {})[key] = value

    def committed(self, cf: str) -> Iterator[tuple[bytes, bytes]]:
        """The committed raw entries of column family `cf` (declared or not), in key order:
        for upgrades, which read values an older layout wrote."""
        return self._db_scan(cf, b"")

    def drop_undeclared(self) -> None:
        """Drop the column families this build does not declare."""
        for name in self.undeclared:
            self._cfs.pop(name).close()
            self._handles.pop(name, None)
            self.overlay.ceilings.pop(name, None)
            self._db.drop_column_family(name)
        self.undeclared = ()

    # -- raw access for the overlay -------------------------------------------------------------

    def _db_get(self, cf: str, key: bytes) -> bytes | None:
        value: bytes | None = self._cfs[cf].get(key)
        return value

    def _last_key(self, cf: str) -> bytes | None:
        iterator = self._cfs[cf].iter()
        iterator.seek_to_last()
        key: bytes | None = iterator.key() if iterator.valid() else None
        return key

    def _raise_ceiling(self, cf: str, key: bytes) -> None:
        """`key` is about to be committed in `cf`: no committed key may lie above the ceiling."""
        ceilings = self.overlay.ceilings
        ceiling = ceilings.get(cf)
        if ceiling is None or key > ceiling:
            ceilings[cf] = key

    def _db_scan(
        self, cf: str, prefix: bytes, start: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        # Seek and stop at the first key outside the prefix. (rocksdict's ReadOptions bounds
        # are not raw-mode aware, so they are not used.)
        iterator = self._cfs[cf].iter()
        start = prefix if start is None else start
        if start:
            iterator.seek(start)
        else:
            iterator.seek_to_first()
        while iterator.valid():
            key = iterator.key()
            if not key.startswith(prefix):
                return
            yield key, iterator.value()
            iterator.next()

    # -- API ----------------------------------------------------------------------------------

    def column(self, definition: ColumnFamilyDef[K, V]) -> ColumnFamily[K, V]:
        """The typed column family `definition`, reading and writing through the overlay."""
        column = self._columns.get(definition.name)
        if column is None:
            if definition.name not in self._handles:
                raise StateError(f"column family {definition.name!r} is not declared in this store")
            column = self._columns[definition.name] = ColumnFamily(definition, self.overlay)
        return column

    def commit(
        self,
        *,
        last_processed_position: int | None = None,
        last_applied_position: int | None = None,
        last_ingress_position: int | None = None,
    ) -> int:
        """Write the overlay (plus the given positions) in one WriteBatch; returns its size."""
        if last_processed_position is not None:
            self.meta.upsert(LAST_PROCESSED_POSITION, last_processed_position)
        if last_applied_position is not None:
            self.meta.upsert(LAST_APPLIED_POSITION, last_applied_position)
        if last_ingress_position is not None:
            self.meta.upsert(LAST_INGRESS_POSITION, last_ingress_position)
        batch = WriteBatch(raw_mode=True)
        size = 0
        handles = self._handles
        for cf, writes in self.overlay.writes.items():
            if writes:  # before the write: a ceiling may be too high, never too low
                self._raise_ceiling(cf, max(writes))
        for cf, key, value in self.overlay.encoded():
            if value is None:
                batch.delete(key, handles[cf])
            else:
                batch.put(key, value, handles[cf])
            size += 1
        for cf, raw_writes in self._raw_writes.items():
            if raw_writes:
                self._raise_ceiling(cf, max(raw_writes))
            for key, value in raw_writes.items():
                batch.put(key, value, handles[cf])
                size += 1
        if size:
            self._db.write(batch, self._write_options)
        self.overlay.clear()
        self._raw_writes.clear()
        return size

    def rollback(self) -> None:
        """Discard every uncommitted write."""
        self.overlay.discard()
        self._raw_writes.clear()

    def position(self, name: str) -> int:
        """A committed (or pending) meta position; -1 when never written."""
        value = self.meta.get(name)
        return -1 if value is None else int(value)

    def checkpoint(self, target: Path) -> Path:
        """A consistent RocksDB checkpoint (hard links) of the committed state at `target`."""
        if len(self.overlay) or self._raw_writes:
            raise StateError("checkpoint with uncommitted writes; commit or roll back first")
        if target.exists():
            raise StateError(f"checkpoint target {target} already exists")
        target.parent.mkdir(parents=True, exist_ok=True)
        Checkpoint(self._db).create_checkpoint(str(target))
        return target

    def digest(self) -> str:
        """SHA-256 of the committed state: every column family in declaration order, every
        entry in key order. Equal state gives an equal digest on any machine. The
        positions are bookkeeping, not state, and are left out: a store rebuilt by replay
        must digest equal to the one that processed the commands."""
        sha = hashlib.sha256()
        skip = {
            META.key.encode(name)
            for name in (
                LAST_PROCESSED_POSITION,
                LAST_APPLIED_POSITION,
                LAST_INGRESS_POSITION,
                STATE_FORMAT_KEY,
            )
        }
        for definition in self.definitions:
            name = definition.name.encode()
            sha.update(len(name).to_bytes(4, "big") + name)
            for key, value in self._db_scan(definition.name, b""):
                if definition is META and key in skip:
                    continue
                sha.update(len(key).to_bytes(4, "big") + key)
                sha.update(len(value).to_bytes(4, "big") + value)
        return sha.hexdigest()

    def close(self) -> None:
        """Release the store (and its lock). Column family views must be closed first, else
        RocksDB keeps the lock until they are garbage collected."""
        self.overlay.clear()
        for column_family in self._cfs.values():
            column_family.close()
        self._cfs.clear()
        self._handles.clear()
        self._db.close()

    def __enter__(self) -> PartitionDb:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @classmethod
    def open_checkpoint(cls, checkpoint: Path, target: Path) -> PartitionDb:
        """Copy a checkpoint to `target` and open it (the checkpoint stays untouched)."""
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(checkpoint, target)
        return cls(target)
