"""A fake `Operations` behind the REST app and aiohttp's test client: what the REST API's unit
tests (tests/unit/gateway/test_rest_*.py) send requests through and check calls against."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

from aiohttp import FormData
from aiohttp.test_utils import TestClient, TestServer

from partita.gateway.activation import ActivatedJob
from partita.gateway.auth import Authenticator
from partita.gateway.errors import GatewayError
from partita.gateway.operations import Operations
from partita.gateway.rest_api import rest_app
from partita.gateway.topology import BrokerView, PartitionView, Topology
from partita.protocol.intents import (
    DecisionEvaluationIntent,
    DeploymentIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceResultIntent,
    SignalIntent,
)
from partita.protocol.records import Record, event
from partita.protocol.values import (
    DecisionEvaluationValue,
    DeploymentValue,
    EvaluatedDecision,
    MessageValue,
    ProcessInstanceCreationValue,
    ProcessInstanceResultValue,
    ProcessMetadata,
    SignalValue,
)

BIG = 2251799813685249
"""A key beyond 2^53: a JSON number would lose digits, its string does not."""


class FakeOperations:
    """Records each call (name, arguments) and answers as the engine would."""

    partition_count = 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.jobs: list[list[ActivatedJob]] = []
        self.publish_reply: Record | None = None
        self.fail_with: GatewayError | None = None

    def _called(self, operation: str, /, **arguments: Any) -> None:
        self.calls.append((operation, arguments))
        if self.fail_with is not None:
            raise self.fail_with

    async def deploy(self, resources: Sequence[tuple[str, bytes]], tenant_id: str | None) -> Record:
        self._called("deploy", resources=list(resources), tenant_id=tenant_id)
        processes = tuple(
            ProcessMetadata(
                bpmn_process_id=name.removesuffix(".bpmn"),
                version=1,
                process_definition_key=BIG + i,
                resource_name=name,
            )
            for i, (name, _) in enumerate(resources)
        )
        return event(DeploymentIntent.CREATED, DeploymentValue(processes_metadata=processes), BIG)

    async def create_instance(self, **arguments: Any) -> Record:
        self._called("create_instance", **arguments)
        common: dict[str, Any] = {
            "bpmn_process_id": arguments["process_id"] or "by-key",
            "version": 3,
            "process_definition_key": BIG + 1,
            "process_instance_key": BIG + 2,
        }
        if arguments["await_result"]:
            result = ProcessInstanceResultValue(**common, variables='{"total": 84}')
            return event(ProcessInstanceResultIntent.COMPLETED, result, BIG + 2)
        created = ProcessInstanceCreationValue(**common, variables='{"given": 1}')
        return event(ProcessInstanceCreationIntent.CREATED, created, BIG + 2)

    async def cancel_instance(self, key: int) -> Record:
        self._called("cancel_instance", key=key)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def set_variables(self, scope_key: int, variables: dict[str, Any], local: bool) -> Record:
        self._called("set_variables", scope_key=scope_key, variables=variables, local=local)
        return event(MessageIntent.PUBLISHED, MessageValue(), BIG)

    async def resolve_incident(self, key: int) -> Record:
        self._called("resolve_incident", key=key)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def publish_message(self, name: str, correlation_key: str, **arguments: Any) -> Record:
        self._called("publish_message", name=name, correlation_key=correlation_key, **arguments)
        if self.publish_reply is not None:
            return self.publish_reply
        return event(MessageIntent.PUBLISHED, MessageValue(name=name), BIG + 7)

    async def complete_job(
        self, key: int, variables: dict[str, Any] | None, result: dict[str, Any] | None = None
    ) -> Record:
        if result is None:
            self._called("complete_job", key=key, variables=variables)
        else:
            self._called("complete_job", key=key, variables=variables, result=result)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def fail_job(
        self,
        key: int,
        retries: int,
        message: str,
        backoff_ms: int,
        variables: dict[str, Any] | None = None,
    ) -> Record:
        self._called(
            "fail_job",
            key=key,
            retries=retries,
            message=message,
            backoff_ms=backoff_ms,
            variables=variables,
        )
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def throw_error(
        self, key: int, code: str, message: str, variables: dict[str, Any] | None
    ) -> Record:
        self._called("throw_error", key=key, code=code, message=message, variables=variables)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def broadcast_signal(
        self, name: str, variables: dict[str, Any] | None, tenant_id: str | None = None
    ) -> Record:
        self._called("broadcast_signal", name=name, variables=variables)
        return event(SignalIntent.BROADCASTED, SignalValue(signal_name=name), BIG + 3)

    async def evaluate_decision(
        self,
        decision_id: str,
        decision_key: int,
        variables: dict[str, Any] | None,
        tenant_id: str | None = None,
    ) -> Record:
        self._called(
            "evaluate_decision",
            decision_id=decision_id,
            decision_key=decision_key,
            variables=variables,
        )
        value = DecisionEvaluationValue(
            decision_key=BIG,
            decision_id=decision_id or "dish",
            decision_version=2,
            decision_output='"Stew"',
            evaluated_decisions=(
                EvaluatedDecision(decision_id="dish", decision_key=BIG, decision_output='"Stew"'),
            ),
        )
        return event(DecisionEvaluationIntent.EVALUATED, value, BIG + 9)

    async def assign_user_task(
        self, key: int, assignee: str, *, allow_override: bool = True, action: str = ""
    ) -> Record:
        self._called(
            "assign_user_task",
            key=key,
            assignee=assignee,
            allow_override=allow_override,
            action=action,
        )
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def unassign_user_task(self, key: int) -> Record:
        self._called("unassign_user_task", key=key)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def update_user_task(self, key: int, *, action: str = "", **attributes: Any) -> Record:
        self._called("update_user_task", key=key, action=action, **attributes)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def complete_user_task(
        self, key: int, variables: dict[str, Any] | None, *, action: str = ""
    ) -> Record:
        self._called("complete_user_task", key=key, variables=variables, action=action)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def update_job_retries(self, key: int, retries: int) -> Record:
        self._called("update_job_retries", key=key, retries=retries)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def update_job_timeout(self, key: int, timeout_ms: int) -> Record:
        self._called("update_job_timeout", key=key, timeout_ms=timeout_ms)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def activate_jobs(
        self, job_type: str, **arguments: Any
    ) -> AsyncIterator[list[ActivatedJob]]:
        self._called("activate_jobs", job_type=job_type, **arguments)
        for batch in self.jobs:
            yield batch


ONE_BROKER = Topology(
    [
        BrokerView(
            0, "10.0.0.5", "member-a", [PartitionView(1, True, 0), PartitionView(2, False, 9)]
        )
    ],
    partitions_count=2,
    replication_factor=1,
)


Scenario = Callable[[TestClient[Any, Any]], Awaitable[Any]]


def run(
    fake: FakeOperations,
    scenario: Scenario,
    cluster: Topology = ONE_BROKER,
    authenticator: Authenticator | None = None,
) -> Any:
    async def main() -> Any:
        operations = cast(Operations, fake)
        app = rest_app(operations, cluster=lambda: cluster, authenticator=authenticator)
        async with TestClient(TestServer(app)) as client:
            return await scenario(client)

    return asyncio.run(main())


def exchange(
    method: str,
    path: str,
    *,
    fake: FakeOperations | None = None,
    cluster: Topology = ONE_BROKER,
    authenticator: Authenticator | None = None,
    **request: Any,
) -> tuple[int, dict[str, str], Any]:
    """One request: the status, headers and parsed body (None when empty)."""

    async def scenario(client: TestClient[Any, Any]) -> tuple[int, dict[str, str], Any]:
        response = await client.request(method, path, **request)
        text = await response.text()
        return response.status, dict(response.headers), json.loads(text) if text else None

    answer = run(fake or FakeOperations(), scenario, cluster, authenticator)
    return cast(tuple[int, dict[str, str], Any], answer)


def assert_problem(
    answer: tuple[int, dict[str, str], Any], status: int, title: str, *words: str
) -> dict[str, Any]:
    code, headers, body = answer
    assert code == status, body
    assert headers["Content-Type"].startswith("application/problem+json")
    assert body["type"] == "about:blank"
    assert body["title"] == title
    assert body["status"] == status
    for word in words:
        assert word in body["detail"], body["detail"]
    return cast(dict[str, Any], body)


def form(*resources: tuple[str, bytes], tenant: str | None = None) -> FormData:
    """A deployment as the SDKs send it: file names as they are (aiohttp would quote them)."""
    data = FormData(quote_fields=False)
    for name, content in resources:
        data.add_field("resources", content, filename=name, content_type="application/octet-stream")
    if tenant is not None:
        data.add_field("tenantId", tenant)
    return data
