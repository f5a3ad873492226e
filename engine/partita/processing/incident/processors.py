"""INCIDENT RESOLVE: continue where the incident stopped.

Resolving a job incident requires the job to have retries again (UPDATE_RETRIES first, as in
Zeebe): the job is activatable again and a worker continues. Resolving an element incident
retries the element's step: its activation if the element never became active, the transition of
its user task when a task listener's job could not be created (every listener of that transition
runs again), its completion otherwise.
"""

from __future__ import annotations

from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.dispatch import Handlers
from partita.processing.incident.state import INCIDENTS, incident_value
from partita.processing.instance import state as instance_state
from partita.processing.job.state import JOBS
from partita.processing.user_task.state import transition
from partita.protocol.enums import RejectionType
from partita.protocol.intents import IncidentIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record
from partita.protocol.values import UserTaskValue

handlers = Handlers()


@handlers.processor(IncidentIntent.RESOLVE)
def resolve(command: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(INCIDENTS).get(command.key)
    if stored is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no open incident with key {command.key}")
    job_key = stored.job_key
    if job_key > 0:
        job = ctx.state.column(JOBS).get(job_key)
        if job is not None and job.retries <= 0:
            raise RejectionError(
                RejectionType.INVALID_STATE,
                f"job {job_key} has no retries left; update its retries before resolving"
                f" incident {command.key}",
            )
    ctx.append_event(IncidentIntent.RESOLVED, incident_value(stored), command.key, respond=True)
    if job_key > 0:
        return  # the job is activatable again; a worker continues
    element = instance_state.instance(ctx.state, stored.element_instance_key)
    if element is None:
        return
    value = instance_state.value_of(element)
    if element.user_task_key > 0 and transition(ctx.state, element.user_task_key) is not None:
        # a task listener's job could not be created: the transition runs its listeners again
        ctx.append_command(Task.COMPLETE_TASK_LISTENER, UserTaskValue(), element.user_task_key)
    elif element.state == Instance.ELEMENT_ACTIVATING.name:
        ctx.append_command(Instance.ACTIVATE_ELEMENT, value, stored.element_instance_key)
    elif element.state == Instance.ELEMENT_COMPLETING.name:  # its end listeners run again
        ctx.append_command(Instance.COMPLETE_EXECUTION_LISTENER, value, stored.element_instance_key)
    else:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, stored.element_instance_key)
