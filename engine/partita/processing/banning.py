"""ERROR events ban their process instance: later commands for it are rejected.

Banned instances live in state (column family `banned_instance`), so replay restores them.
"""

from __future__ import annotations

from partita.processing.dispatch import Engine, Handlers
from partita.protocol.intents import ErrorIntent
from partita.protocol.records import Record
from partita.protocol.values import ErrorValue
from partita.state import ColumnFamilies, PartitionDb

handlers = Handlers()


@handlers.applier(ErrorIntent.CREATED)
def apply_error_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ErrorValue)
    if value.process_instance_key > 0:
        db.column(ColumnFamilies.BANNED_INSTANCE).upsert(value.process_instance_key, None)


def is_banned(db: PartitionDb, process_instance_key: int) -> bool:
    return process_instance_key > 0 and db.column(ColumnFamilies.BANNED_INSTANCE).exists(
        process_instance_key
    )


def register(engine: Engine) -> None:
    """Install the core every engine build needs (engines for tests and benchmarks that have
    no domain packages of their own install only this)."""
    engine.install(handlers)
