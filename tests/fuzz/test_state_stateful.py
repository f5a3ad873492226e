"""Hypothesis drives the store (writes, inserts, savepoints, commits, rollbacks, reopen) and
compares every read, of present and absent keys and prefix scans included, with a plain dict
model. Negative scopes sort above positive ones in the key encoding, so the committed keys'
ceiling (partita.state.overlay.Overlay.ceilings) is crossed both ways."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from partita.state import ColumnFamilies, PartitionDb
from partita.state.errors import KeyExistsError

CF = ColumnFamilies.VARIABLE  # composite (scope key, name) -> str
SCOPES = st.integers(min_value=-2, max_value=3)
NAMES = st.sampled_from(["", "a", "ab", "b", "a\x00", "ü"])
VALUES = st.text(max_size=4)

Model = dict[tuple[int, str], str]


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.db = PartitionDb(self.dir / "p")
        self.committed: Model = {}
        self.current: Model = {}
        self.savepoints: list[Model] = []

    @rule(scope=SCOPES, name=NAMES, value=VALUES)
    def upsert(self, scope: int, name: str, value: str) -> None:
        self.db.column(CF).upsert((scope, name), value)
        self.current[(scope, name)] = value

    @rule(scope=SCOPES, name=NAMES)
    def delete(self, scope: int, name: str) -> None:
        self.db.column(CF).delete((scope, name))
        self.current.pop((scope, name), None)

    @rule(scope=SCOPES, name=NAMES, value=VALUES)
    def insert(self, scope: int, name: str, value: str) -> None:
        key = (scope, name)
        try:
            self.db.column(CF).insert(key, value)
        except KeyExistsError:
            assert key in self.current
        else:
            assert key not in self.current
            self.current[key] = value

    @rule()
    def savepoint(self) -> None:
        self.db.overlay.savepoint()
        self.savepoints.append(dict(self.current))

    @precondition(lambda self: self.savepoints)
    @rule()
    def rollback_to_savepoint(self) -> None:
        self.db.overlay.rollback_to_savepoint()
        self.current = self.savepoints.pop()

    @precondition(lambda self: self.savepoints)
    @rule()
    def release_savepoint(self) -> None:
        self.db.overlay.release_savepoint()
        self.savepoints.pop()

    @rule()
    def commit(self) -> None:
        self.db.commit()
        self.committed = dict(self.current)
        self.savepoints.clear()

    @rule()
    def rollback(self) -> None:
        self.db.rollback()
        self.current = dict(self.committed)
        self.savepoints.clear()

    @rule()
    def reopen(self) -> None:
        self.db.close()
        self.db = PartitionDb(self.dir / "p")
        self.current = dict(self.committed)
        self.savepoints.clear()

    @invariant()
    def reads_match_the_model(self) -> None:
        column = self.db.column(CF)
        for scope in range(-2, 4):
            for name in ["", "a", "ab", "b", "a\x00", "ü"]:
                assert column.get((scope, name)) == self.current.get((scope, name))
        expected = sorted(self.current.items(), key=lambda kv: (kv[0][0], kv[0][1].encode()))
        assert list(column.items()) == expected
        assert column.count() == len(expected)
        for scope in range(-2, 4):
            prefix = CF.key.prefix(scope)
            assert list(column.items(prefix)) == [kv for kv in expected if kv[0][0] == scope]

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)


StoreMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestStore = StoreMachine.TestCase
