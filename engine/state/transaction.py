"""The in-memory overlay that gives a batch read-your-writes over RocksDB.

Writes land in a per-column-family dict (`None` marks a delete). Reads look at the overlay
first; prefix iteration merges the overlay's keys with RocksDB's in key order and hides deletes.
Savepoints record the previous overlay entry of every key written after them, so one command's
changes can be undone inside a batch. Nothing reaches RocksDB until `PartitionDb.commit`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator

from engine.state.errors import SavepointError

_ABSENT = object()
_RECENT_LIMIT = 64


class _KeyIndex:
    """The keys written to one column family in a batch, findable by prefix without looking
    at all of them: a sorted list plus a short unsorted tail merged into it now and then.
    May hold keys a savepoint rollback removed again (scans check the writes)."""

    __slots__ = ("recent", "sorted")

    def __init__(self) -> None:
        self.sorted: list[bytes] = []
        self.recent: list[bytes] = []

    def add(self, key: bytes) -> None:
        self.recent.append(key)
        if len(self.recent) > _RECENT_LIMIT:
            self.sorted = sorted(self.sorted + self.recent)
            self.recent = []

    def with_prefix(self, prefix: bytes) -> list[bytes]:
        found = [k for k in self.recent if k.startswith(prefix)]
        keys = self.sorted
        index = bisect_left(keys, prefix)
        while index < len(keys) and keys[index].startswith(prefix):
            found.append(keys[index])
            index += 1
        return sorted(set(found))


Scan = Callable[[str, bytes, bytes], Iterator[tuple[bytes, bytes]]]
"""(column family, prefix, start): committed entries with the prefix, from `start` on."""
Get = Callable[[str, bytes], bytes | None]


class Overlay:
    """Uncommitted writes of one batch, with savepoints. Single-threaded by design."""

    def __init__(self, get: Get, scan: Scan, queues: frozenset[str] = frozenset()) -> None:
        self._db_get = get
        self._db_scan = scan
        self.writes: dict[str, dict[bytes, bytes | None]] = {}
        self._index: dict[str, _KeyIndex] = {}
        self._undo: list[list[tuple[str, bytes, object]]] = []
        self._floors: dict[str, dict[bytes, bytes | None]] = {cf: {} for cf in queues}
        """Queue column family -> scanned prefix -> a key no committed live entry of the
        prefix is below (None: the prefix has no committed live entry). Invariant: every
        write of a live entry lowers it first (a rolled-back write leaves it lower than
        needed, which is harmless); deletions never raise it; a scan raises it to the first
        committed entry it meets. Scans seek there, past the deleted front of the queue,
        which RocksDB would otherwise step over tombstone by tombstone. Not persisted: a
        reopened store starts without floors."""

    def __len__(self) -> int:
        return sum(len(w) for w in self.writes.values())

    def get(self, cf: str, key: bytes) -> bytes | None:
        writes = self.writes.get(cf)
        if writes is not None and key in writes:
            return writes[key]
        return self._db_get(cf, key)

    def put(self, cf: str, key: bytes, value: bytes | None) -> None:
        """Set `key` to `value`; `None` deletes it."""
        writes = self.writes.get(cf)
        if writes is None:
            writes = self.writes[cf] = {}
            self._index[cf] = _KeyIndex()
        previous = writes.get(key, _ABSENT)
        if previous is _ABSENT:
            self._index[cf].add(key)
        if self._undo:
            self._undo[-1].append((cf, key, previous))
        writes[key] = value
        if value is not None:
            floors = self._floors.get(cf)
            if floors:
                for prefix, floor in floors.items():
                    if (floor is None or key < floor) and key.startswith(prefix):
                        floors[prefix] = key

    def scan(self, cf: str, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Live entries whose key starts with `prefix`, in key order, overlay merged in.

        The overlay's keys are taken when iteration starts; writes made while iterating are
        not visited.
        """
        writes = self.writes.get(cf)
        if not writes:
            yield from self._committed(cf, prefix, None)
            return
        pending = [(k, writes[k]) for k in self._index[cf].with_prefix(prefix) if k in writes]
        lowest_pending = next((k for k, v in pending if v is not None), None)
        committed = self._committed(cf, prefix, lowest_pending)
        index = 0
        for key, value in committed:
            while index < len(pending) and pending[index][0] < key:
                own_key, own_value = pending[index]
                index += 1
                if own_value is not None:
                    yield own_key, own_value
            if index < len(pending) and pending[index][0] == key:
                own_value = pending[index][1]
                index += 1
                if own_value is not None:
                    yield key, own_value
                continue
            yield key, value
        for own_key, own_value in pending[index:]:
            if own_value is not None:
                yield own_key, own_value

    def _committed(
        self, cf: str, prefix: bytes, lowest_pending: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Committed entries of the prefix; for a queue, from its floor on, raising the floor
        to the first one met (but not past a live entry this batch is about to commit)."""
        floors = self._floors.get(cf)
        if floors is None:
            return self._db_scan(cf, prefix, prefix)
        start = floors.get(prefix, prefix)
        if start is None:
            floors[prefix] = lowest_pending
            return iter(())
        entries = self._db_scan(cf, prefix, start)
        return self._raising_floor(floors, prefix, entries, lowest_pending)

    @staticmethod
    def _raising_floor(
        floors: dict[bytes, bytes | None],
        prefix: bytes,
        entries: Iterator[tuple[bytes, bytes]],
        lowest_pending: bytes | None,
    ) -> Iterator[tuple[bytes, bytes]]:
        for key, value in entries:
            floors[prefix] = key if lowest_pending is None else min(key, lowest_pending)
            yield key, value
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
        for cf, key, previous in reversed(self._undo.pop()):
            writes = self.writes[cf]
            if previous is _ABSENT:
                del writes[key]
            else:
                writes[key] = previous  # type: ignore[assignment]

    def release_savepoint(self) -> None:
        """Keep the writes since the last savepoint; they join the enclosing savepoint, if any."""
        if not self._undo:
            raise SavepointError("release_savepoint without a savepoint")
        released = self._undo.pop()
        if self._undo:
            self._undo[-1].extend(released)

    def clear(self) -> None:
        self.writes.clear()
        self._index.clear()
        self._undo.clear()
