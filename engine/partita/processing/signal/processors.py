"""SIGNAL BROADCAST: a client's broadcast (Zeebe's BroadcastSignal) or a signal throw or end
event's. The partition that takes it first gives it a key, answers with BROADCASTED and sends
it to every other partition inside the same transaction (so it is never lost, and needs no
retry); each partition triggers what waits for the signal there: catch, boundary and event
subprocess start events of element instances, and, on partition 0 where they live, signal
start events (one new instance each). A copy that arrives with its key is not sent on."""

from __future__ import annotations

from partita.processing.behavior.triggers import start_instance, trigger
from partita.processing.behavior.variables import variables_document
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import Handlers
from partita.processing.signal.state import waiting_for
from partita.protocol.enums import RejectionType
from partita.protocol.intents import SignalIntent
from partita.protocol.records import Record
from partita.protocol.values import SignalValue

handlers = Handlers()


@handlers.processor(SignalIntent.BROADCAST)
def broadcast(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, SignalValue)
    if not value.signal_name:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT, "Expected a signal name, but none was given"
        )
    variables_document(value.variables)  # refused before anything is sent on
    variables = value.variables or "{}"
    first = command.key < 0
    key = ctx.keys.next_key() if first else command.key
    ctx.append_event(SignalIntent.BROADCASTED, value, key, respond=True)
    if first:
        for partition in range(ctx.partition_count):
            if partition != ctx.partition:
                ctx.append_command(SignalIntent.BROADCAST, value, key, partition=partition)
    for owner, stored in waiting_for(ctx.state, value.signal_name):
        deployed = deployment_state.by_key(ctx.state, stored.process_definition_key)
        if deployed is None:
            continue
        if stored.catch_event_instance_key > 0:
            trigger(ctx, deployed.model(ctx.state), owner, stored.catch_event_id, variables)
        else:
            start_instance(ctx, deployed, stored.catch_event_id, variables)
