"""JOB COMPLETE of a task listener's job: its result (Zeebe's job result, JSON in the job's
`result`) checked as Zeebe checks it, then JOB COMPLETED and USER_TASK COMPLETE_TASK_LISTENER
with its corrections, or DENY_TASK_LISTENER with its reason.

A result is `{"denied": bool, "deniedReason": text, "correctedAttributes": [names],
"corrections": {"assignee", "dueDate", "followUpDate", "candidateUsersList",
"candidateGroupsList", "priority"}}`; an attribute named in `correctedAttributes` and absent
from `corrections` is cleared."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from partita.processing.behavior.variables import json_document
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.instance import state as instance_state
from partita.processing.job.state import job_value
from partita.processing.user_task import transitions
from partita.processing.user_task.creation import is_date_time
from partita.processing.user_task.state import transition
from partita.protocol.enums import RejectionType
from partita.protocol.intents import JobIntent
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.values import JobValue, UserTaskValue
from partita.state.stored import Job

_CLEARED: dict[str, Any] = {
    "assignee": "",
    "candidateGroupsList": (),
    "candidateUsersList": (),
    "dueDate": "",
    "followUpDate": "",
    "priority": 0,
}


def complete(ctx: ProcessingContext, key: int, stored: Job, value: JobValue) -> None:
    """Check the result, write JOB COMPLETED (the worker's reply), then go on with the task."""
    where = (
        f"(job key '{key}', type '{stored.type}', processInstanceKey"
        f" '{stored.process_instance_key}')"
    )
    if value.variables not in ("", "{}"):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"Task Listener job completion with variables payload provided is not supported"
            f" {where}; correct the task's attributes with the job result instead",
        )
    result = json_document(value.result, f"the job result {where} is")
    element = instance_state.instance(ctx.state, stored.element_instance_key)
    task_key = element.user_task_key if element is not None else -1
    under_way = transition(ctx.state, task_key) if task_key > 0 else None
    denied = bool(result.get("denied"))
    corrections = _corrections(result, where)
    if denied and corrections:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"Expected to complete task listener job with corrections, but the job result is"
            f" denied {where}. The corrections would be reverted by the denial. Either complete"
            " the job with corrections without setting denied, or complete the job with a"
            " denied result but no corrections.",
        )
    event = stored.listener_event_type.name
    if denied and event not in ("ASSIGNING", "UPDATING", "COMPLETING"):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"Denying result is not supported for '{event}' task listener jobs {where}. Only"
            " the following listener event types support denying: [ASSIGNING, COMPLETING,"
            " UPDATING].",
        )
    if (
        "assignee" in corrections
        and event == "CREATING"
        and under_way is not None
        and under_way.initial_assignee
    ):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            "Expected to complete task listener job, but correcting the assignee on 'CREATING'"
            f" event is not supported when the user task has an assignee defined in the model"
            f" {where}. Use the 'CREATING' event to set an assignee only if it was not defined."
            " Use the 'ASSIGNING' event to correct an assignee that is already defined.",
        )
    completed = replace(job_value(stored), variables="{}", result=value.result)
    ctx.append_event(JobIntent.COMPLETED, completed, key, respond=True)
    if under_way is None:
        return  # the task is gone (cancelled meanwhile)
    if denied:
        reason = str(result.get("deniedReason") or "")
        ctx.append_command(Task.DENY_TASK_LISTENER, UserTaskValue(denied_reason=reason), task_key)
        return
    corrected = UserTaskValue(
        **{transitions.CORRECTABLE[name]: text for name, text in corrections.items()},
        changed_attributes=tuple(corrections),
    )
    ctx.append_command(Task.COMPLETE_TASK_LISTENER, corrected, task_key)


def _corrections(result: dict[str, Any], where: str) -> dict[str, Any]:
    """Attribute -> corrected value, checked (an attribute named without a value clears it)."""
    named = result.get("correctedAttributes") or []
    values = result.get("corrections") or {}
    if not isinstance(named, list) or not isinstance(values, dict):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"correctedAttributes must be a list and corrections an object {where}",
        )
    corrections: dict[str, Any] = {}
    for name in dict.fromkeys([*named, *values]):
        if name not in transitions.CORRECTABLE:
            raise RejectionError(
                RejectionType.INVALID_ARGUMENT,
                f"Expected to complete task listener job with a corrections result, but property"
                f" '{name}' cannot be corrected {where}. Only the following properties can be"
                " corrected: [assignee, candidateGroupsList, candidateUsersList, dueDate,"
                " followUpDate, priority].",
            )
        corrections[name] = _checked(name, values.get(name, _CLEARED[name]), where)
    return corrections


def _checked(name: str, corrected: Any, where: str) -> Any:
    def bad(why: str) -> RejectionError:
        return RejectionError(
            RejectionType.INVALID_ARGUMENT, f"the correction of {name} {why} {where}"
        )

    if name in ("candidateGroupsList", "candidateUsersList"):
        if not isinstance(corrected, list) or not all(isinstance(n, str) for n in corrected):
            raise bad("must be a list of names")
        return tuple(corrected)
    if name == "priority":
        if not isinstance(corrected, int) or isinstance(corrected, bool):
            raise bad("must be a number")
        if not 0 <= corrected <= 100:
            raise bad(f"must be 0 to 100, not {corrected}")
        return corrected
    if not isinstance(corrected, str):
        raise bad("must be text")
    if name in ("dueDate", "followUpDate") and corrected and not is_date_time(corrected):
        raise bad(f"must be an ISO 8601 date-time with an offset, not '{corrected}'")
    return corrected
