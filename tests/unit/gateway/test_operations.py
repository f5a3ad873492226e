"""The gateway's command layer, what it decides before any command is sent: documents,
tenants, resource names, the narrowed variables of a job, and where a published message went."""

from __future__ import annotations

import json

import pytest
from msgspec import structs

from partita.client.errors import rejection_error
from partita.gateway.arguments import (
    document,
    fetched,
    message_key,
    object_document,
    resource_name,
    tenant,
)
from partita.gateway.errors import GatewayError, Status, rejected
from partita.protocol.enums import RecordType, RejectionType
from partita.protocol.intents import (
    MessageIntent,
    MessageSubscriptionIntent,
    ProcessInstanceCreationIntent,
)
from partita.protocol.records import command, event
from partita.protocol.values import (
    MessageSubscriptionValue,
    MessageValue,
    ProcessInstanceCreationValue,
)


def invalid(call: object, *args: object) -> str:
    with pytest.raises(GatewayError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.status is Status.INVALID_ARGUMENT
    return caught.value.message


def test_a_document_is_a_json_object_or_nothing() -> None:
    assert document(None, "variables") == {} and document("  ", "variables") == {}
    assert document('{"a": [1]}', "variables") == {"a": [1]}
    assert object_document(None, "variables") == {}
    assert "variables is not valid JSON" in invalid(document, '{"a":', "variables")
    assert "not an array" in invalid(document, "[1]", "variables")
    assert "not str" in invalid(object_document, "text", "variables")


def test_only_the_default_tenant() -> None:
    assert tenant(None) == tenant("") == tenant("<default>") == "<default>"
    assert "multi-tenancy is not supported" in invalid(tenant, "acme")


def test_a_resource_is_named_by_the_last_part_of_its_path() -> None:
    assert resource_name("order.bpmn") == "order.bpmn"
    assert resource_name("../samples/order.bpmn") == "order.bpmn"  # camunda-client-java
    assert resource_name("C:\\models\\order.bpmn") == "order.bpmn"
    assert "names no file" in invalid(resource_name, "../..")
    assert "names no file" in invalid(resource_name, "dir/")
    assert "control characters" in invalid(resource_name, "a\x00.bpmn")
    assert "at most 255" in invalid(resource_name, "x" * 300)


def test_fetch_variables_narrows_a_jobs_document() -> None:
    variables = json.dumps({"a": 1, "b": {"c": 2}, "d": None})
    assert fetched(variables, ()) == variables
    assert json.loads(fetched(variables, ["b", "d", "missing"])) == {"b": {"c": 2}, "d": None}


def test_the_key_of_a_published_message_wherever_it_went() -> None:
    buffered = event(MessageIntent.PUBLISHED, MessageValue(), key=77)
    correlated = event(
        MessageSubscriptionIntent.CORRELATING, MessageSubscriptionValue(message_key=78), key=5
    )
    assert message_key(buffered) == 77 and message_key(correlated) == 78


def test_a_rejection_reads_as_zeebes_and_maps_as_zeebe_maps_it() -> None:
    def rejection(kind: RejectionType) -> GatewayError:
        create = command(ProcessInstanceCreationIntent.CREATE, ProcessInstanceCreationValue())
        refused = structs.replace(
            create,
            record_type=RecordType.COMMAND_REJECTION,
            rejection_type=kind,
            rejection_reason="why",
        )
        return rejected(rejection_error(refused))

    error = rejection(RejectionType.NOT_FOUND)
    assert error.status is Status.NOT_FOUND
    assert error.message == "Command 'CREATE' rejected with code 'NOT_FOUND': why"
    assert rejection(RejectionType.INVALID_STATE).status is Status.FAILED_PRECONDITION
    assert rejection(RejectionType.INVALID_STATE).status.http == 409
    assert rejection(RejectionType.PROCESSING_ERROR).status is Status.INTERNAL
    assert rejection(RejectionType.RESOURCE_EXHAUSTED).status.http == 429
