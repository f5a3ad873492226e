"""Zeebe's gRPC API (`gateway_protocol.Gateway`, 8.8's wire protocol) over `Operations`.

Each RPC parses its request into an operation's arguments and renders the result as Zeebe's
response; a `GatewayError` ends the call with its status code and message. RPCs the engine has
no command for yet answer UNIMPLEMENTED naming the missing capability. Fields that newer clients
add are skipped by protobuf, as Zeebe's gateway skips them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from confluent_kafka.admin import AdminClient
from google.protobuf.message import DecodeError

from partita.config import Config
from partita.gateway import decisions
from partita.gateway.activation import ActivatedJob
from partita.gateway.arguments import (
    DEFAULT_TENANT,
    document,
    grpc_job_result,
    message_key,
)
from partita.gateway.errors import GatewayError, Status, unimplemented
from partita.gateway.operations import Operations
from partita.gateway.stubs import Stubs
from partita.gateway.topology import PORT, topology
from partita.protocol.values import DeploymentValue, JobValue, ProcessInstanceCreationValue

GATEWAY_VERSION = "8.8.0"
"""What Topology reports as `gatewayVersion` (Modeler and Spring's health check read it)."""
_LOG = logging.getLogger("partita.gateway")
_STATUS_CODES = {status: grpc.StatusCode[status.value[0]] for status in Status}

Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Any]]


async def _fail(context: grpc.aio.ServicerContext, error: Exception, name: str) -> None:
    """End the call with the status of a `GatewayError`, and INTERNAL (logged) for a bug."""
    if isinstance(error, GatewayError):
        await context.abort(_STATUS_CODES[error.status], error.message)
    _LOG.exception("%s failed", name)
    await context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")


