"""The appliers of COMPENSATION_SUBSCRIPTION events: CREATED and TRIGGERED store the
subscription as the event carries it; COMPLETED and DELETED remove it."""

from __future__ import annotations

from partita.processing.compensation.state import SUBSCRIPTIONS, stored_subscription
from partita.processing.dispatch import Handlers
from partita.protocol.intents import CompensationSubscriptionIntent as Compensation
from partita.protocol.records import Record
from partita.protocol.values import CompensationSubscriptionValue
from partita.state import PartitionDb

handlers = Handlers()


@handlers.applier(Compensation.CREATED, Compensation.TRIGGERED)
def apply_stored(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, CompensationSubscriptionValue)
    db.column(SUBSCRIPTIONS).upsert(
        (value.process_instance_key, record.key), stored_subscription(value)
    )


@handlers.applier(Compensation.COMPLETED, Compensation.DELETED)
def apply_removed(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, CompensationSubscriptionValue)
    db.column(SUBSCRIPTIONS).delete((value.process_instance_key, record.key))
