"""The REST API's job endpoints (activation with long polling, completion, failure, errors,
updates), its routes (what the engine cannot do yet, unknown paths and methods) and its
authentication, over a fake `Operations` through aiohttp's test client (no broker)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiohttp import ClientSession
from confluent_kafka.admin import AdminClient

from partita.config import Config
from partita.gateway.activation import ActivatedJob
from partita.gateway.auth import Authenticator, hash_password
from partita.gateway.errors import GatewayError, Status
from partita.gateway.operations import Operations
from partita.gateway.rest_api import start_rest
from partita.protocol.values import (
    JobValue,
)
from tests.support.rest_fakes import BIG, FakeOperations, assert_problem, exchange, form

# -- jobs -----------------------------------------------------------------------------------------


def job(key: int, **fields: Any) -> ActivatedJob:
    value = JobValue(
        type="double",
        worker="w1",
        retries=3,
        deadline=1_700_000_000_000,
        variables='{"amount": 21}',
        custom_headers={"mode": "fast"},
        process_instance_key=BIG + 1,
        bpmn_process_id="gw-double",
        process_definition_version=2,
        process_definition_key=BIG + 2,
        element_id="double",
        element_instance_key=BIG + 3,
        **fields,
    )
    return key, value


def test_activate_jobs_collects_every_batch() -> None:
    fake = FakeOperations()
    fake.jobs = [[job(BIG + 10)], [job(BIG + 11), job(BIG + 12)]]
    request = {
        "type": "double",
        "worker": "w1",
        "timeout": 30000,
        "maxJobsToActivate": 5,
        "fetchVariable": ["amount"],
        "requestTimeout": 1000,
        "tenantIds": ["<default>"],
    }
    status, _, body = exchange("POST", "/v2/jobs/activation", fake=fake, json=request)
    assert status == 200
    assert [j["jobKey"] for j in body["jobs"]] == [str(BIG + k) for k in (10, 11, 12)]
    first = body["jobs"][0]
    assert first == {
        "jobKey": str(BIG + 10),
        "type": "double",
        "processInstanceKey": str(BIG + 1),
        "processDefinitionId": "gw-double",
        "processDefinitionVersion": 2,
        "processDefinitionKey": str(BIG + 2),
        "elementId": "double",
        "elementInstanceKey": str(BIG + 3),
        "customHeaders": {"mode": "fast"},
        "worker": "w1",
        "retries": 3,
        "deadline": 1_700_000_000_000,
        "variables": {"amount": 21},
        "tenantId": "<default>",
        "kind": "BPMN_ELEMENT",
        "listenerEventType": "UNSPECIFIED",
        "userTask": None,
        "physicalTenantId": "default",
        "tags": [],
        "rootProcessInstanceKey": None,
        "businessId": None,
        "priority": 0,
    }
    assert fake.calls == [
        (
            "activate_jobs",
            {
                "job_type": "double",
                "worker": "w1",
                "timeout_ms": 30000,
                "max_jobs": 5,
                "fetch_variables": ["amount"],
                "request_timeout_ms": 1000,
                "tenant_ids": ["<default>"],
            },
        )
    ]


def test_activate_jobs_with_none_and_with_missing_fields() -> None:
    request = {"type": "double", "timeout": 1000, "maxJobsToActivate": 1}
    status, _, body = exchange("POST", "/v2/jobs/activation", json=request)
    assert (status, body) == (200, {"jobs": []})
    answer = exchange("POST", "/v2/jobs/activation", json={"type": "double", "timeout": 1000})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "maxJobsToActivate is required")
    answer = exchange("POST", "/v2/jobs/activation", json={**request, "type": ""})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "type is required")


def test_complete_fail_and_throw_error() -> None:
    fake = FakeOperations()
    assert (
        exchange("POST", "/v2/jobs/5/completion", fake=fake, json={"variables": {"r": 1}})[0] == 204
    )
    assert exchange("POST", "/v2/jobs/6/completion", fake=fake)[0] == 204
    failure = {"retries": 2, "errorMessage": "boom", "retryBackOff": 1000}
    assert exchange("POST", "/v2/jobs/7/failure", fake=fake, json=failure)[0] == 204
    error = {"errorCode": "E1", "errorMessage": "bad", "variables": {"why": "x"}}
    assert exchange("POST", "/v2/jobs/8/error", fake=fake, json=error)[0] == 204
    assert fake.calls == [
        ("complete_job", {"key": 5, "variables": {"r": 1}}),
        ("complete_job", {"key": 6, "variables": {}}),
        (
            "fail_job",
            {"key": 7, "retries": 2, "message": "boom", "backoff_ms": 1000, "variables": {}},
        ),
        ("throw_error", {"key": 8, "code": "E1", "message": "bad", "variables": {"why": "x"}}),
    ]
    answer = exchange("POST", "/v2/jobs/8/error", json={"errorMessage": "bad"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "errorCode is required")
    answer = exchange("POST", "/v2/jobs/5/completion", json={"variables": [1]})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "variables must be a JSON object")
    answer = exchange(
        "POST",
        "/v2/jobs/5/completion",
        json={"result": {"corrections": {"assignedTo": "x"}}},
    )
    assert_problem(answer, 400, "INVALID_ARGUMENT", "result.corrections cannot hold assignedTo")
    answer = exchange(
        "POST",
        "/v2/jobs/5/completion",
        json={"result": {"type": "adHocSubProcess", "activateElements": [{"variables": {}}]}},
    )
    assert_problem(answer, 400, "INVALID_ARGUMENT", "result.activateElements[0].elementId")


def test_a_task_listeners_result_reaches_the_engine_in_its_names() -> None:
    fake = FakeOperations()
    result = {
        "type": "userTask",
        "denied": False,
        "corrections": {"assignee": "cy", "candidateGroups": [], "dueDate": None},
    }
    assert exchange("POST", "/v2/jobs/5/completion", fake=fake, json={"result": result})[0] == 204
    assert fake.calls == [
        (
            "complete_job",
            {
                "key": 5,
                "variables": {},
                "result": {
                    "denied": False,
                    "deniedReason": "",
                    "correctedAttributes": ["assignee", "candidateGroupsList"],
                    "corrections": {"assignee": "cy", "candidateGroupsList": []},
                },
            },
        )
    ]
    denial = {"result": {"denied": True, "deniedReason": "not yet"}}
    assert exchange("POST", "/v2/jobs/6/completion", fake=fake, json=denial)[0] == 204
    assert fake.calls[-1][1]["result"] == {"denied": True, "deniedReason": "not yet"}


def test_an_ad_hoc_subprocess_jobs_result_reaches_the_engine() -> None:
    fake = FakeOperations()
    result = {
        "type": "adHocSubProcess",
        "activateElements": [{"elementId": "lookup", "variables": {"q": 1}}, {"elementId": "x"}],
        "isCompletionConditionFulfilled": False,
        "isCancelRemainingInstances": True,
    }
    assert exchange("POST", "/v2/jobs/7/completion", fake=fake, json={"result": result})[0] == 204
    assert fake.calls[-1][1]["result"] == {
        "type": "adHocSubProcess",
        "activateElements": [
            {"elementId": "lookup", "variables": {"q": 1}},
            {"elementId": "x", "variables": {}},
        ],
        "isCompletionConditionFulfilled": False,
        "isCancelRemainingInstances": True,
    }
    untyped = {"result": {"isCompletionConditionFulfilled": True}}  # as the SDK sends it
    assert exchange("POST", "/v2/jobs/8/completion", fake=fake, json=untyped)[0] == 204
    assert fake.calls[-1][1]["result"]["isCompletionConditionFulfilled"] is True


def test_completing_a_job_twice_is_the_engines_not_found() -> None:
    fake = FakeOperations()
    fake.fail_with = GatewayError(
        Status.NOT_FOUND, "Command 'COMPLETE' rejected with code 'NOT_FOUND': no job 5"
    )
    answer = exchange("POST", "/v2/jobs/5/completion", fake=fake)
    body = assert_problem(answer, 404, "NOT_FOUND", "no job 5")
    assert body["instance"] == "/v2/jobs/5/completion"


def test_update_job_retries_and_timeout() -> None:
    fake = FakeOperations()
    request = {"changeset": {"retries": 4}}
    assert exchange("PATCH", f"/v2/jobs/{BIG}", fake=fake, json=request)[0] == 204
    assert fake.calls == [("update_job_retries", {"key": BIG, "retries": 4})]
    fake = FakeOperations()
    request = {"changeset": {"retries": 4, "timeout": 1000}}
    assert exchange("PATCH", f"/v2/jobs/{BIG}", fake=fake, json=request)[0] == 204
    assert fake.calls == [
        ("update_job_retries", {"key": BIG, "retries": 4}),
        ("update_job_timeout", {"key": BIG, "timeout_ms": 1000}),
    ]
    answer = exchange("PATCH", f"/v2/jobs/{BIG}", json={"retries": 4})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "changeset is required")
    answer = exchange("PATCH", f"/v2/jobs/{BIG}", json={"changeset": {}})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "nothing to change")


class ParkingOperations(FakeOperations):
    """Its job activation waits for a job that never comes, as a long poll does."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()
        self.left = asyncio.Event()

    async def activate_jobs(
        self, job_type: str, **arguments: Any
    ) -> AsyncIterator[list[ActivatedJob]]:
        self.parked.set()
        try:
            await asyncio.Event().wait()
            yield []
        finally:
            self.left.set()


