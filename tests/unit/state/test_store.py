"""The partition store: Zeebe's column family semantics, overlay, savepoints, commits,
checkpoints, digest and the key generator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from partita.protocol.keys import encode_key
from partita.state import ColumnFamilies as CF  # noqa: N817 - reads like Zeebe's ZbColumnFamilies
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_PROCESSED_POSITION, STATE_FORMAT, STATE_FORMAT_KEY
from partita.state.errors import (
    EncodingError,
    KeyExistsError,
    KeyNotFoundError,
    SavepointError,
    StateError,
)
from partita.state.migrate import open_current


@pytest.fixture
def db(tmp_path: Path) -> PartitionDb:
    store = PartitionDb(tmp_path / "partition-1")
    yield store  # type: ignore[misc]
    store.close()


def test_insert_update_delete_semantics_name_the_column_family_and_key(db: PartitionDb) -> None:
    variables = db.column(CF.VARIABLE)
    variables.insert((1, "x"), "1")
    with pytest.raises(
        KeyExistsError,
        match=r"insert of an existing key: key \(1, 'x'\) in column family 'variable'",
    ):
        variables.insert((1, "x"), "2")
    with pytest.raises(KeyNotFoundError, match="update of a missing key"):
        variables.update((1, "y"), "2")
    with pytest.raises(KeyNotFoundError, match="delete_existing of a missing key"):
        variables.delete_existing((2, "x"))
    variables.update((1, "x"), "3")
    variables.upsert((1, "y"), "4")
    variables.delete((9, "nothing"))  # never fails
    assert variables.get((1, "x")) == "3"
    assert variables.count() == 2 and not variables.is_empty()
    variables.delete_existing((1, "x"))
    assert variables.get((1, "x")) is None


def test_prefix_iteration_merges_overlay_and_committed_state_in_key_order(db: PartitionDb) -> None:
    children = db.column(CF.ELEMENT_INSTANCE_CHILDREN)
    for child in (30, 10, 50):
        children.insert((7, child), None)
    children.insert((8, 1), None)
    db.commit()
    children.insert((7, 20), None)  # overlay only
    children.delete((7, 30))  # deleted in the overlay

    seen = [child for (_, child), _ in children.items(CF.ELEMENT_INSTANCE_CHILDREN.key.prefix(7))]
    assert seen == [10, 20, 50]


def test_savepoints_roll_back_one_command_inside_a_batch(db: PartitionDb) -> None:
    jobs = db.column(CF.JOB_STATE)
    jobs.insert(1, "ACTIVATABLE")
    db.overlay.savepoint()
    jobs.update(1, "ACTIVATED")
    jobs.insert(2, "ACTIVATABLE")
    db.overlay.rollback_to_savepoint()
    assert jobs.get(1) == "ACTIVATABLE" and jobs.get(2) is None
    db.overlay.savepoint()
    jobs.insert(3, "FAILED")
    db.overlay.release_savepoint()
    db.commit()
    assert [k for k, _ in jobs.items()] == [1, 3]
    with pytest.raises(SavepointError):
        db.overlay.rollback_to_savepoint()


def test_commit_writes_positions_and_survives_reopen_rollback_discards(tmp_path: Path) -> None:
    path = tmp_path / "p"
    with PartitionDb(path) as db:
        db.column(CF.BANNED_INSTANCE).insert(42, None)
        db.commit(last_processed_position=100, last_applied_position=120)
        db.column(CF.BANNED_INSTANCE).insert(43, None)
        db.rollback()
    with PartitionDb(path) as db:
        assert [k for k, _ in db.column(CF.BANNED_INSTANCE).items()] == [42]
        assert db.position("last_processed_position") == 100
        assert db.position("last_applied_position") == 120


def test_checkpoint_opens_with_the_same_digest_and_digest_tracks_state(tmp_path: Path) -> None:
    with PartitionDb(tmp_path / "p") as db:
        db.column(CF.VARIABLE).insert((1, "a"), '"x"')
        db.column(CF.JOB_STATE).insert(5, "ACTIVATABLE")
        db.commit()
        digest = db.digest()
        db.checkpoint(tmp_path / "cp")
        with pytest.raises(StateError, match="already exists"):
            db.checkpoint(tmp_path / "cp")
        db.column(CF.VARIABLE).upsert((1, "a"), '"y"')
        with pytest.raises(StateError, match="uncommitted"):
            db.checkpoint(tmp_path / "cp2")
        db.commit()
        assert db.digest() != digest
    with PartitionDb.open_checkpoint(tmp_path / "cp", tmp_path / "restored") as restored:
        assert restored.digest() == digest
        assert restored.column(CF.VARIABLE).get((1, "a")) == '"x"'


def test_key_generator_survives_restart_rollback_and_replay(tmp_path: Path) -> None:
    with PartitionDb(tmp_path / "p") as db:
        keys = KeyGenerator(db, partition_id=3)
        first = keys.next_key()
        assert first == encode_key(3, 1)
        db.commit()
        keys.next_key()
        db.rollback()  # the rolled-back command gives its key back
        assert keys.next_key() == encode_key(3, 2)
        keys.set_key_if_higher(encode_key(3, 40))  # replayed a record with a higher key
        keys.set_key_if_higher(encode_key(4, 99))  # another partition's key: ignored
        db.commit()
    with PartitionDb(tmp_path / "p") as db:
        assert KeyGenerator(db, 3).next_key() == encode_key(3, 41)


def test_a_second_open_of_a_locked_store_is_a_clear_error(db: PartitionDb) -> None:
    with pytest.raises(StateError, match="cannot open the state store"):
        PartitionDb(db.path)


def test_a_store_of_a_layout_that_cannot_be_upgraded_is_deleted_to_be_rebuilt(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p"
    with PartitionDb(path) as fresh:
        assert fresh.state_format == STATE_FORMAT  # a new store records its layout
    with PartitionDb(path) as db:  # an old build's store: data, but no layout recorded
        db.meta.delete(STATE_FORMAT_KEY)
        db.column(CF.JOB_STATE).upsert(7, "ACTIVATABLE")
        db.commit(last_processed_position=41, last_applied_position=40)
        assert db.state_format is None
    with open_current(path) as reopened:
        assert reopened.position(LAST_PROCESSED_POSITION) == -1  # empty: replay from the log
        assert reopened.column(CF.JOB_STATE).get(7) is None
        assert reopened.state_format == STATE_FORMAT
    with PartitionDb(path) as db:
        db.commit(last_processed_position=3)
    with open_current(path) as kept:  # the current layout is kept as it is
        assert kept.position(LAST_PROCESSED_POSITION) == 3


def test_the_overlay_keeps_decoded_values_and_drops_writes_that_cancel_out(
    db: PartitionDb,
) -> None:
    """A batch reads its own writes as the values it wrote (no encode/decode round trip), a
    committed value read twice is decoded once, and a key inserted and deleted again inside
    the batch is not written at all (RocksDB never had it)."""
    jobs = db.column(CF.JOB_STATE)
    children = db.column(CF.ELEMENT_INSTANCE_CHILDREN)
    state = "".join(["ACTIV", "ATED"])  # a new object, not an interned literal
    jobs.upsert(1, state)
    assert jobs.get(1) is state
    assert db.commit() == 1
    first = jobs.get(1)
    assert first == "ACTIVATED" and first is not state  # decoded from RocksDB
    assert jobs.get(1) is first  # and only once in the batch
    children.insert((7, 1), None)
    children.delete((7, 1))  # inserted and deleted in the batch: nothing to write
    jobs.insert(2, "ACTIVATABLE")
    jobs.delete_existing(2)
    jobs.delete(1)  # committed before: the delete must reach RocksDB
    assert db.commit() == 1
    assert jobs.get(1) is None and jobs.get(2) is None and children.is_empty()
    jobs.upsert(3, "ACTIVATABLE")
    db.commit()
    jobs.delete(3)
    jobs.insert(3, "FAILED")  # deleted then inserted: RocksDB had it, the put is written
    jobs.delete(3)  # and so is this delete
    assert db.commit() == 1
    assert jobs.get(3) is None
    with pytest.raises(EncodingError, match="it is a int, not a str"):
        jobs.upsert(4, 5)  # type: ignore[arg-type]  # refused when written, not at commit


def test_the_key_counter_follows_replayed_keys_through_rollbacks(db: PartitionDb) -> None:
    """Replay raises the counter past every key of the partition it sees, ignores other
    partitions' keys, and after a rollback raises it again for a key it had seen."""
    keys = KeyGenerator(db, partition_id=2)
    keys.set_key_if_higher(encode_key(2, 10))
    keys.set_key_if_higher(encode_key(2, 4))  # lower: nothing changes
    keys.set_key_if_higher(encode_key(5, 99))  # another partition's
    keys.set_key_if_higher(-1)
    db.overlay.savepoint()
    keys.set_key_if_higher(encode_key(2, 20))
    db.overlay.rollback_to_savepoint()  # the counter is back at 11
    keys.set_key_if_higher(encode_key(2, 15))
    assert keys.next_key() == encode_key(2, 16)
    db.rollback()  # the whole batch: back to 1
    keys.set_key_if_higher(encode_key(2, 12))
    assert keys.next_key() == encode_key(2, 13)