def _answers(method: Handler) -> Handler:
    """A unary RPC whose failures end the call (`_fail`)."""

    @functools.wraps(method)
    async def answer(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            return await method(self, request, context)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as error:
            await _fail(context, error, method.__name__)

    return answer


def _streams(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    """A streaming RPC whose failures end the call (`_fail`)."""

    @functools.wraps(method)
    async def stream(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        try:
            async for response in method(self, request, context):
                yield response
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as error:
            await _fail(context, error, method.__name__)

    return stream


class GatewayService:
    """One method per RPC of `gateway_protocol.Gateway` (`register` serves them)."""

    def __init__(
        self, stubs: Stubs, operations: Operations, admin: AdminClient, config: Config
    ) -> None:
        self.pb = stubs.messages
        self.operations = operations
        self.admin = admin
        self.config = config

    # -- cluster ----------------------------------------------------------------------------

    @_answers
    async def Topology(self, request: Any, context: Any) -> Any:  # noqa: N802
        seen = await asyncio.to_thread(
            topology, self.admin, self.config, self.operations.partition_count
        )
        pb = self.pb
        return pb.TopologyResponse(
            brokers=[
                pb.BrokerInfo(
                    nodeId=broker.node_id,
                    host=broker.host,
                    port=PORT,
                    version=GATEWAY_VERSION,
                    partitions=[
                        pb.Partition(
                            partitionId=p.partition_id,
                            role=pb.Partition.LEADER,
                            health=pb.Partition.HEALTHY if p.healthy else pb.Partition.UNHEALTHY,
                        )
                        for p in broker.partitions
                    ],
                )
                for broker in seen.brokers
            ],
            clusterSize=len(seen.brokers),
            partitionsCount=seen.partitions_count,
            replicationFactor=seen.replication_factor,
            gatewayVersion=GATEWAY_VERSION,
        )

    # -- resources --------------------------------------------------------------------------

    @_answers
    async def DeployResource(self, request: Any, context: Any) -> Any:  # noqa: N802
        resources = [(r.name, r.content) for r in request.resources]
        reply = await self.operations.deploy(resources, request.tenantId)
        return self.pb.DeployResourceResponse(
            key=reply.key,
            deployments=[
                *(self.pb.Deployment(process=p) for p in self._processes(reply)),
                *decisions.grpc_deployed(self.pb, reply),
                *(self.pb.Deployment(form=f) for f in self._forms(reply)),
            ],
            tenantId=DEFAULT_TENANT,
        )

    @_answers
    async def DeployProcess(self, request: Any, context: Any) -> Any:  # noqa: N802
        resources = [(p.name, p.definition) for p in request.processes]
        reply = await self.operations.deploy(resources, None)
        return self.pb.DeployProcessResponse(key=reply.key, processes=self._processes(reply))

    def _processes(self, reply: Any) -> list[Any]:
        value = reply.value
        assert isinstance(value, DeploymentValue)
        return [
            self.pb.ProcessMetadata(
                bpmnProcessId=p.bpmn_process_id,
                version=p.version,
                processDefinitionKey=p.process_definition_key,
                resourceName=p.resource_name,
                tenantId=p.tenant_id,
            )
            for p in value.processes_metadata
        ]

    def _forms(self, reply: Any) -> list[Any]:
        value = reply.value
        assert isinstance(value, DeploymentValue)
        return [
            self.pb.FormMetadata(
                formId=f.form_id,
                version=f.version,
                formKey=f.form_key,
                resourceName=f.resource_name,
                tenantId=f.tenant_id,
            )
            for f in value.form_metadata
        ]

    @_answers
    async def DeleteResource(self, request: Any, context: Any) -> Any:  # noqa: N802
        raise unimplemented("DeleteResource", "the engine cannot delete a deployed resource yet")

    # -- instances --------------------------------------------------------------------------

    async def _create(
        self, request: Any, *, await_result: bool, timeout_s: float | None, fetch: Any = ()
    ) -> Any:
        return await self.operations.create_instance(
            process_id=request.bpmnProcessId,
            version=request.version if request.version > 0 else -1,
            definition_key=request.processDefinitionKey,
            variables=document(request.variables, "variables"),
            tenant_id=request.tenantId,
            start_at=[i.elementId for i in request.startInstructions],
            await_result=await_result,
            fetch_variables=list(fetch),
            timeout_s=timeout_s,
        )

    @_answers
    async def CreateProcessInstance(self, request: Any, context: Any) -> Any:  # noqa: N802
        reply = await self._create(request, await_result=False, timeout_s=None)
        value = reply.value
        assert isinstance(value, ProcessInstanceCreationValue)
        return self.pb.CreateProcessInstanceResponse(
            processDefinitionKey=value.process_definition_key,
            bpmnProcessId=value.bpmn_process_id,
            version=value.version,
            processInstanceKey=value.process_instance_key,
            tenantId=value.tenant_id,
        )

    @_answers
    async def CreateProcessInstanceWithResult(self, request: Any, context: Any) -> Any:  # noqa: N802
        if request.requestTimeout < 0:
            raise GatewayError(Status.INVALID_ARGUMENT, "requestTimeout must not be negative")
        timeout_s = request.requestTimeout / 1000 if request.requestTimeout > 0 else None
        reply = await self._create(
            request.request, await_result=True, timeout_s=timeout_s, fetch=request.fetchVariables
        )
        value = reply.value
        return self.pb.CreateProcessInstanceWithResultResponse(
            processDefinitionKey=value.process_definition_key,
            bpmnProcessId=value.bpmn_process_id,
            version=value.version,
            processInstanceKey=value.process_instance_key,
            variables=value.variables,
            tenantId=value.tenant_id,
        )

    @_answers
    async def CancelProcessInstance(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.cancel_instance(request.processInstanceKey)
        return self.pb.CancelProcessInstanceResponse()

    @_answers
    async def SetVariables(self, request: Any, context: Any) -> Any:  # noqa: N802
        variables = document(request.variables, "variables")
        reply = await self.operations.set_variables(
            request.elementInstanceKey, variables, request.local
        )
        return self.pb.SetVariablesResponse(key=reply.key)

    @_answers
    async def ResolveIncident(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.resolve_incident(request.incidentKey)
        return self.pb.ResolveIncidentResponse()

    @_answers
    async def ModifyProcessInstance(self, request: Any, context: Any) -> Any:  # noqa: N802
        raise unimplemented(
            "ModifyProcessInstance", "the engine has no process instance modification yet"
        )

    @_answers
    async def MigrateProcessInstance(self, request: Any, context: Any) -> Any:  # noqa: N802
        raise unimplemented(
            "MigrateProcessInstance", "the engine has no process instance migration yet"
        )

    # -- messages, signals, decisions -------------------------------------------------------

    @_answers
    async def PublishMessage(self, request: Any, context: Any) -> Any:  # noqa: N802
        reply = await self.operations.publish_message(
            request.name,
            request.correlationKey,
            ttl_ms=request.timeToLive,
            message_id=request.messageId,
            variables=document(request.variables, "variables"),
            tenant_id=request.tenantId,
        )
        return self.pb.PublishMessageResponse(key=message_key(reply), tenantId=DEFAULT_TENANT)

    @_answers
    async def BroadcastSignal(self, request: Any, context: Any) -> Any:  # noqa: N802
        reply = await self.operations.broadcast_signal(
            request.signalName, document(request.variables, "variables"), request.tenantId
        )
        return self.pb.BroadcastSignalResponse(key=reply.key, tenantId=DEFAULT_TENANT)

    @_answers
    async def EvaluateDecision(self, request: Any, context: Any) -> Any:  # noqa: N802
        reply = await self.operations.evaluate_decision(
            request.decisionId,
            request.decisionKey,
            document(request.variables, "variables"),
            request.tenantId,
        )
        return decisions.grpc_evaluation(self.pb, reply)

    # -- jobs -------------------------------------------------------------------------------

    @_streams
    async def ActivateJobs(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802
        batches = self.operations.activate_jobs(
            request.type,
            worker=request.worker,
            timeout_ms=request.timeout,
            max_jobs=request.maxJobsToActivate,
            fetch_variables=list(request.fetchVariable),
            request_timeout_ms=request.requestTimeout,
            tenant_ids=list(request.tenantIds),
        )
        async for batch in batches:
            yield self.pb.ActivateJobsResponse(jobs=[self._job(job) for job in batch])

    @_streams
    async def StreamActivatedJobs(self, request: Any, context: Any) -> AsyncIterator[Any]:  # noqa: N802
        jobs = self.operations.stream_jobs(
            request.type,
            worker=request.worker,
            timeout_ms=request.timeout,
            fetch_variables=list(request.fetchVariable),
            tenant_ids=list(request.tenantIds),
        )
        async for job in jobs:
            activated = self._job(job)
            activated.worker = request.worker
            yield activated

    def _job(self, activated: ActivatedJob) -> Any:
        key, job = activated
        assert isinstance(job, JobValue)
        return self.pb.ActivatedJob(
            key=key,
            type=job.type,
            processInstanceKey=job.process_instance_key,
            bpmnProcessId=job.bpmn_process_id,
            processDefinitionVersion=job.process_definition_version,
            processDefinitionKey=job.process_definition_key,
            elementId=job.element_id,
            elementInstanceKey=job.element_instance_key,
            customHeaders=json.dumps(dict(job.custom_headers)),
            worker=job.worker,
            retries=job.retries,
            deadline=job.deadline,
            variables=job.variables,
            tenantId=job.tenant_id,
            kind=job.job_kind.name,
            listenerEventType=job.listener_event_type.name,
        )

    @_answers
    async def CompleteJob(self, request: Any, context: Any) -> Any:  # noqa: N802
        result = grpc_job_result(request.result) if request.HasField("result") else None
        await self.operations.complete_job(
            request.jobKey, document(request.variables, "variables"), result
        )
        return self.pb.CompleteJobResponse()

    @_answers
    async def FailJob(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.fail_job(
            request.jobKey,
            request.retries,
            request.errorMessage,
            request.retryBackOff,
            document(request.variables, "variables"),
        )
        return self.pb.FailJobResponse()

    @_answers
    async def ThrowError(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.throw_error(
            request.jobKey,
            request.errorCode,
            request.errorMessage,
            document(request.variables, "variables"),
        )
        return self.pb.ThrowErrorResponse()

    @_answers
    async def UpdateJobRetries(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.update_job_retries(request.jobKey, request.retries)
        return self.pb.UpdateJobRetriesResponse()

    @_answers
    async def UpdateJobTimeout(self, request: Any, context: Any) -> Any:  # noqa: N802
        await self.operations.update_job_timeout(request.jobKey, request.timeout)
        return self.pb.UpdateJobTimeoutResponse()


def register(server: grpc.aio.Server, service: GatewayService, stubs: Stubs) -> None:
    """Serve `service` for every RPC of `gateway_protocol.Gateway` in `stubs`. Requests reach
    the handlers as bytes and are parsed here, so a malformed one is INVALID_ARGUMENT naming
    its message type (gRPC's own deserializer would answer INTERNAL)."""
    messages = stubs.messages
    descriptor = messages.DESCRIPTOR.services_by_name["Gateway"]
    handlers = {}
    for method in descriptor.methods:
        request_type = getattr(messages, method.input_type.name)
        response_type = getattr(messages, method.output_type.name)
        call = getattr(service, method.name)
        if method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                _parsed_stream(call, request_type),
                response_serializer=response_type.SerializeToString,
            )
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                _parsed(call, request_type), response_serializer=response_type.SerializeToString
            )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(descriptor.full_name, handlers),)
    )


async def _parse(raw: bytes, request_type: Any, context: grpc.aio.ServicerContext) -> Any:
    try:
        return request_type.FromString(raw)
    except DecodeError as error:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the request is not a valid {request_type.DESCRIPTOR.full_name} message: {error}",
        )


def _parsed(call: Callable[..., Awaitable[Any]], request_type: Any) -> Callable[..., Any]:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        return await call(await _parse(raw, request_type, context), context)

    return handle


def _parsed_stream(
    call: Callable[..., AsyncIterator[Any]], request_type: Any
) -> Callable[..., Any]:
    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async for response in call(await _parse(raw, request_type, context), context):
            yield response

    return handle
