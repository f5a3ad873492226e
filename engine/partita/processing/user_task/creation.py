"""A Zeebe user task's element creates its USER_TASK when it activates (CREATING, its creating
listeners, CREATED, then ASSIGNING and ASSIGNED when the model names an assignee); terminating
the element cancels it (`behavior.termination`). Properties are evaluated on activation; one
that fails is an incident naming the property, and activation continues once it is resolved."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from partita.bpmn import UserTask
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext
from partita.processing.deployment import forms
from partita.processing.deployment import state as deployment_state
from partita.processing.user_task import transitions
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import ErrorType
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.values import ProcessInstanceValue, UserTaskValue


class _PropertyError(Exception):
    pass


def create(
    ctx: ProcessingContext, element: UserTask, key: int, value: ProcessInstanceValue
) -> tuple[int, str] | None:
    """USER_TASK CREATING and CREATED for the element instance `key`: the task's key and the
    assignee to give it once the element is activated ("" for none). None, with an incident,
    when a property cannot be evaluated."""
    texts = (
        element.assignee,
        element.candidate_groups,
        element.candidate_users,
        element.due_date,
        element.follow_up_date,
        element.priority,
        element.external_form_reference,
    )
    dynamic = any(text.startswith("=") for text in texts)
    variables = visible_variables(ctx.state, key) if dynamic else {}
    try:
        assignee = _text(element.assignee, variables, "assignee")
        groups = _names(element.candidate_groups, variables, "candidateGroups")
        users = _names(element.candidate_users, variables, "candidateUsers")
        due = _date(element.due_date, variables)
        follow_up = _date(element.follow_up_date, variables)
        priority = _priority(element.priority, variables)
        external = _text(element.external_form_reference, variables, "externalReference")
        form_id = _text(element.form_id, variables, "formId")
    except _PropertyError as error:
        reason = f"{element.id}: {error}"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return None
    form_key = -1
    if form_id:
        found = _linked_form(ctx, element, form_id, value)
        if isinstance(found, str):
            element_incident(ctx, ErrorType.FORM_NOT_FOUND, found, value, key)
            return None
        form_key = found
    task_key = ctx.keys.next_key()
    created = UserTaskValue(
        user_task_key=task_key,
        assignee=assignee,
        candidate_groups_list=groups,
        candidate_users_list=users,
        due_date=due,
        follow_up_date=follow_up,
        external_form_reference=external,
        form_key=form_key,
        custom_headers=dict(element.headers),
        priority=priority,
        creation_timestamp=ctx.now,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.version,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
        element_id=element.id,
        element_instance_key=key,
    )
    ctx.append_event(Task.CREATING, created, task_key)
    if element.listeners_of("creating"):
        transitions.go_on(ctx, task_key)  # CREATED once they completed
    else:
        transitions.finish(ctx, task_key)
    return task_key, assignee


def _linked_form(
    ctx: ProcessingContext, element: UserTask, form_id: str, value: ProcessInstanceValue
) -> int | str:
    """The key of the form the task links (by its binding), or why there is none."""
    if element.form_binding == "versionTag":
        tag = element.form_version_tag
        found = forms.newest_where(ctx.state, form_id, version_tag=tag)
        missing = (
            f"Expected to use a form with id '{form_id}' and version tag '{tag}', but no such"
            " form found. To resolve the incident, deploy a form with the given id and version"
            " tag."
        )
    elif element.form_binding == "deployment":
        process = deployment_state.by_key(ctx.state, value.process_definition_key)
        deployment = process.deployment_key if process is not None else -1
        found = forms.newest_where(ctx.state, form_id, deployment_key=deployment)
        missing = (
            f"Expected to use a form with id '{form_id}' with binding type 'deployment', but no"
            f" such form found in the deployment with key {deployment} which contained the"
            " current process. To resolve this incident, migrate the process instance to a"
            " process definition that is deployed together with the intended form to use."
        )
    else:
        found = forms.latest(ctx.state, form_id)
        missing = (
            f"Expected to find a form with id '{form_id}', but no form with this id is found,"
            " at least a form with this id should be available. To resolve the Incident please"
            " deploy a form with the same id"
        )
    return missing if found is None else found[0]


def assign_on_creation(ctx: ProcessingContext, task_key: int, assignee: str) -> None:
    """The model's assignee, given once the element is activated (as Zeebe does), unless the
    task's creating listeners still run (their end assigns it)."""
    transitions.assign_after_creation(ctx, task_key, assignee)


def _evaluate(text: str, variables: dict[str, Any]) -> Any:
    try:
        return compile_expression(text).evaluate(variables)
    except FeelError as error:
        raise _PropertyError(f"{text}: {error.reason}") from None


def _text(text: str, variables: dict[str, Any], name: str) -> str:
    if not text.startswith("="):
        return text
    result = _evaluate(text, variables)
    if result is None:
        return ""
    if not isinstance(result, str):
        raise _PropertyError(
            f"Expected result of the expression '{text}' ({name}) to be 'STRING', but was"
            f" {type(result).__name__} {result!r}"
        )
    return result


def _names(text: str, variables: dict[str, Any], name: str) -> tuple[str, ...]:
    if not text.startswith("="):
        return tuple(n.strip() for n in text.split(",") if n.strip())
    result = _evaluate(text, variables)
    if result is None:
        return ()
    if not isinstance(result, list) or not all(isinstance(n, str) for n in result):
        raise _PropertyError(
            f"Expected result of the expression '{text}' ({name}) to be a list of strings,"
            f" but was {result!r}"
        )
    return tuple(result)


def _date(text: str, variables: dict[str, Any]) -> str:
    result = _evaluate(text, variables) if text.startswith("=") else text
    if result is None or result == "":
        return ""
    if not is_date_time(str(result)):
        raise _PropertyError(
            f"Invalid date-time format '{result}' for expression '{text}': an ISO 8601"
            " date-time with an offset, e.g. 2026-12-31T17:00:00Z"
        )
    return str(result)


def is_date_time(text: str) -> bool:
    """An ISO 8601 date-time with an offset (`Z` or `+01:00`), as Zeebe needs task dates."""
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


def _priority(text: str, variables: dict[str, Any]) -> int:
    result = _evaluate(text, variables) if text.startswith("=") else int(text)
    if isinstance(result, bool) or not isinstance(result, int | float) or result != int(result):
        raise _PropertyError(f"Expected priority of '{text}' to be an integer, but was {result!r}")
    if not 0 <= result <= 100:
        raise _PropertyError(f"Expected priority to be in the range [0,100] but was '{result}'.")
    return int(result)