def test_noted_keys_raise_the_counter_only_when_written(db: PartitionDb) -> None:
    """Replay notes its events' keys and writes the highest before it commits: until then the
    counter has not moved; other partitions' keys and non-keys are never noted."""
    keys = KeyGenerator(db, partition_id=2)
    for key in (encode_key(2, 30), encode_key(2, 7), encode_key(5, 99), -1, 0):
        keys.note_key(key)
    keys.write_noted()
    assert keys.next_key() == encode_key(2, 31)
    keys.note_key(encode_key(2, 50))
    assert keys.next_key() == encode_key(2, 32)  # noted, not written yet
    keys.write_noted()
    keys.write_noted()  # nothing noted since: no change
    assert keys.next_key() == encode_key(2, 51)
    keys.note_key(encode_key(2, 40))  # lower than the counter: written, changes nothing
    keys.write_noted()
    assert keys.next_key() == encode_key(2, 52)


def test_rocksdb_is_not_asked_for_keys_above_everything_committed(tmp_path: Path) -> None:
    """The overlay knows, per column family, a key no committed entry lies above (the last
    key when the store opened, raised by every commit). A lookup or a prefix scan above it
    is answered without RocksDB: what a batch asks of the element instances, jobs and scopes
    it just made. Below it, RocksDB answers as before, also after a reopen."""
    store = PartitionDb(tmp_path / "p")
    asked: list[tuple[str, bytes]] = []
    real_get = store.overlay._db_get

    def counting_get(cf: str, key: bytes) -> bytes | None:
        asked.append((cf, key))
        return real_get(cf, key)

    try:
        store.overlay._db_get = counting_get
        jobs = store.column(CF.JOB_STATE)
        children = store.column(CF.ELEMENT_INSTANCE_CHILDREN)
        assert jobs.get(5) is None and asked == []  # nothing committed in the family at all
        jobs.upsert(5, "ACTIVATABLE")
        children.upsert((10, 5), None)
        store.commit()
        assert jobs.get(6) is None and asked == []  # above the ceiling: a new job
        assert list(children.items(CF.ELEMENT_INSTANCE_CHILDREN.key.prefix(11))) == []
        assert jobs.get(4) is None and len(asked) == 1  # below it: RocksDB says
        jobs.insert(6, "ACTIVATED")  # an insert checks the same way
        jobs.delete(5)
        store.commit()  # the ceiling stays at 6 after the delete
        assert jobs.get(5) is None and len(asked) == 2
        assert jobs.get(6) == "ACTIVATED"
    finally:
        store.close()
    reopened = PartitionDb(tmp_path / "p")  # the ceiling is the last committed key again
    try:
        assert reopened.column(CF.JOB_STATE).get(6) == "ACTIVATED"
        assert list(reopened.column(CF.ELEMENT_INSTANCE_CHILDREN).items()) == [((10, 5), None)]
        assert reopened.overlay.ceilings[CF.JOB_STATE.name] == CF.JOB_STATE.key.encode(6)
        assert CF.TIMER.name not in reopened.overlay.ceilings  # never written: never asked
    finally:
        reopened.close()


