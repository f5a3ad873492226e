"""The Camunda 8.8 REST API (`/v2`) over `Operations`, on aiohttp.

Each endpoint reads its request (`partita.gateway.rest_bodies`), calls the operation the gRPC
service calls for the same RPC, and renders the result as the API has it: JSON, keys as
strings, 204 for commands that answer nothing. Every failure is an RFC 9457 problem document
(`application/problem+json`: type, title, status, detail, instance): a `GatewayError` with its
status, a request the gateway cannot read, an unknown path (404) or method (405).

Every request but `GET /v2/status` (probed by load balancers, as the gRPC health service) is
first checked by the gateway's `Authenticator`, before its body is read: a refusal is 401 with
a `WWW-Authenticate` challenge. The JS SDK's empty `Authorization` header is no credential.

Endpoints the engine has no command for yet (resource deletion, modification, migration)
answer 501 naming the missing capability; searches and the
definitions' XML belong to the visibility work that follows and answer 501 too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from http import HTTPStatus

from aiohttp import web
from confluent_kafka.admin import AdminClient

from partita.config import Config
from partita.gateway import decisions, rest_user_tasks
from partita.gateway.arguments import DEFAULT_TENANT, message_key
from partita.gateway.auth import Authenticator
from partita.gateway.errors import GatewayError, Status, unimplemented
from partita.gateway.operations import Operations
from partita.gateway.rest_bodies import (
    MAX_JSON_BYTES,
    OPERATIONS,
    ProblemError,
    bad,
    deployment,
    deployment_json,
    instance_json,
    job_json,
    json_body,
    no_content,
    operations_of,
    path_key,
    rest_job_result,
    topology_json,
)
from partita.gateway.topology import Topology, topology
from partita.protocol.values import (
    MessageStartEventSubscriptionValue,
    MessageSubscriptionValue,
)

_LOG = logging.getLogger("partita.gateway")
Cluster = Callable[[], Topology]
"""Blocking: reads the topology (called in a thread)."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_CLUSTER: web.AppKey[Cluster] = web.AppKey("cluster")
_AUTHENTICATOR = web.AppKey("authenticator", Authenticator)
_OPEN = frozenset({"/v2/status"})


def problem(
    http: int, title: str, detail: str, instance: str, headers: dict[str, str] | None = None
) -> web.Response:
    body = {
        "type": "about:blank",
        "title": title,
        "status": http,
        "detail": detail,
        "instance": instance,
    }
    return web.Response(
        status=http,
        text=json.dumps(body),
        content_type="application/problem+json",
        headers=headers,
    )


