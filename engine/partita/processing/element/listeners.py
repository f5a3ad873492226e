"""Execution listeners: the jobs an element (or a process) waits for after its input mappings,
before it does its own work, and after its output mappings, before it leaves (Zeebe's start and
end listeners). One listener's job at a time, in model order; each completion is a
PROCESS_INSTANCE COMPLETE_EXECUTION_LISTENER, which creates the next one's job or goes on with
the element. The element instance counts the completed listeners of the running phase
(`listener_index`); a resolved element incident counts from the first again."""

from __future__ import annotations

from partita.bpmn import ExecutionListener, FlowNode, JobWorkerElement, Process
from partita.processing.behavior.jobs import new_job
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.protocol.enums import JobKind, JobListenerEventType
from partita.protocol.values import ProcessInstanceValue

START = JobListenerEventType.START
END = JobListenerEventType.END


def all_done(
    ctx: ProcessingContext,
    element: FlowNode | Process,
    event: JobListenerEventType,
    key: int,
    value: ProcessInstanceValue,
) -> bool:
    """True when every `event` listener of `element` has completed; otherwise the next one's
    job is created (or an incident, when its type or retries cannot be evaluated)."""
    listeners: tuple[ExecutionListener, ...] = (
        element.start_listeners if event is START else element.end_listeners
    )
    if not listeners:
        return True
    stored = instance_state.instance(ctx.state, key)
    index = stored.listener_index if stored is not None else 0
    if index >= len(listeners):
        return True
    listener = listeners[index]
    headers = element.headers if isinstance(element, JobWorkerElement) else ()
    new_job(
        ctx,
        key,
        value,
        element_id=element.id,
        job_type=listener.job_type,
        retries=listener.retries,
        headers=headers,
        kind=JobKind.EXECUTION_LISTENER,
        event=event,
    )
    return False
