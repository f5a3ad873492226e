"""Upgrading a store an older build wrote. The fixture is a real layout-2 store: the build of
commit ea3d9cc left it with instances, jobs (activated, failed, backing off), incidents, a
timer, message subscriptions and buffered messages in flight, next to the log that produced
it (tests/fixtures/state/generate_layout2.py says how it was made)."""

from __future__ import annotations

import base64
import json
import logging
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rocksdict import Options, Rdict

from partita.processing.builtin import build_engine
from partita.protocol.enums import BpmnElementType, ErrorType, RecordType
from partita.state import ColumnFamilies as CF  # noqa: N817 - reads like Zeebe's ZbColumnFamilies
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_PROCESSED_POSITION, STATE_FORMAT
from partita.state.errors import EncodingError, StateError, StoreLockedError
from partita.state.migrate import open_current, readable
from partita.state.stored import ElementInstance, Incident, Job
from tests.support.memory import CODEC
from tests.support.paths import STATE_FIXTURES

FIXTURE = STATE_FIXTURES / "layout-2.tar.gz"


@pytest.fixture
def layout2(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "store", json.loads((tmp_path / "log.json").read_text())


def _replayed_digest(log: dict[str, Any], home: Path) -> str:
    """The digest of the state this build rebuilds from the fixture's log (events only)."""
    engine = build_engine()
    with PartitionDb(home / "replayed") as fresh:
        keys = KeyGenerator(fresh, 1)
        for entry in log["records"]:
            record = CODEC.decode(base64.b64decode(entry["value"]), offset=entry["offset"])
            if record.record_type is RecordType.EVENT:
                engine.apply(record, fresh)
                keys.set_key_if_higher(record.key)
        fresh.commit()
        return fresh.digest()


def test_a_layout_2_store_upgrades_to_the_state_this_build_replays_from_its_log(
    layout2: tuple[Path, dict[str, Any]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, log = layout2
    assert "await_result" in Rdict.list_cf(str(store))  # layout 2 had it
    with PartitionDb(store) as old:
        assert old.state_format == 2
        with pytest.raises(EncodingError, match="expects value version 2, found 1"):
            old.position(LAST_PROCESSED_POSITION)  # layout 2's values are not read as layout 3's
    caplog.set_level(logging.INFO, "partita.state")
    with open_current(store) as upgraded:
        assert upgraded.state_format == STATE_FORMAT
        assert upgraded.digest() == _replayed_digest(log, tmp_path)
        assert upgraded.position(LAST_PROCESSED_POSITION) == len(log["records"]) - 1
        instances = dict(upgraded.column(CF.ELEMENT_INSTANCE).items())
        jobs = dict(upgraded.column(CF.JOB).items())
        incidents = list(upgraded.column(CF.INCIDENT).items())
    assert len(instances) == 29 and len(jobs) == 9 and len(incidents) == 5
    assert all(isinstance(i, ElementInstance) for i in instances.values())
    assert {i.element_type for i in instances.values()} >= {
        BpmnElementType.PROCESS,
        BpmnElementType.SERVICE_TASK,
        BpmnElementType.CALL_ACTIVITY,
    }
    assert all(isinstance(j, Job) and j.type for j in jobs.values())
    assert sum(j.recurring_time > 0 for j in jobs.values()) == 1  # the job backing off
    assert all(isinstance(i, Incident) for _, i in incidents)
    assert ErrorType.JOB_NO_RETRIES in {i.error_type for _, i in incidents}
    assert "await_result" not in Rdict.list_cf(str(store))  # dropped
    upgrade_logs = [r.getMessage() for r in caplog.records if "upgraded" in r.getMessage()]
    assert len(upgrade_logs) == 1 and "from layout 2 to 3" in upgrade_logs[0], upgrade_logs
    with open_current(store) as again:  # upgraded once: the next open keeps it as it is
        assert again.digest() == _replayed_digest(log, tmp_path / "again")
    assert readable(2) and readable(STATE_FORMAT) and not readable(1)


def test_a_value_the_upgrade_cannot_read_stops_it_naming_where_and_changes_nothing(
    layout2: tuple[Path, dict[str, Any]],
) -> None:
    store, _ = layout2
    names = [n for n in Rdict.list_cf(str(store)) if n != "default"]
    raw = Rdict(
        str(store),
        options=Options(raw_mode=True),
        column_families={n: Options(raw_mode=True) for n in names},
    )
    job_key, job = next(iter(raw.get_column_family("job").items()))
    doctored = {**json.loads(job[1:]), "retries": "many"}
    raw.get_column_family("job")[job_key] = b"\x01" + json.dumps(doctored).encode()
    raw.close()
    with pytest.raises(
        StateError,
        match=rf"column family 'job', key {job_key.hex()} to Job: Expected `int`, got `str`",
    ):
        open_current(store)
    with PartitionDb(store) as untouched:  # nothing written: still layout 2, for a fixed build
        assert untouched.state_format == 2
        assert untouched.undeclared == ("await_result",)


def test_opening_waits_for_the_previous_holder_of_the_lock(tmp_path: Path) -> None:
    """A new owner on the same machine waits while the old one still has the store open,
    and says so; without time to wait it gets StoreLockedError at once."""
    holder = PartitionDb(tmp_path / "p")
    with pytest.raises(StoreLockedError, match="cannot open the state store"):
        open_current(tmp_path / "p")
    notices: list[float] = []
    threading.Timer(0.6, holder.close).start()
    started = time.monotonic()
    with open_current(tmp_path / "p", lock_wait_s=30, waiting=notices.append) as db:
        assert db.state_format == STATE_FORMAT
    assert 0.5 < time.monotonic() - started < 10
    assert len(notices) == 1 and 29 < notices[0] <= 30
