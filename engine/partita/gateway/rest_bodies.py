"""The REST API's bodies: requests read (JSON objects, their fields, keys, deployment uploads)
and responses written (keys as strings).

What a request carries is checked here, before any command is built, and every mistake is a
`ProblemError` naming the field and what was wrong with it (`partita.gateway.rest_api` renders
it as an RFC 9457 document). Fields the 8.8 API does not have are skipped, as newer clients
send some (`tags`, `businessId`). Keys are JSON strings in the API; numbers are taken too.

Bodies are bounded: a JSON body by aiohttp's `client_max_size` (`MAX_JSON_BYTES`), a deployment
by the limits below while its multipart stream is read part by part, so neither a large upload
nor a slow client makes the gateway hold more than the limits.

Responses carry a few fields newer clients require beyond 8.8's (`brokerId`, a partition's
`state`, `tags`, `businessId`, a job's `physicalTenantId`, ...), each with the value a cluster
without that feature has: camunda-orchestration-sdk 10 refuses a response without them.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import BodyPartReader, web

from partita.gateway import decisions
from partita.gateway.activation import ActivatedJob
from partita.gateway.arguments import DEFAULT_TENANT, ad_hoc_result, job_result, object_document
from partita.gateway.grpc_api import GATEWAY_VERSION
from partita.gateway.operations import Operations
from partita.gateway.topology import PORT, Topology
from partita.protocol.records import Record
from partita.protocol.values import (
    DeploymentValue,
    ProcessInstanceCreationValue,
    ProcessInstanceResultValue,
)

MAX_JSON_BYTES = 4 << 20
"""The largest JSON request body (4 MiB, as the gRPC API's largest message)."""
MAX_PARTS = 100
"""The most parts one deployment request may have."""
MAX_RESOURCE_BYTES = 4 << 20
MAX_DEPLOYMENT_BYTES = 10 << 20
"""The most bytes one resource, and all parts of a deployment together, may hold."""
_CHUNK = 64 << 10
_MAX_KEY = (1 << 63) - 1

OPERATIONS = web.AppKey("operations", Operations)
"""The application's command layer (`operations_of` reads it in a handler)."""


def operations_of(request: web.Request) -> Operations:
    return request.app[OPERATIONS]


def no_content() -> web.Response:
    """204: a command that answers nothing."""
    return web.Response(status=204)


class ProblemError(Exception):
    """A request answered with an HTTP status, its title (`INVALID_ARGUMENT`) and a detail."""

    def __init__(self, http: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.http = http
        self.title = title
        self.detail = detail


def bad(detail: str) -> ProblemError:
    return ProblemError(400, "INVALID_ARGUMENT", detail)


def _mib(size: int) -> str:
    return f"{size >> 20} MiB"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def key(value: object, where: str) -> int:
    """A key given as a JSON string of digits or a number."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise bad(f"{where} must be a key (a string of digits), not {_shown(value)}")
    if not 0 < number <= _MAX_KEY:
        raise bad(f"{where} must be a key between 1 and {_MAX_KEY}, not {number}")
    return number


def path_key(request: web.Request, name: str) -> int:
    return key(request.match_info["key"], name)


def _shown(value: object) -> str:
    if isinstance(value, str):
        return repr(value[:40])
    return _type_name(value)


class Fields:
    """A request's JSON object, read field by field with the type each field must have."""

    def __init__(self, body: dict[str, Any], where: str = "") -> None:
        self.body = body
        self.where = where

    def _name(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def _get(self, name: str, required: bool) -> object:
        value = self.body.get(name)
        if value is None and required:
            raise bad(f"{self._name(name)} is required, but the request has none")
        return value

    def text(self, name: str, *, required: bool = False) -> str:
        value = self._get(name, required)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise bad(f"{self._name(name)} must be a string, not {_type_name(value)}")
        if required and not value:
            raise bad(f"{self._name(name)} is required, but it is empty")
        return value

    def integer(self, name: str, default: int = 0, *, required: bool = False) -> int:
        value = self._get(name, required)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"{self._name(name)} must be an integer, not {_type_name(value)}")
        return value

    def optional_integer(self, name: str) -> int | None:
        return None if self.body.get(name) is None else self.integer(name)

    def flag(self, name: str) -> bool:
        value = self._get(name, False)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise bad(f"{self._name(name)} must be true or false, not {_type_name(value)}")
        return value

    def key(self, name: str, *, required: bool = False) -> int:
        """-1 when absent (and not required)."""
        value = self._get(name, required)
        return -1 if value is None else key(value, self._name(name))

    def texts(self, name: str) -> list[str]:
        value = self._get(name, False)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad(f"{self._name(name)} must be an array of strings")
        return value

    def objects(self, name: str) -> list[Fields]:
        value = self._get(name, False)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise bad(f"{self._name(name)} must be an array of objects")
        return [Fields(v, f"{self._name(name)}[{i}]") for i, v in enumerate(value)]

    def object(self, name: str, *, required: bool = False) -> Fields | None:
        value = self._get(name, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise bad(f"{self._name(name)} must be an object, not {_type_name(value)}")
        return Fields(value, self._name(name))

    def present(self) -> dict[str, Any]:
        """The fields that are set (not null)."""
        return {name: value for name, value in self.body.items() if value is not None}

    def variables(self, name: str = "variables", *, required: bool = False) -> dict[str, Any]:
        """A variables document: an object (names to values), {} when absent."""
        return object_document(self._get(name, required), self._name(name))


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


async def json_body(request: web.Request, *, optional: bool = False) -> Fields:
    """The request's JSON object. An `optional` body may be left out (then it is {})."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ProblemError(
            413,
            "PAYLOAD_TOO_LARGE",
            f"The request body is larger than {_mib(MAX_JSON_BYTES)} ({MAX_JSON_BYTES} bytes),"
            " the most a JSON request may hold",
        ) from None
    if not raw.strip():
        if optional:
            return Fields({})
        raise bad(f"{request.method} {request.path} expects a JSON object, but the body is empty")
    if "Content-Type" in request.headers and not _is_json(request.content_type):
        raise ProblemError(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            f"The request body must be application/json, not {request.content_type}",
        )
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise bad(f"The request body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise bad(f"The request body must be a JSON object, not {_type_name(body)}")
    return Fields(body)


async def deployment(request: web.Request) -> tuple[list[tuple[str, bytes]], str | None]:
    """The resources (name, content) and tenant of a multipart/form-data deployment, read one
    part at a time within `MAX_PARTS`, `MAX_RESOURCE_BYTES` and `MAX_DEPLOYMENT_BYTES`."""
    if request.content_type != "multipart/form-data":
        raise ProblemError(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            f"A deployment is multipart/form-data (parts named 'resources'), not"
            f" {request.content_type}",
        )
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError, KeyError) as error:
        raise bad(f"The request body is not multipart/form-data: {error}") from None
    resources: list[tuple[str, bytes]] = []
    tenant_id: str | None = None
    parts = 0
    total = 0
    while True:
        try:
            part = await reader.next()
        except ValueError as error:
            raise bad(f"The multipart body is malformed: {error}") from None
        if part is None:
            break
        parts += 1
        if parts > MAX_PARTS:
            raise bad(f"A deployment may have at most {MAX_PARTS} parts, this one has more")
        if not isinstance(part, BodyPartReader):
            raise bad("A deployment's parts must not be multipart themselves")
        if part.name == "resources":
            name = part.filename or ""
            if not name:
                raise bad("A 'resources' part needs a filename: the resource's name")
            content = await _read(part, f"resource '{name}'", MAX_DEPLOYMENT_BYTES - total)
            total += len(content)
            resources.append((name, content))
        else:
            content = await _read(part, f"part '{part.name}'", MAX_DEPLOYMENT_BYTES - total)
            total += len(content)
            if part.name == "tenantId":
                tenant_id = content.decode("utf-8", "replace").strip()
    return resources, tenant_id


async def _read(part: BodyPartReader, what: str, left: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = await part.read_chunk(_CHUNK)
        except ValueError as error:
            raise bad(f"The multipart body is malformed in {what}: {error}") from None
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_RESOURCE_BYTES:
            raise ProblemError(
                413,
                "PAYLOAD_TOO_LARGE",
                f"{what} is larger than {_mib(MAX_RESOURCE_BYTES)}, the most one resource may hold",
            )
        if size > left:
            raise ProblemError(
                413,
                "PAYLOAD_TOO_LARGE",
                f"The deployment is larger than {_mib(MAX_DEPLOYMENT_BYTES)} in total, the most"
                " one deployment may hold",
            )
        chunks.append(chunk)
    return b"".join(chunks)


# -- responses --------------------------------------------------------------------------------


def topology_json(seen: Topology) -> dict[str, Any]:
    brokers = [
        {
            "nodeId": b.node_id,
            "brokerId": str(b.node_id),
            "host": b.host,
            "port": PORT,
            "version": GATEWAY_VERSION,
            "partitions": [
                {
                    "partitionId": p.partition_id,
                    "role": "leader",
                    "health": "healthy" if p.healthy else "unhealthy",
                    "state": "active",
                }
                for p in b.partitions
            ],
        }
        for b in seen.brokers
    ]
    return {
        "brokers": brokers,
        "clusterId": None,
        "clusterSize": len(seen.brokers),
        "partitionsCount": seen.partitions_count,
        "replicationFactor": seen.replication_factor,
        "gatewayVersion": GATEWAY_VERSION,
        "lastCompletedChangeId": "-1",
    }


def deployment_json(reply: Record) -> dict[str, Any]:
    """DEPLOYMENT CREATED as the API has it: a process definition per deployed process, a form
    per deployed form."""
    value = reply.value
    assert isinstance(value, DeploymentValue)
    deployments = [
        {
            "processDefinition": {
                "processDefinitionId": p.bpmn_process_id,
                "processDefinitionVersion": p.version,
                "resourceName": p.resource_name,
                "tenantId": p.tenant_id,
                "processDefinitionKey": str(p.process_definition_key),
            }
        }
        for p in value.processes_metadata
    ]
    deployments += decisions.rest_deployed(value)
    deployments += [
        {
            "form": {
                "formId": f.form_id,
                "version": f.version,
                "resourceName": f.resource_name,
                "tenantId": f.tenant_id,
                "formKey": str(f.form_key),
            }
        }
        for f in value.form_metadata
    ]
    return {"deploymentKey": str(reply.key), "tenantId": DEFAULT_TENANT, "deployments": deployments}


def instance_json(reply: Record, awaited: bool) -> dict[str, Any]:
    """PROCESS_INSTANCE_CREATION CREATED, or the PROCESS_INSTANCE_RESULT an awaiting request
    got: only the latter's variables are the instance's result."""
    value = reply.value
    assert isinstance(value, ProcessInstanceCreationValue | ProcessInstanceResultValue)
    return {
        "processDefinitionId": value.bpmn_process_id,
        "processDefinitionVersion": value.version,
        "processDefinitionKey": str(value.process_definition_key),
        "processInstanceKey": str(value.process_instance_key),
        "tenantId": value.tenant_id,
        "variables": json.loads(value.variables) if awaited else {},
        "tags": [],
        "businessId": None,
    }


def job_json(activated: ActivatedJob) -> dict[str, Any]:
    key, job = activated
    return {
        "jobKey": str(key),
        "type": job.type,
        "processInstanceKey": str(job.process_instance_key),
        "processDefinitionId": job.bpmn_process_id,
        "processDefinitionVersion": job.process_definition_version,
        "processDefinitionKey": str(job.process_definition_key),
        "elementId": job.element_id,
        "elementInstanceKey": str(job.element_instance_key),
        "customHeaders": dict(job.custom_headers),
        "worker": job.worker,
        "retries": job.retries,
        "deadline": job.deadline,
        "variables": json.loads(job.variables),
        "tenantId": job.tenant_id,
        "kind": job.job_kind.name,
        "listenerEventType": job.listener_event_type.name,
        "userTask": None,
        "physicalTenantId": "default",
        "tags": [],
        "rootProcessInstanceKey": None,
        "businessId": None,
        "priority": 0,
    }


def rest_job_result(result: Fields) -> dict[str, Any] | None:
    """`result` of a job completion: a job worker ad-hoc subprocess's, or a task listener's."""
    ad_hoc_fields = (
        "activateElements",
        "isCompletionConditionFulfilled",
        "isCancelRemainingInstances",
    )
    if result.text("type") == "adHocSubProcess" or any(
        result.body.get(name) is not None for name in ad_hoc_fields
    ):
        activate = [
            (element.text("elementId", required=True), element.variables())
            for element in result.objects("activateElements")
        ]
        return ad_hoc_result(
            activate,
            result.flag("isCompletionConditionFulfilled"),
            result.flag("isCancelRemainingInstances"),
        )
    corrections = result.object("corrections")
    return job_result(
        result.flag("denied"),
        result.text("deniedReason"),
        corrections.present() if corrections is not None else None,
    )
