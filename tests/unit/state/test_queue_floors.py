"""Queue column families (activatable jobs, due dates) scan from past their deleted front, and
never miss an entry: not one written below the front later, not one a rolled-back deletion
brings back, not one written after the queue ran empty. Checked against the entries a plain
scan of RocksDB sees."""

from __future__ import annotations

from pathlib import Path

from engine.state import ColumnFamilies, PartitionDb

QUEUE = ColumnFamilies.JOB_DEADLINE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE


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


# -- random operations against a model ---------------------------------------------------------

from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule  # noqa: E402

_TYPES = st.sampled_from(["a", "b"])
_KEYS = st.integers(min_value=0, max_value=40)


class QueueMachine(RuleBasedStateMachine):
    """Upserts, deletions, commits, savepoints and rollbacks in any order: every scan of every
    prefix sees exactly the model's entries."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.folder = tempfile.TemporaryDirectory()
        self.db = PartitionDb(Path(self.folder.name) / "db")
        self.jobs = self.db.column(ACTIVATABLE)
        self.model: set[tuple[str, int]] = set()
        self.saved: list[set[tuple[str, int]]] = []

    @rule(job_type=_TYPES, key=_KEYS)
    def add(self, job_type: str, key: int) -> None:
        self.jobs.upsert((job_type, key), None)
        self.model.add((job_type, key))

    @rule(job_type=_TYPES, key=_KEYS)
    def remove(self, job_type: str, key: int) -> None:
        self.jobs.delete((job_type, key))
        self.model.discard((job_type, key))

    @rule(job_type=_TYPES, count=st.integers(min_value=1, max_value=10))
    def take_front(self, job_type: str, count: int) -> None:
        front = [k for k, _ in self.jobs.items(ACTIVATABLE.key.prefix(job_type))][:count]
        for key in front:
            self.jobs.delete(key)
            self.model.discard(key)

    @precondition(lambda self: not self.saved)
    @rule()
    def commit(self) -> None:
        self.db.commit()

    @rule()
    def savepoint(self) -> None:
        self.db.overlay.savepoint()
        self.saved.append(set(self.model))

    @precondition(lambda self: bool(self.saved))
    @rule()
    def rollback(self) -> None:
        self.db.overlay.rollback_to_savepoint()
        self.model = self.saved.pop()

    @precondition(lambda self: bool(self.saved))
    @rule()
    def release(self) -> None:
        self.db.overlay.release_savepoint()
        self.saved.pop()

    @invariant()
    def scans_match_the_model(self) -> None:
        for job_type in ("a", "b"):
            seen = [k for k, _ in self.jobs.items(ACTIVATABLE.key.prefix(job_type))]
            assert seen == sorted(k for k in self.model if k[0] == job_type)

    def teardown(self) -> None:
        self.db.close()
        self.folder.cleanup()


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