@web.middleware
async def _problems(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except GatewayError as error:
        headers = None
        if error.status is Status.UNAUTHENTICATED:
            scheme = "Basic" if request.app[_AUTHENTICATOR].mode == "users" else "Bearer"
            headers = {"WWW-Authenticate": f'{scheme} realm="partita"'}
        return problem(
            error.status.http, error.status.value[0], error.message, request.path, headers
        )
    except ProblemError as error:
        return problem(error.http, error.title, error.detail, request.path)
    except web.HTTPMethodNotAllowed as error:
        allowed = ", ".join(sorted(error.allowed_methods))
        detail = f"{request.path} does not take {request.method}, only {allowed}"
        return problem(405, "METHOD_NOT_ALLOWED", detail, request.path, {"Allow": allowed})
    except web.HTTPNotFound:
        detail = f"No endpoint {request.method} {request.path} in the Camunda 8.8 REST API"
        return problem(404, "NOT_FOUND", detail, request.path)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        title = HTTPStatus(error.status).name
        return problem(error.status, title, error.text or error.reason, request.path)
    except Exception as error:
        _LOG.exception("%s %s failed", request.method, request.path)
        detail = f"{type(error).__name__}: {error}"
        return problem(500, "INTERNAL", detail, request.path)


@web.middleware
async def _authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path not in _OPEN:
        await request.app[_AUTHENTICATOR].check(request.headers.get("Authorization"))
    return await handler(request)


# -- cluster ----------------------------------------------------------------------------------


async def get_topology(request: web.Request) -> web.Response:
    seen = await asyncio.to_thread(request.app[_CLUSTER])
    return web.json_response(topology_json(seen))


async def get_status(request: web.Request) -> web.Response:
    seen = await asyncio.to_thread(request.app[_CLUSTER])
    if not seen.brokers:
        raise ProblemError(
            503, "UNAVAILABLE", "No engine worker is running: the cluster has no broker"
        )
    return no_content()


# -- resources and instances ------------------------------------------------------------------


async def create_deployment(request: web.Request) -> web.Response:
    resources, tenant_id = await deployment(request)
    reply = await operations_of(request).deploy(resources, tenant_id)
    return web.json_response(deployment_json(reply))


async def create_process_instance(request: web.Request) -> web.Response:
    body = await json_body(request)
    process_id = body.text("processDefinitionId")
    definition_key = body.key("processDefinitionKey")
    if process_id and definition_key > 0:
        raise bad("Give either processDefinitionId or processDefinitionKey, not both")
    await_result = body.flag("awaitCompletion")
    timeout_ms = body.integer("requestTimeout")
    version = body.integer("processDefinitionVersion", -1)
    if timeout_ms < 0:
        raise bad(f"requestTimeout must not be negative, not {timeout_ms}")
    reply = await operations_of(request).create_instance(
        process_id=process_id,
        version=version if version > 0 else -1,  # 0 or absent: the latest, as over gRPC
        definition_key=definition_key,
        variables=body.variables(),
        tenant_id=body.text("tenantId") or None,
        start_at=[i.text("elementId") for i in body.objects("startInstructions")],
        await_result=await_result,
        fetch_variables=body.texts("fetchVariables"),
        timeout_s=timeout_ms / 1000 if timeout_ms > 0 else None,
    )
    return web.json_response(instance_json(reply, await_result))


async def cancel_process_instance(request: web.Request) -> web.Response:
    key = path_key(request, "processInstanceKey")
    await json_body(request, optional=True)
    await operations_of(request).cancel_instance(key)
    return no_content()


async def set_variables(request: web.Request) -> web.Response:
    key = path_key(request, "elementInstanceKey")
    body = await json_body(request)
    variables = body.variables(required=True)
    await operations_of(request).set_variables(key, variables, body.flag("local"))
    return no_content()


async def resolve_incident(request: web.Request) -> web.Response:
    key = path_key(request, "incidentKey")
    await json_body(request, optional=True)
    await operations_of(request).resolve_incident(key)
    return no_content()


# -- messages ---------------------------------------------------------------------------------


async def publish_message(request: web.Request) -> web.Response:
    body = await json_body(request)
    reply = await operations_of(request).publish_message(
        body.text("name", required=True),
        body.text("correlationKey"),
        ttl_ms=body.integer("timeToLive", 0),
        message_id=body.text("messageId"),
        variables=body.variables(),
        tenant_id=body.text("tenantId") or None,
    )
    return web.json_response({"messageKey": str(message_key(reply)), "tenantId": DEFAULT_TENANT})


async def correlate_message(request: web.Request) -> web.Response:
    """Publish without buffering (a time to live of 0): the reply is the correlation, or the
    message alone when nothing waited for it."""
    body = await json_body(request)
    name = body.text("name", required=True)
    correlation_key = body.text("correlationKey")
    reply = await operations_of(request).publish_message(
        name,
        correlation_key,
        ttl_ms=0,
        variables=body.variables(),
        tenant_id=body.text("tenantId") or None,
    )
    value = reply.value
    if not isinstance(value, MessageSubscriptionValue | MessageStartEventSubscriptionValue):
        raise ProblemError(
            404,
            "NOT_FOUND",
            f"Expected to correlate message '{name}' with correlation key '{correlation_key}',"
            f" but no process instance waits for message '{name}' with that correlation key"
            " and no process starts by it (the message was not kept)",
        )
    return web.json_response(
        {
            "messageKey": str(message_key(reply)),
            "tenantId": DEFAULT_TENANT,
            "processInstanceKey": str(value.process_instance_key),
        }
    )


# -- jobs -------------------------------------------------------------------------------------


async def activate_jobs(request: web.Request) -> web.Response:
    body = await json_body(request)
    batches = operations_of(request).activate_jobs(
        body.text("type", required=True),
        worker=body.text("worker"),
        timeout_ms=body.integer("timeout", required=True),
        max_jobs=body.integer("maxJobsToActivate", required=True),
        fetch_variables=body.texts("fetchVariable"),
        request_timeout_ms=body.integer("requestTimeout"),
        tenant_ids=body.texts("tenantIds"),
    )
    jobs = [job_json(job) async for batch in batches for job in batch]
    return web.json_response({"jobs": jobs})


async def complete_job(request: web.Request) -> web.Response:
    key = path_key(request, "jobKey")
    body = await json_body(request, optional=True)
    result = body.object("result")
    outcome = rest_job_result(result) if result is not None else None
    await operations_of(request).complete_job(key, body.variables(), outcome)
    return no_content()


async def fail_job(request: web.Request) -> web.Response:
    key = path_key(request, "jobKey")
    body = await json_body(request, optional=True)
    await operations_of(request).fail_job(
        key,
        body.integer("retries"),
        body.text("errorMessage"),
        body.integer("retryBackOff"),
        body.variables(),
    )
    return no_content()


async def throw_error(request: web.Request) -> web.Response:
    key = path_key(request, "jobKey")
    body = await json_body(request)
    await operations_of(request).throw_error(
        key, body.text("errorCode", required=True), body.text("errorMessage"), body.variables()
    )
    return no_content()


async def update_job(request: web.Request) -> web.Response:
    key = path_key(request, "jobKey")
    body = await json_body(request)
    changeset = body.object("changeset", required=True)
    assert changeset is not None
    retries = changeset.optional_integer("retries")
    timeout = changeset.optional_integer("timeout")
    if retries is None and timeout is None:
        raise bad("changeset names nothing to change: give retries or timeout")
    if retries is not None:
        await operations_of(request).update_job_retries(key, retries)
    if timeout is not None:
        await operations_of(request).update_job_timeout(key, timeout)
    return no_content()


# -- decisions --------------------------------------------------------------------------------


async def evaluate_decision(request: web.Request) -> web.Response:
    """By `decisionDefinitionId` (its latest version) or `decisionDefinitionKey`, one of them;
    a failed evaluation is a 200 with its failure message, as in Camunda."""
    body = await json_body(request)
    decision_id, key = body.text("decisionDefinitionId"), body.key("decisionDefinitionKey")
    if bool(decision_id) == (key > 0):
        raise bad("give one of decisionDefinitionId and decisionDefinitionKey")
    reply = await operations_of(request).evaluate_decision(
        decision_id, key, body.variables(), body.text("tenantId") or None
    )
    return web.json_response(decisions.rest_evaluation(reply))


async def broadcast_signal(request: web.Request) -> web.Response:
    body = await json_body(request)
    reply = await operations_of(request).broadcast_signal(
        body.text("signalName", required=True), body.variables(), body.text("tenantId") or None
    )
    return web.json_response({"signalKey": str(reply.key), "tenantId": DEFAULT_TENANT})


# -- what the engine cannot do yet ------------------------------------------------------------


def _missing(what: str, why: str) -> Handler:
    async def answer(request: web.Request) -> web.Response:
        raise unimplemented(what, why)

    return answer


async def _search(request: web.Request) -> web.Response:
    raise unimplemented(
        f"{request.method} {request.path}",
        "searching and reading definitions belong to the visibility work that follows",
    )


_MISSING = [
    ("POST", "/v2/resources/{key}/deletion", "Deleting a resource", "no resource deletion"),
    (
        "POST",
        "/v2/process-instances/{key}/modification",
        "Modifying an instance",
        "no modification",
    ),
    ("POST", "/v2/process-instances/{key}/migration", "Migrating an instance", "no migration"),
]


# -- the application --------------------------------------------------------------------------


def rest_app(
    operations: Operations,
    admin: AdminClient | None = None,
    config: Config | None = None,
    *,
    cluster: Cluster | None = None,
    authenticator: Authenticator | None = None,
) -> web.Application:
    """The `/v2` application. The topology is read from Kafka through `admin` and `config`,
    or from `cluster` when given; no `authenticator` serves everyone."""
    if cluster is None:
        if admin is None or config is None:
            raise ValueError("rest_app needs admin and config, or cluster")
        kafka, settings = admin, config

        def cluster() -> Topology:
            return topology(kafka, settings, operations.partition_count)

    middlewares = [_problems, _authenticated]
    app = web.Application(middlewares=middlewares, client_max_size=MAX_JSON_BYTES)
    app[OPERATIONS] = operations
    app[_AUTHENTICATOR] = authenticator or Authenticator()
    app[_CLUSTER] = cluster
    add = app.router.add_route
    add("GET", "/v2/topology", get_topology)
    add("GET", "/v2/status", get_status)
    add("POST", "/v2/deployments", create_deployment)
    add("POST", "/v2/process-instances", create_process_instance)
    add("POST", "/v2/process-instances/{key}/cancellation", cancel_process_instance)
    add("PUT", "/v2/element-instances/{key}/variables", set_variables)
    add("POST", "/v2/incidents/{key}/resolution", resolve_incident)
    add("POST", "/v2/messages/publication", publish_message)
    add("POST", "/v2/messages/correlation", correlate_message)
    add("POST", "/v2/jobs/activation", activate_jobs)
    add("POST", "/v2/jobs/{key}/completion", complete_job)
    add("POST", "/v2/jobs/{key}/failure", fail_job)
    add("POST", "/v2/jobs/{key}/error", throw_error)
    add("PATCH", "/v2/jobs/{key}", update_job)
    rest_user_tasks.add_routes(add)
    add("POST", "/v2/decision-definitions/evaluation", evaluate_decision)
    add("POST", "/v2/signals/broadcast", broadcast_signal)
    for method, path, what, lacking in _MISSING:
        add(method, path, _missing(what, f"the engine has {lacking} yet"))
    add("POST", "/v2/{path:.+}/search", _search)
    add("GET", "/v2/process-definitions/{key}/xml", _search)
    return app


async def start_rest(
    address: str,
    operations: Operations,
    admin: AdminClient,
    config: Config,
    *,
    ssl_context: ssl.SSLContext | None = None,
    authenticator: Authenticator | None = None,
) -> tuple[web.AppRunner, int]:
    """Serve the app on `address` (host:port), over TLS with `ssl_context`; returns the runner
    and the bound port.

    A request whose client goes away is cancelled (`handler_cancellation`): a job activation
    that long-polls for a worker that left stops waiting instead of activating jobs for it."""
    app = rest_app(operations, admin, config, authenticator=authenticator)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    host, _, port = address.rpartition(":")
    site = web.TCPSite(runner, host, int(port), ssl_context=ssl_context, reuse_port=False)
    await site.start()
    return runner, int(runner.addresses[0][1]) if runner.addresses else int(port)
