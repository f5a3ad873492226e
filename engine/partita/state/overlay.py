"""The in-memory overlay that gives a batch read-your-writes over RocksDB.

The overlay deals in decoded values: writes land in a per-column-family dict as the values
themselves (`DELETED` marks a delete) and are encoded once, at commit (`encoded`), so a value
the batch writes and reads again (most reads of the hot path) is never decoded, and one it
rewrites is encoded once. Committed values read during the batch are decoded once and kept
(stored values are immutable). A key inserted and deleted again inside the batch, which
RocksDB never had, is not written at all. Prefix iteration merges the overlay's keys with
RocksDB's in key order and hides deletes. Savepoints record the previous overlay entry of
every key written after them, so one command's changes can be undone inside a batch. Nothing
reaches RocksDB until `PartitionDb.commit`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from partita.state.errors import SavepointError
from partita.state.values import ValueCodec


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


DELETED: Final = _Marker("DELETED")
"""An overlay entry: the key is deleted in this batch."""
ABSENT: Final = _Marker("ABSENT")
"""What `Overlay.get` returns for a key with no live value."""
_NOT_WRITTEN = _Marker("NOT_WRITTEN")
_HEAD = 8
"""The bytes of a key the batch's key index groups by: one 8-byte key, the first component
of most composite keys."""


class _KeyIndex:
    """The keys written to one column family in a batch, findable by prefix without looking
    at all of them: by their first `_HEAD` bytes for a prefix at least that long (the scans of
    the hot path: a scope's variables, children, triggers, a job type's activatable jobs),
    each group kept sorted as keys arrive, else through a sorted list of all of them, sorted
    only when such a scan needs it. May hold keys a savepoint rollback removed again (scans
    check the writes)."""

    __slots__ = ("heads", "keys", "sorted")

    def __init__(self) -> None:
        self.heads: dict[bytes, list[bytes]] = {}
        self.keys: list[bytes] = []
        self.sorted = True

    def add(self, key: bytes) -> None:
        head = self.heads.get(key[:_HEAD])
        if head is None:
            self.heads[key[:_HEAD]] = [key]
        elif not head or head[-1] < key:  # most keys come in ascending order (new, queues)
            head.append(key)
        else:
            at = bisect_left(head, key)
            if at == len(head) or head[at] != key:
                head.insert(at, key)
        self.keys.append(key)
        self.sorted = False

    def discard(self, key: bytes) -> None:
        """Forget `key` for scans by prefix of at least `_HEAD` bytes (the list of all keys
        may keep it: scans check the writes)."""
        head = self.heads.get(key[:_HEAD])
        if head:
            at = bisect_left(head, key)
            if at < len(head) and head[at] == key:
                del head[at]

    def with_prefix(self, prefix: bytes, start: bytes | None = None) -> list[bytes]:
        """The keys with `prefix`, in order; from `start` on (a key with the prefix) if given."""
        start = prefix if start is None else start
        if len(prefix) >= _HEAD:
            head = self.heads.get(prefix[:_HEAD], ())
            at = bisect_left(head, start)
            end = at
            while end < len(head) and head[end].startswith(prefix):
                end += 1
            return list(head[at:end])
        keys = self.keys
        if not self.sorted:
            keys.sort()
            self.sorted = True
        found: list[bytes] = []
        index = bisect_left(keys, start)
        while index < len(keys) and keys[index].startswith(prefix):
            if not found or found[-1] != keys[index]:  # a key written twice is listed once
                found.append(keys[index])
            index += 1
        return found


Scan = Callable[[str, bytes, bytes], Iterator[tuple[bytes, bytes]]]
"""(column family, prefix, start): committed entries with the prefix, from `start` on."""
Get = Callable[[str, bytes], bytes | None]


class Overlay:
    """Uncommitted writes of one batch, with savepoints. Single-threaded by design."""

    def __init__(
        self,
        get: Get,
        scan: Scan,
        codecs: Mapping[str, ValueCodec[Any]],
        queues: frozenset[str] = frozenset(),
    ) -> None:
        self._db_get = get
        self._db_scan = scan
        self._codecs = dict(codecs)
        self.writes: dict[str, dict[bytes, Any]] = {}
        """Column family -> key -> the value written in this batch, or DELETED."""
        self._read: dict[str, dict[bytes, Any]] = {}
        """Committed values decoded in this batch (ABSENT: RocksDB has none)."""
        self._fresh: set[tuple[str, bytes]] = set()
        """Keys RocksDB does not have, first written in this batch by an insert."""
        self._index: dict[str, _KeyIndex] = {}
        self._undo: list[list[tuple[str, bytes, object]]] = []
        self.ceilings: dict[str, bytes] = {}
        """Column family -> a key no committed entry is above; a family without one has no
        committed entry. RocksDB is not asked for a key above it, nor scanned for a prefix
        above it: most of a workflow's column families stay empty (no timers, no joins, no
        incidents), and most lookups that miss are of keys the batch just made (a new element
        instance, job, scope), which sort above everything committed before. Kept by the
        store: the last key of every family when it opened, raised to the greatest key each
        commit writes (never lowered: deletes leave it high, which only costs a lookup)."""
        self.rollbacks = 0
        """How often writes were undone (a savepoint rolled back, the batch discarded): what
        was read before may no longer hold."""
        self._floors: dict[str, dict[bytes, bytes | None]] = {cf: {} for cf in queues}
        """Queue column family -> scanned prefix -> a key no committed live entry of the
        prefix is below (None: the prefix has no committed live entry). Invariant: every
        write of a live entry lowers it first, and so does undoing a delete (a rolled-back
        write leaves it lower than needed, which is harmless); deletions never raise it; a
        scan raises it to the first committed entry it meets that this batch does not delete
        (valid once the batch commits: a discarded batch drops every floor). Scans seek
        there, past the deleted front of the queue, which RocksDB would otherwise step over
        tombstone by tombstone. Not persisted: a reopened store starts without floors."""

    def __len__(self) -> int:
        return sum(len(w) for w in self.writes.values())

    def get(self, cf: str, key: bytes) -> Any:
        """The live value of `key`: written in this batch, else committed; ABSENT if none."""
        writes = self.writes.get(cf)
        if writes is not None:
            value = writes.get(key, _NOT_WRITTEN)
            if value is not _NOT_WRITTEN:
                return ABSENT if value is DELETED else value
        return self._committed_value(cf, key)

    def _committed_value(self, cf: str, key: bytes) -> Any:
        read = self._read.get(cf)
        if read is None:
            read = self._read[cf] = {}
        else:
            value = read.get(key, _NOT_WRITTEN)
            if value is not _NOT_WRITTEN:
                return value
        ceiling = self.ceilings.get(cf)
        raw = None if ceiling is None or key > ceiling else self._db_get(cf, key)
        value = ABSENT if raw is None else self._codecs[cf].decode(raw)
        read[key] = value
        return value

    def insert(self, cf: str, key: bytes, value: Any) -> bool:
        """Write `key` if it has no live value; False (nothing written) when it has one."""
        writes = self.writes.get(cf)
        written = _NOT_WRITTEN if writes is None else writes.get(key, _NOT_WRITTEN)
        if written is _NOT_WRITTEN:
            if self._committed_value(cf, key) is not ABSENT:
                return False
            self._fresh.add((cf, key))  # a later delete in this batch need not reach RocksDB
        elif written is not DELETED:
            return False
        self.put(cf, key, value)
        return True

    def put(self, cf: str, key: bytes, value: Any) -> None:
        """Set `key` to `value` (DELETED deletes it)."""
        writes = self.writes.get(cf)
        if writes is None:
            writes = self.writes[cf] = {}
            self._index[cf] = _KeyIndex()
        previous = writes.get(key, _NOT_WRITTEN)
        if self._undo:
            self._undo[-1].append((cf, key, previous))
        if value is DELETED and (cf, key) in self._fresh:
            if previous is not _NOT_WRITTEN:  # inserted in this batch: as if never written
                del writes[key]
                self._index[cf].discard(key)
            return
        if previous is _NOT_WRITTEN:
            self._index[cf].add(key)
        writes[key] = value
        if value is not DELETED:
            floors = self._floors.get(cf)
            if floors:
                _lower_floors(floors, key)

    def encoded(self) -> Iterator[tuple[str, bytes, bytes | None]]:
        """(column family, key, encoded value or None for a delete) of every write that must
        reach RocksDB: deletes of keys RocksDB never had are left out."""
        fresh = self._fresh
        for cf, writes in self.writes.items():
            encode = self._codecs[cf].encode_checked  # checked when written
            for key, value in writes.items():
                if value is not DELETED:
                    yield cf, key, encode(value)
                elif (cf, key) not in fresh:
                    yield cf, key, None

    def scan(self, cf: str, prefix: bytes, *, values: bool = True) -> Iterator[tuple[bytes, Any]]:
        """Live entries whose key starts with `prefix`, in key order, overlay merged in, with
        their values (None for every value when `values` is False: nothing is decoded).

        The overlay's keys are taken when iteration starts; writes made while iterating are
        not visited.
        """
        decode = self._codecs[cf].decode if values else None
        floors = self._floors.get(cf)
        start = prefix if floors is None else floors.get(prefix, prefix)
        if start is None:  # a queue's prefix with no live entry, committed or written
            return
        writes = self.writes.get(cf)
        if not writes:
            for key, raw in self._committed(cf, prefix, start, floors, None):
                yield key, None if decode is None else decode(raw)
            return
        # a queue's live entries, written or committed, all lie at or above its floor: the
        # front this batch took (DELETED writes) below it is not walked again
        pending = [
            (k, writes[k]) for k in self._index[cf].with_prefix(prefix, start) if k in writes
        ]
        lowest_pending = next((k for k, v in pending if v is not DELETED), None)
        committed = self._committed(cf, prefix, start, floors, lowest_pending)
        index = 0
        for key, raw in committed:
            while index < len(pending) and pending[index][0] < key:
                own_key, own_value = pending[index]
                index += 1
                if own_value is not DELETED:
                    yield own_key, own_value
            if index < len(pending) and pending[index][0] == key:
                own_value = pending[index][1]
                index += 1
                if own_value is not DELETED:
                    yield key, own_value
                continue
            yield key, None if decode is None else decode(raw)
        for own_key, own_value in pending[index:]:
            if own_value is not DELETED:
                yield own_key, own_value

    def delete_prefix(self, cf: str, prefix: bytes) -> int:
        """Delete every live entry whose key starts with `prefix`; how many there were. Most
        calls find nothing (an ended element's variables, joins and triggers): with nothing
        written under the prefix and nothing committed from it on (the ceiling), no scan."""
        if cf not in self._floors:  # a queue's scan also moves its floor: the scan does that
            ceiling = self.ceilings.get(cf)
            if ceiling is None or prefix > ceiling:
                writes = self.writes.get(cf)
                if not writes or not self._index[cf].with_prefix(prefix):
                    return 0
        doomed = [key for key, _ in self.scan(cf, prefix, values=False)]
        for key in doomed:
            self.put(cf, key, DELETED)
        return len(doomed)

    def _committed(
        self,
        cf: str,
        prefix: bytes,
        start: bytes,
        floors: dict[bytes, bytes | None] | None,
        lowest_pending: bytes | None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Committed entries of the prefix from `start` on (the prefix, or a queue's floor,
        whose `floors` are raised to the first one met but not past a live entry this batch
        is about to commit)."""
        ceiling = self.ceilings.get(cf)
        if ceiling is None or start > ceiling:  # every key from `start` on sorts above it
            if floors is not None and ceiling is not None:
                floors[prefix] = lowest_pending  # nothing committed in the prefix from here
            return iter(())
        entries = self._db_scan(cf, prefix, start)
        if floors is None:
            return entries
        return self._raising_floor(floors, prefix, entries, lowest_pending, self.writes.get(cf))

    @staticmethod
    def _raising_floor(
        floors: dict[bytes, bytes | None],
        prefix: bytes,
        entries: Iterator[tuple[bytes, bytes]],
        lowest_pending: bytes | None,
        writes: dict[bytes, Any] | None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Raises the floor to each committed entry met while this batch deletes the ones
        before it, so the next scan of the prefix in the batch seeks past the front this
        batch has taken (a job type's queue, emptied by one push per completed job, would
        otherwise be walked from its old front by every push: quadratic in the batch)."""
        for key, value in entries:
            floors[prefix] = key if lowest_pending is None else min(key, lowest_pending)
            yield key, value
            if writes is None or writes.get(key) is not DELETED:
                break
        else:
            floors[prefix] = lowest_pending  # nothing committed in the prefix from the floor
            return
        yield from entries

    # -- savepoints ---------------------------------------------------------------------------

    def savepoint(self) -> None:
        """Mark the current overlay; `rollback_to_savepoint` returns to it."""
        self._undo.append([])

    def rollback_to_savepoint(self) -> None:
        """Undo every write since the last savepoint and drop that savepoint."""
        if not self._undo:
            raise SavepointError("rollback_to_savepoint without a savepoint")
        self.rollbacks += 1
        for cf, key, previous in reversed(self._undo.pop()):
            writes = self.writes[cf]
            floors = self._floors.get(cf)
            if floors and previous is not DELETED:  # the entry may be live again
                _lower_floors(floors, key)
            if previous is _NOT_WRITTEN:
                writes.pop(key, None)
            else:
                if key not in writes:  # a deleted insert, dropped from the batch
                    self._index[cf].add(key)
                writes[key] = previous

    def release_savepoint(self) -> None:
        """Keep the writes since the last savepoint; they join the enclosing savepoint, if any."""
        if not self._undo:
            raise SavepointError("release_savepoint without a savepoint")
        released = self._undo.pop()
        if self._undo:
            self._undo[-1].extend(released)

    def discard(self) -> None:
        """Drop every write of the batch (a rollback); floors raised past its deletes go."""
        self.rollbacks += 1
        for floors in self._floors.values():
            floors.clear()
        self.clear()

    def clear(self) -> None:
        self.writes.clear()
        self._read.clear()
        self._fresh.clear()
        self._index.clear()
        self._undo.clear()


def _lower_floors(floors: dict[bytes, bytes | None], key: bytes) -> None:
    """Keep every floor at or below `key`, which may now be a live entry of its prefix."""
    for prefix, floor in floors.items():
        if (floor is None or key < floor) and key.startswith(prefix):
            floors[prefix] = key