def test_delete_prefix_removes_written_and_committed_entries_and_skips_empty_ones(
    tmp_path: Path,
) -> None:
    """`delete_prefix` deletes every live entry under the prefix, written in the batch or
    committed, and says how many; a prefix with nothing written under it and above every
    committed key (an element that ends without variables) is answered without a scan."""
    store = PartitionDb(tmp_path / "p")
    children = store.column(CF.ELEMENT_INSTANCE_CHILDREN)
    prefix = CF.ELEMENT_INSTANCE_CHILDREN.key.prefix
    scans: list[bytes] = []
    real_scan = store.overlay.scan

    def counting_scan(cf: str, start: bytes, **kwargs: bool) -> Any:
        scans.append(start)
        return real_scan(cf, start, **kwargs)

    try:
        children.upsert((10, 1), None)
        children.upsert((10, 2), None)
        children.upsert((11, 3), None)
        store.commit()
        store.overlay.scan = counting_scan  # type: ignore[method-assign]
        children.upsert((10, 4), None)  # written in this batch, beside committed ones
        assert children.delete_prefix(prefix(10)) == 3
        assert children.delete_prefix(prefix(12)) == 0  # above the ceiling, nothing written
        assert scans == [prefix(10)]
        children.upsert((12, 5), None)
        assert children.delete_prefix(prefix(12)) == 1  # written: found without RocksDB
        assert children.delete_prefix(prefix(9)) == 0  # below the ceiling: RocksDB says
        assert scans == [prefix(10), prefix(12), prefix(9)]
        store.commit()
        assert list(children.items()) == [((11, 3), None)]
    finally:
        store.close()
