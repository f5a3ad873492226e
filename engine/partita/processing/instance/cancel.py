"""PROCESS_INSTANCE CANCEL: terminate a root process instance and everything active in it (an
instance a call activity started is cancelled through its root)."""

from __future__ import annotations

from partita.processing.behavior.termination import terminate_element
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.protocol.enums import RejectionType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record

handlers = Handlers()


@handlers.processor(Instance.CANCEL)
def cancel(command: Record, ctx: ProcessingContext) -> None:
    """PROCESS_INSTANCE CANCEL: terminate the instance and everything active in it."""
    stored = instance_state.instance(ctx.state, command.key)
    if stored is None or stored.flow_scope_key > 0:
        raise RejectionError(
            RejectionType.NOT_FOUND, f"no active process instance with key {command.key}"
        )
    if stored.state == Instance.ELEMENT_TERMINATING.name:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"process instance {command.key} is already terminating"
        )
    if stored.parent_element_instance_key > 0:
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"process instance {command.key} was started by call activity instance"
            f" {stored.parent_element_instance_key}; cancel its root process instance"
            f" {stored.parent_process_instance_key} instead",
        )
    terminate_element(ctx, command.key, stored, respond=True)