def test_a_long_poll_ends_when_its_client_goes_away() -> None:
    """The served app (start_rest) cancels a request whose client left: a parked activation
    stops instead of activating jobs for nobody later."""

    async def main() -> bool:
        fake = ParkingOperations()
        unused = cast(AdminClient, object()), cast(Config, object())  # no topology asked for
        runner, port = await start_rest("127.0.0.1:0", cast(Operations, fake), *unused)
        try:
            request = {"type": "t", "timeout": 1000, "maxJobsToActivate": 1, "requestTimeout": 0}
            async with ClientSession() as session:
                url = f"http://127.0.0.1:{port}/v2/jobs/activation"
                posting = asyncio.create_task(session.post(url, json=request))
                await asyncio.wait_for(fake.parked.wait(), 5)
                posting.cancel()
            await asyncio.wait_for(fake.left.wait(), 5)
            return True
        finally:
            await runner.cleanup()

    assert asyncio.run(main())


# -- routes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "words"),
    [
        ("POST", "/v2/resources/5/deletion", "Deleting a resource"),
        ("POST", "/v2/process-instances/5/modification", "modification"),
        ("POST", "/v2/process-instances/5/migration", "migration"),
        ("POST", "/v2/process-instances/search", "visibility"),
        ("POST", "/v2/jobs/search", "visibility"),
        ("POST", "/v2/process-definitions/5/statistics/element-instances/search", "visibility"),
        ("GET", "/v2/process-definitions/5/xml", "visibility"),
    ],
)
def test_what_the_engine_cannot_do_yet_is_501(method: str, path: str, words: str) -> None:
    fake = FakeOperations()
    answer = exchange(method, path, fake=fake, json={})
    body = assert_problem(answer, 501, "UNIMPLEMENTED", words, "not supported by Partita")
    assert body["instance"] == path
    assert fake.calls == []


