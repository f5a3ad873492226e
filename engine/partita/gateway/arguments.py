"""What the gateway checks and shapes in a request before any command goes out, the same for
both protocols: variables documents, the one tenant, resource names, the variables a job
carries, and where a published message went."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from msgspec import structs

from partita.gateway.errors import invalid
from partita.protocol.records import Record
from partita.protocol.values import (
    JobValue,
    MessageStartEventSubscriptionValue,
    MessageSubscriptionValue,
)

DEFAULT_TENANT = "<default>"
MAX_RESOURCE_NAME = 255


def tenant(value: str | None, where: str = "tenantId") -> str:
    """The one tenant Partita has: `<default>` (or none given). Others are refused, as Zeebe
    refuses them with multi-tenancy off."""
    if value in (None, "", DEFAULT_TENANT):
        return DEFAULT_TENANT
    raise invalid(
        f"Expected to handle request with tenant identifier '{value}' ({where}), but"
        " multi-tenancy is not supported by Partita: use '<default>' or leave it empty"
    )


def document(text: str | None, where: str) -> dict[str, Any]:
    """A variables document given as JSON text: an object, or nothing."""
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        raise invalid(f"{where} is not valid JSON: {error}") from None
    return object_document(value, where)


def object_document(value: object, where: str) -> dict[str, Any]:
    """A variables document given as parsed JSON: an object, or null."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(
            f"{where} must be a JSON object (variable names to values), not"
            f" {type(value).__name__ if not isinstance(value, list) else 'an array'}"
        )
    return value


def fetched(variables: str, names: Sequence[str]) -> str:
    """A job's variables narrowed to `names` (all when none are named)."""
    if not names:
        return variables
    values = json.loads(variables)
    return json.dumps({n: values[n] for n in names if n in values})


def resource_name(name: str) -> str:
    """The name a resource is deployed under: the last part of what the client sent, as
    camunda-client-java sends the path it was given (`../samples/order.bpmn` is
    `order.bpmn`), so no name ever holds a path."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if base in ("", ".", ".."):
        raise invalid(f"resource name '{name}' names no file: send the file's name")
    if len(base) > MAX_RESOURCE_NAME or any(ord(c) < 32 or ord(c) == 127 for c in base):
        raise invalid(
            f"resource name '{name[:80]}' must be a file name of at most {MAX_RESOURCE_NAME}"
            " characters without control characters"
        )
    return base


def message_key(reply: Record) -> int:
    """The key of the published message, whichever record answered the publication: the
    message itself when buffered, or the correlation that consumed it."""
    value = reply.value
    if isinstance(value, MessageSubscriptionValue | MessageStartEventSubscriptionValue):
        return value.message_key
    return reply.key


def narrowed(job: JobValue, names: Sequence[str]) -> JobValue:
    return structs.replace(job, variables=fetched(job.variables, names)) if names else job


_CORRECTED = {
    "assignee": "assignee",
    "dueDate": "dueDate",
    "followUpDate": "followUpDate",
    "candidateUsers": "candidateUsersList",
    "candidateGroups": "candidateGroupsList",
    "priority": "priority",
}
"""The corrections of a job result as the APIs name them -> as the engine's records do."""


def job_result(
    denied: bool | None, reason: str | None, corrections: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A task listener's job result as the engine takes it (`JobValue.result`); None when the
    request has none. `corrections` holds only the attributes the client set."""
    if denied is None and not reason and not corrections:
        return None
    unknown = sorted(set(corrections or {}) - set(_CORRECTED))
    if unknown:
        raise invalid(
            f"result.corrections cannot hold {', '.join(unknown)}; a task listener corrects"
            f" {', '.join(_CORRECTED)}"
        )
    engine_names = {_CORRECTED[name]: value for name, value in (corrections or {}).items()}
    result: dict[str, Any] = {"denied": bool(denied), "deniedReason": reason or ""}
    if engine_names:
        result["correctedAttributes"] = list(engine_names)
        result["corrections"] = engine_names
    return result


def ad_hoc_result(
    activate: list[tuple[str, dict[str, Any]]], done: bool, cancel: bool
) -> dict[str, Any]:
    """A job worker ad-hoc subprocess's job result as the engine takes it (`JobValue.result`):
    the elements to activate (id, variables), whether its completion condition is fulfilled,
    whether to cancel what still runs."""
    for element_id, _ in activate:
        if not element_id:
            raise invalid("result.activateElements[].elementId must not be empty")
    return {
        "type": "adHocSubProcess",
        "activateElements": [{"elementId": e, "variables": v} for e, v in activate],
        "isCompletionConditionFulfilled": done,
        "isCancelRemainingInstances": cancel,
    }


def grpc_job_result(result: Any) -> dict[str, Any] | None:
    """A job result: a job worker ad-hoc subprocess's (elements to activate, completion), or
    a task listener's: what is set of `denied`, `deniedReason` and the corrections (an unset
    correction keeps the task's value; a set one, even empty, replaces it)."""
    if (
        result.type == "adHocSubProcess"
        or len(result.activateElements)
        or result.HasField("isCompletionConditionFulfilled")
        or result.HasField("isCancelRemainingInstances")
    ):
        activate = [
            (e.elementId, document(e.variables, "activateElements[].variables"))
            for e in result.activateElements
        ]
        return ad_hoc_result(
            activate, result.isCompletionConditionFulfilled, result.isCancelRemainingInstances
        )
    corrections: dict[str, Any] = {}
    if result.HasField("corrections"):
        given = result.corrections
        for name in ("assignee", "dueDate", "followUpDate", "priority"):
            if given.HasField(name):
                corrections[name] = getattr(given, name)
        for name in ("candidateUsers", "candidateGroups"):
            if given.HasField(name):
                corrections[name] = list(getattr(given, name).values)
    denied = result.denied if result.HasField("denied") else None
    return job_result(denied, result.deniedReason, corrections)
