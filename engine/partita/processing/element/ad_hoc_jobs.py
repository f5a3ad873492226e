"""Job worker ad-hoc subprocesses (Zeebe 8.8; Camunda's AI agents are such workers).

On activation the subprocess sets its local `adHocSubProcessElements` (the activatable inner
elements: id and name) and creates a job (`jobKind` AD_HOC_SUB_PROCESS) before ELEMENT_ACTIVATED;
nothing inside runs yet. The worker completes the job with a result: `activateElements`
(`[{elementId, variables}]`, each activated in an inner instance of its own holding its
variables, as `ad_hoc.activate_inner` does; one id may come twice),
`isCompletionConditionFulfilled` (complete once the running paths have; at once, terminating
them, with `isCancelRemainingInstances`), and the job's variables merged from the subprocess
outwards. Each time a path inside completes (its inner instance), the live job is cancelled
and a new one created for the worker to decide again (unless the completion was asked for).
Every path's `outputElement`, evaluated in its inner instance, is appended to the
`outputCollection` (both modes)."""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn import AdHocSubProcess, Process
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.jobs import new_job
from partita.processing.behavior.termination import terminate_element
from partita.processing.behavior.variables import (
    json_document,
    propagate_variables,
    set_variable,
    variables_document,
)
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.deployment import state as deployment_state
from partita.processing.element import ad_hoc
from partita.processing.instance import state as instance_state
from partita.processing.job.state import JOBS, job_value
from partita.processing.variable.state import variable_json, visible_variables
from partita.protocol import json_text
from partita.protocol.enums import ErrorType, JobKind, RejectionType
from partita.protocol.intents import JobIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import JobValue, ProcessInstanceValue
from partita.state.stored import Job

ELEMENTS_VARIABLE = "adHocSubProcessElements"


def begin(
    ctx: ProcessingContext,
    element: AdHocSubProcess,
    key: int,
    value: ProcessInstanceValue,
    model: Process,
) -> bool:
    """The activatable elements as a local variable and the first job; False (with an
    incident) when the job's type or retries cannot be evaluated."""
    described = [
        {"elementId": inner.id, **({"elementName": inner.name} if inner.name else {})}
        for inner in element.activatable(model).values()
    ]
    set_variable(ctx, key, ELEMENTS_VARIABLE, described, value)
    return _new_job(ctx, element, key, value)


def _new_job(
    ctx: ProcessingContext, element: AdHocSubProcess, key: int, value: ProcessInstanceValue
) -> bool:
    return new_job(
        ctx,
        key,
        value,
        element_id=element.id,
        job_type=element.job_type,
        retries=element.retries,
        headers=element.headers,
        kind=JobKind.AD_HOC_SUB_PROCESS,
    )


def start_output(
    ctx: ProcessingContext, element: AdHocSubProcess, key: int, value: ProcessInstanceValue
) -> None:
    """An empty output collection, local to the subprocess (either mode)."""
    if element.output_collection:
        set_variable(ctx, key, element.output_collection, [], value)


