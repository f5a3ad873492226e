"""The gateway's command layer: every operation of Zeebe's two client APIs as Partita commands.

The gRPC service (`partita.gateway.grpc_api`) and the REST API (`partita.gateway.rest_api`)
parse their requests into the arguments below and render what these return; neither builds a
command or reads a reply itself. Each operation sends its command through one `AsyncClient`
(commands on `<ns>.commands` with reply headers naming this gateway's reply partition, many in
flight) and raises `GatewayError` for anything but a result: a rejection in Zeebe's words, a
reply that did not come in time, an argument the engine would refuse or cannot take.

Backpressure is not retried here: Zeebe's clients retry RESOURCE_EXHAUSTED themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from partita.client import commands
from partita.client.aio import AsyncClient
from partita.client.commands import Request
from partita.client.errors import CommandRejectedError, ReplyTimeoutError
from partita.gateway.activation import JobActivation
from partita.gateway.arguments import resource_name, tenant
from partita.gateway.errors import GatewayError, Status, invalid, rejected, unimplemented
from partita.gateway.streams import JobStreams
from partita.gateway.waker import Parked
from partita.log.admin import answers_metadata
from partita.protocol.records import Record
from partita.protocol.values import (
    DeploymentValue,
)


class Operations:
    def __init__(
        self,
        client: AsyncClient,
        parked: Parked | None = None,
        streams: JobStreams | None = None,
    ) -> None:
        self.client = client
        self.jobs = JobActivation(client, parked, streams)
        self.partition_count = client.connection.partition_count
        self.activate_jobs = self.jobs.activate_jobs
        """ActivateJobs (`JobActivation.activate_jobs`)."""
        self.stream_jobs = self.jobs.stream_jobs
        """StreamActivatedJobs (`JobActivation.stream_jobs`)."""

    async def _request(self, request: Request, timeout: float | None = None) -> Record:
        try:
            return await self.client.request(request, timeout)
        except CommandRejectedError as error:
            raise rejected(error) from None
        except ReplyTimeoutError as error:
            raise await self._no_reply(error) from None

    async def _no_reply(self, error: ReplyTimeoutError) -> GatewayError:
        """UNAVAILABLE when Kafka itself does not answer (the command may not even be
        written), else DEADLINE_EXCEEDED (no engine answered in time)."""
        access = self.client.connection.access
        if not await asyncio.to_thread(answers_metadata, access, 2.0):
            return GatewayError(
                Status.UNAVAILABLE,
                f"Kafka at {access.bootstrap} does not answer; the request was not processed"
                " (or not answered): try again when the cluster is back",
            )
        return GatewayError(Status.DEADLINE_EXCEEDED, str(error))

    # -- resources and instances ----------------------------------------------------------

    async def deploy(self, resources: Sequence[tuple[str, bytes]], tenant_id: str | None) -> Record:
        """DEPLOYMENT CREATED: its key, and the processes' metadata in its value."""
        tenant(tenant_id)
        if not resources:
            raise invalid("Expected to deploy at least one resource, but none given")
        named = [(resource_name(name), content) for name, content in resources]
        reply = await self._request(commands.deploy(named))
        assert isinstance(reply.value, DeploymentValue)
        return reply

    async def create_instance(
        self,
        *,
        process_id: str = "",
        version: int = -1,
        definition_key: int = -1,
        variables: dict[str, Any] | None = None,
        tenant_id: str | None = None,
        start_at: Sequence[str] = (),
        await_result: bool = False,
        fetch_variables: Sequence[str] = (),
        timeout_s: float | None = None,
    ) -> Record:
        """PROCESS_INSTANCE_CREATION CREATED, or with `await_result` the completed instance's
        PROCESS_INSTANCE_RESULT COMPLETED with its variables."""
        tenant(tenant_id)
        if start_at:
            raise unimplemented(
                "Starting an instance at chosen elements (start instructions)",
                "the engine starts every instance at its none start event",
            )
        if definition_key <= 0 and not process_id:
            raise invalid("Expected either a process definition key or a BPMN process id")
        request = commands.create_instance(
            process_id,
            variables,
            version=version,
            await_result=await_result,
            fetch_variables=fetch_variables,
            definition_key=definition_key,
        )
        return await self._request(request, timeout_s)

    async def cancel_instance(self, key: int) -> Record:
        return await self._request(commands.cancel_instance(key))

    async def set_variables(self, scope_key: int, variables: dict[str, Any], local: bool) -> Record:
        return await self._request(commands.set_variables(scope_key, variables, local=local))

    async def resolve_incident(self, key: int) -> Record:
        return await self._request(commands.resolve_incident(key))

    async def assign_user_task(
        self, key: int, assignee: str, *, allow_override: bool = True, action: str = ""
    ) -> Record:
        """Assign (replacing any assignee), or with `allow_override` False claim: refused
        while someone else has the task."""
        if not assignee:
            raise invalid("assignee is required and must not be empty; unassign with DELETE")
        if allow_override:
            return await self._request(commands.assign_user_task(key, assignee, action=action))
        return await self._request(commands.claim_user_task(key, assignee, action=action))

    async def unassign_user_task(self, key: int) -> Record:
        return await self._request(commands.assign_user_task(key, "", action="unassign"))

    async def update_user_task(self, key: int, *, action: str = "", **attributes: Any) -> Record:
        """Change the attributes given (`commands.update_user_task`); priority 0 to 100."""
        priority = attributes.get("priority")
        if priority is not None and not 0 <= priority <= 100:
            raise invalid(f"priority must be 0 to 100, not {priority}")
        return await self._request(commands.update_user_task(key, action=action, **attributes))

    async def complete_user_task(
        self, key: int, variables: dict[str, Any] | None, *, action: str = ""
    ) -> Record:
        return await self._request(commands.complete_user_task(key, variables, action=action))

    async def evaluate_decision(
        self,
        decision_id: str,
        decision_key: int,
        variables: dict[str, Any] | None,
        tenant_id: str | None = None,
    ) -> Record:
        """DECISION_EVALUATION EVALUATED or FAILED (both answers, as in Zeebe)."""
        tenant(tenant_id)
        if decision_id and decision_key > 0:
            raise invalid("give either a decision id or a decision key, not both")
        request = commands.evaluate_decision(decision_id, variables, decision_key=decision_key)
        return await self._request(request)

    async def broadcast_signal(
        self, name: str, variables: dict[str, Any] | None, tenant_id: str | None = None
    ) -> Record:
        """SIGNAL BROADCASTED (its key is the signal's)."""
        tenant(tenant_id)
        if not name:
            raise invalid("signalName is required and must not be empty")
        return await self._request(commands.broadcast_signal(name, variables))

    async def publish_message(
        self,
        name: str,
        correlation_key: str,
        *,
        ttl_ms: int = -1,
        message_id: str = "",
        variables: dict[str, Any] | None = None,
        tenant_id: str | None = None,
    ) -> Record:
        """The reply says where the message went (`message_key` finds its key)."""
        tenant(tenant_id)
        if not name:
            raise invalid("Expected a message name, but it is empty")
        if ttl_ms < -1:
            raise invalid(f"timeToLive must not be negative, not {ttl_ms}")
        request = commands.publish_message(
            name, correlation_key, variables, ttl_ms=ttl_ms, message_id=message_id
        )
        return await self._request(request)

    # -- jobs -----------------------------------------------------------------------------

    async def complete_job(
        self, key: int, variables: dict[str, Any] | None, result: dict[str, Any] | None = None
    ) -> Record:
        """`result`: a task listener's (`arguments.job_result` shapes both APIs' into it)."""
        self.jobs.answered(key)
        return await self._request(commands.complete_job(key, variables, result))

    async def fail_job(
        self,
        key: int,
        retries: int,
        message: str,
        backoff_ms: int,
        variables: dict[str, Any] | None = None,
    ) -> Record:
        if backoff_ms < 0:
            raise invalid(f"retryBackOff must not be negative, not {backoff_ms}")
        self.jobs.answered(key)
        return await self._request(commands.fail_job(key, retries, message, backoff_ms, variables))

    async def throw_error(
        self, key: int, code: str, message: str, variables: dict[str, Any] | None
    ) -> Record:
        self.jobs.answered(key)
        return await self._request(commands.throw_error(key, code, message, variables))

    async def update_job_retries(self, key: int, retries: int) -> Record:
        if retries < 1:
            raise invalid(f"Expected retries to be greater than zero, but it was {retries}")
        return await self._request(commands.update_job_retries(key, retries))

    async def update_job_timeout(self, key: int, timeout_ms: int) -> Record:
        return await self._request(commands.update_job_timeout(key, timeout_ms))
