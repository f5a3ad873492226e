"""The appliers of SIGNAL_SUBSCRIPTION CREATED and DELETED (SIGNAL BROADCASTED changes no
state: what it triggers writes its own events)."""

from __future__ import annotations

from partita.processing.dispatch import Handlers
from partita.processing.signal.state import BY_OWNER, SUBSCRIPTIONS, owner_of
from partita.protocol.intents import SignalSubscriptionIntent
from partita.protocol.records import Record
from partita.protocol.values import SignalSubscriptionValue
from partita.state import PartitionDb
from partita.state.stored import SignalSubscription

handlers = Handlers()


@handlers.applier(SignalSubscriptionIntent.CREATED)
def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, SignalSubscriptionValue)
    owner = owner_of(value)
    db.column(SUBSCRIPTIONS).upsert(
        (value.signal_name, owner, value.catch_event_id),
        SignalSubscription(
            process_definition_key=value.process_definition_key,
            bpmn_process_id=value.bpmn_process_id,
            catch_event_id=value.catch_event_id,
            catch_event_instance_key=value.catch_event_instance_key,
        ),
    )
    db.column(BY_OWNER).upsert((owner, value.signal_name, value.catch_event_id), None)


@handlers.applier(SignalSubscriptionIntent.DELETED)
def apply_deleted(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, SignalSubscriptionValue)
    owner = owner_of(value)
    db.column(SUBSCRIPTIONS).delete((value.signal_name, owner, value.catch_event_id))
    db.column(BY_OWNER).delete((owner, value.signal_name, value.catch_event_id))