def test_an_unknown_path_is_404_and_a_wrong_method_405() -> None:
    answer = exchange("GET", "/v2/nothing-here")
    body = assert_problem(answer, 404, "NOT_FOUND", "/v2/nothing-here")
    assert body["instance"] == "/v2/nothing-here"
    answer = exchange("GET", "/v2/process-instances")
    assert_problem(answer, 405, "METHOD_NOT_ALLOWED", "GET", "POST")
    assert answer[1]["Allow"] == "POST"
    answer = exchange("DELETE", "/v2/topology")
    assert_problem(answer, 405, "METHOD_NOT_ALLOWED", "DELETE")


# -- authentication -------------------------------------------------------------------------------

TOKEN = "a-token-of-this-gateway"


def test_a_request_without_the_gateways_credentials_is_401_before_its_body_is_read() -> None:
    bearer = Authenticator(token=TOKEN)
    fake = FakeOperations()
    answer = exchange(
        "POST", "/v2/deployments", fake=fake, authenticator=bearer, data=form(("p.bpmn", b"<p/>"))
    )
    assert_problem(answer, 401, "UNAUTHENTICATED", "Authorization")
    assert answer[1]["WWW-Authenticate"] == 'Bearer realm="partita"'
    answer = exchange(
        "GET", "/v2/topology", authenticator=bearer, headers={"Authorization": "Bearer nope"}
    )
    assert_problem(answer, 401, "UNAUTHENTICATED", "not this gateway's")
    answer = exchange("GET", "/v2/nothing-here", authenticator=bearer)
    assert_problem(answer, 401, "UNAUTHENTICATED")  # no route is told to a stranger
    assert fake.calls == []


def test_the_gateways_credentials_are_served_and_status_is_open() -> None:
    bearer = Authenticator(token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert exchange("GET", "/v2/topology", authenticator=bearer, headers=headers)[0] == 200
    assert exchange("GET", "/v2/status", authenticator=bearer)[0] == 204
    users = Authenticator(users={"alice": hash_password("s3cret", iterations=1000)})
    answer = exchange("GET", "/v2/topology", authenticator=users, headers={"Authorization": ""})
    assert_problem(answer, 401, "UNAUTHENTICATED", "Basic")
    assert answer[1]["WWW-Authenticate"] == 'Basic realm="partita"'
    alice = {"Authorization": "Basic " + base64.b64encode(b"alice:s3cret").decode()}
    assert exchange("GET", "/v2/topology", authenticator=users, headers=alice)[0] == 200
