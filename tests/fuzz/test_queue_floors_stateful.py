"""Queue column families against a model: upserts, deletions, commits, savepoints,
rollbacks and discarded batches in any order (moved from tests/unit/state/test_queue_floors.py:
property tests live under tests/fuzz)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from partita.state import PartitionDb
from tests.support.queue_columns import ACTIVATABLE

_TYPES = st.sampled_from(["a", "b"])
_KEYS = st.integers(min_value=0, max_value=40)


class QueueMachine(RuleBasedStateMachine):
    """Upserts, deletions, commits, savepoints, rollbacks and discarded batches in any order:
    every scan of every prefix sees exactly the model's entries."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.folder = tempfile.TemporaryDirectory()
        self.db = PartitionDb(Path(self.folder.name) / "db")
        self.jobs = self.db.column(ACTIVATABLE)
        self.model: set[tuple[str, int]] = set()
        self.committed: set[tuple[str, int]] = set()
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
        self.committed = set(self.model)

    @rule()
    def discard_batch(self) -> None:
        self.db.rollback()  # an aborted batch: its savepoints go with it
        self.model = set(self.committed)
        self.saved.clear()

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
