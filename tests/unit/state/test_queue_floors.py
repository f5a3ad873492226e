"""Queue column families (activatable jobs, due dates) scan from past their deleted front, and
never miss an entry: not one written below the front later, not one a rolled-back deletion
brings back, not one written after the queue ran empty. Checked against the entries a plain
scan of RocksDB sees."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.state import ColumnFamilies, PartitionDb
from partita.state.overlay import _KeyIndex
from tests.support.queue_columns import ACTIVATABLE

QUEUE = ColumnFamilies.JOB_DEADLINE


def _keys(db: PartitionDb) -> list[tuple[int, int]]:
    return [key for key, _ in db.column(QUEUE).items()]


def test_a_drained_front_is_skipped_and_later_entries_below_it_are_still_found(
    tmp_path: Path,
) -> None:
    with PartitionDb(tmp_path / "db") as db:
        queue = db.column(QUEUE)
        for n in range(1, 101):
            queue.upsert((n, n), None)
        db.commit()
        for n in range(1, 91):
            queue.delete((n, n))
        db.commit()
        assert _keys(db) == [(n, n) for n in range(91, 101)]  # the floor is now (91, 91)
        queue.upsert((5, 5), None)  # below the floor
        assert _keys(db)[0] == (5, 5)
        db.commit()
        assert _keys(db) == [(5, 5)] + [(n, n) for n in range(91, 101)]


def test_a_rolled_back_deletion_brings_its_entries_back(tmp_path: Path) -> None:
    with PartitionDb(tmp_path / "db") as db:
        queue = db.column(QUEUE)
        for n in range(1, 11):
            queue.upsert((n, n), None)
        db.commit()
        db.overlay.savepoint()
        for n in range(1, 6):
            queue.delete((n, n))
        assert _keys(db)[0] == (6, 6)
        db.overlay.rollback_to_savepoint()
        assert _keys(db) == [(n, n) for n in range(1, 11)]


def test_an_empty_queue_sees_what_is_written_next_and_prefixes_keep_their_own_floor(
    tmp_path: Path,
) -> None:
    with PartitionDb(tmp_path / "db") as db:
        jobs = db.column(ACTIVATABLE)
        for key in range(10):
            jobs.upsert(("a", key), None)
        db.commit()
        for key in range(10):
            jobs.delete(("a", key))
        db.commit()
        prefix_a = ACTIVATABLE.key.prefix("a")
        prefix_b = ACTIVATABLE.key.prefix("b")
        assert list(jobs.items(prefix_a)) == []  # floor: empty
        jobs.upsert(("b", 3), None)
        db.commit()
        assert list(jobs.items(prefix_a)) == []
        assert [k for k, _ in jobs.items(prefix_b)] == [("b", 3)]
        jobs.upsert(("a", 2), None)
        db.commit()
        assert [k for k, _ in jobs.items(prefix_a)] == [("a", 2)]
        raw = [k for k, _ in db._db_scan(ACTIVATABLE.name, b"")]
        assert len(raw) == 2  # what RocksDB holds, read without floors


def _counting_scans(db: PartitionDb) -> list[int]:
    """How many entries RocksDB yields to the overlay's scans, counted from now on."""
    yielded = [0]
    scan = db.overlay._db_scan

    def counted(cf: str, prefix: bytes, start: bytes) -> Iterator[tuple[bytes, bytes]]:
        for entry in scan(cf, prefix, start):
            yielded[0] += 1
            yield entry

    db.overlay._db_scan = counted
    return yielded


def test_taking_a_queue_front_by_front_in_one_batch_reads_each_entry_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that pushes one job per completed job takes the front of the activatable queue
    again and again: each scan starts past the entries the batch already took, instead of
    walking them all again (quadratic in the batch)."""
    with PartitionDb(tmp_path / "db") as db:
        jobs = db.column(ACTIVATABLE)
        for key in range(300):
            jobs.upsert(("t", key), None)
        db.commit()
        yielded = _counting_scans(db)
        prefix = ACTIVATABLE.key.prefix("t")
        jobs.upsert(("t", 1000), None)  # the batch's writes: one live entry, then the deletes
        with_prefix = _KeyIndex.with_prefix
        merged = [0]  # the batch's own writes each scan merges in

        def counted(index: _KeyIndex, prefix: bytes, start: bytes | None = None) -> list[bytes]:
            keys = (
                with_prefix(index, prefix) if start is None else with_prefix(index, prefix, start)
            )
            merged[0] += len(keys)
            return keys

        monkeypatch.setattr(_KeyIndex, "with_prefix", counted)
        taken = []
        for _ in range(200):
            front = next(iter(jobs.items(prefix)))[0]
            jobs.delete(front)
            taken.append(front[1])
        assert taken == list(range(200))
        assert yielded[0] <= 2 * 200, yielded[0]
        assert merged[0] <= 3 * 200, merged[0]
        db.rollback()  # the batch is discarded: every entry is queued again
        assert [k for k, _ in jobs.items(prefix)] == [("t", key) for key in range(300)]
        jobs.upsert(("t", 1000), None)
        for _ in range(200):
            jobs.delete(next(iter(jobs.items(prefix)))[0])
        db.commit()
        left = [k for k, _ in jobs.items(prefix)]
        assert left == [("t", key) for key in range(200, 300)] + [("t", 1000)]