def complete(ctx: ProcessingContext, key: int, stored: Job, value: JobValue) -> None:
    """JOB COMPLETE of the subprocess's job: its result checked, JOB COMPLETED, the job's
    variables merged, the elements activated, the completion asked for."""
    scope = instance_state.instance(ctx.state, stored.element_instance_key)
    where = (
        f"(job key '{key}', type '{stored.type}', processInstanceKey"
        f" '{stored.process_instance_key}')"
    )
    if scope is None or scope.state != Instance.ELEMENT_ACTIVATED.name:
        raise RejectionError(
            RejectionType.INVALID_STATE,
            "Expected to complete ad-hoc sub-process job, but the ad-hoc sub-process instance"
            f" is not active {where}",
        )
    deployed = deployment_state.by_key(ctx.state, stored.process_definition_key)
    assert deployed is not None, "an active instance's process is deployed"
    model = deployed.model(ctx.state)
    element = model.element(stored.element_id)
    assert isinstance(element, AdHocSubProcess)
    result = json_document(value.result, f"the job result {where} is")
    wanted = result.get("activateElements") or []
    activatable = element.activatable(model)
    if not isinstance(wanted, list) or not all(
        isinstance(w, dict) and isinstance(w.get("elementId"), str) for w in wanted
    ):
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"activateElements must be a list of {{elementId, variables}} objects {where}",
        )
    unknown = [w["elementId"] for w in wanted if w["elementId"] not in activatable]
    if unknown:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            "Expected to activate activities for ad-hoc sub-process with key"
            f" '{stored.element_instance_key}', but the given elements"
            f" [{', '.join(unknown)}] do not exist.",
        )
    done = bool(result.get("isCompletionConditionFulfilled"))
    if done and wanted:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            "No elements can be activated for ad-hoc sub-process with key"
            f" '{stored.element_instance_key}' because the completion condition is fulfilled.",
        )
    per_element = [variables_document(json_text.write(w.get("variables") or {})) for w in wanted]
    variables = variables_document(value.variables)
    completed = replace(job_value(stored), variables=value.variables or "{}", result=value.result)
    ctx.append_event(JobIntent.COMPLETED, completed, key, respond=True)
    scope_key = stored.element_instance_key
    scope_value = instance_state.value_of(scope)
    if variables:
        propagate_variables(ctx, scope_key, variables, scope_value)
    if result.get("isCancelRemainingInstances"):
        _terminate_children(ctx, scope_key)
    for asked, local in zip(wanted, per_element, strict=True):
        ad_hoc.activate_inner(
            ctx, element, scope_key, scope_value, activatable[asked["elementId"]], local
        )
    if done and (
        result.get("isCancelRemainingInstances")
        or not instance_state.children(ctx.state, scope_key)
    ):
        ctx.append_command(Instance.COMPLETE_ELEMENT, scope_value, scope_key)


def _terminate_children(ctx: ProcessingContext, scope_key: int) -> None:
    for child in instance_state.children(ctx.state, scope_key):
        stored = instance_state.instance(ctx.state, child)
        if stored is not None and stored.state != Instance.ELEMENT_TERMINATING.name:
            terminate_element(ctx, child, stored)


def collect_output(
    ctx: ProcessingContext,
    scope: AdHocSubProcess,
    key: int,
    value: ProcessInstanceValue,
) -> bool:
    """A path of the subprocess ends at element instance `key`: its `outputElement`, evaluated
    where it ends, appended to the output collection. False (with an incident) when it fails."""
    if not scope.output_collection or not scope.output_element:
        return True
    scope_key = value.flow_scope_key
    try:
        found = compile_expression(scope.output_element).evaluate(visible_variables(ctx.state, key))
    except FeelError as error:
        reason = f"{scope.id}: outputElement: {error.reason}"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return False
    current = variable_json(ctx.state, scope_key, scope.output_collection)
    collected = json_text.parse(current) if current is not None else None
    if not isinstance(collected, list):
        reason = (
            f"{scope.id}: The output collection has the wrong type. Expected ARRAY but was"
            f" {type(collected).__name__.upper()}."
        )
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return False
    scope_stored = instance_state.instance(ctx.state, scope_key)
    if scope_stored is not None:
        set_variable(
            ctx,
            scope_key,
            scope.output_collection,
            [*collected, found],
            instance_state.value_of(scope_stored),
        )
    return True


def path_completed(ctx: ProcessingContext, scope: AdHocSubProcess, scope_key: int) -> bool:
    """A path of a job worker subprocess completed: its live job cancelled and a new one
    created (True: the subprocess waits for it), unless its completion was asked for (False:
    it completes once nothing runs in it)."""
    stored = instance_state.instance(ctx.state, scope_key)
    if stored is None or stored.state != Instance.ELEMENT_ACTIVATED.name:
        return True
    if stored.ad_hoc_completing:
        return False
    job = ctx.state.column(JOBS).get(stored.job_key) if stored.job_key > 0 else None
    if job is not None:
        ctx.append_event(JobIntent.CANCELED, job_value(job), stored.job_key)
    _new_job(ctx, scope, scope_key, instance_state.value_of(stored))
    return True


def hand_over_output(
    ctx: ProcessingContext, element: AdHocSubProcess, key: int, value: ProcessInstanceValue
) -> None:
    """The output collection, as the subprocess completes, to its flow scope (as Zeebe does,
    before the output mappings)."""
    current = variable_json(ctx.state, key, element.output_collection)
    if current is not None:
        collected = {element.output_collection: json_text.parse(current)}
        propagate_variables(ctx, value.flow_scope_key, collected, value)
