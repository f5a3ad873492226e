"""The REST API's user task commands over a fake command layer: what each request asks the
engine to do, and the problems bad requests and the engine's rejections become."""

from __future__ import annotations

from partita.gateway.errors import GatewayError, Status
from tests.support.rest_fakes import BIG, FakeOperations, assert_problem, exchange


def test_assignment_is_an_assign_or_with_allow_override_false_a_claim() -> None:
    fake = FakeOperations()
    path = f"/v2/user-tasks/{BIG}/assignment"
    assert exchange("POST", path, fake=fake, json={"assignee": "ann"})[0] == 204
    claim = {"assignee": "bob", "allowOverride": False, "action": "pick"}
    assert exchange("POST", path, fake=fake, json=claim)[0] == 204
    assert exchange("DELETE", f"/v2/user-tasks/{BIG}/assignee", fake=fake)[0] == 204
    assert fake.calls == [
        ("assign_user_task", {"key": BIG, "assignee": "ann", "allow_override": True, "action": ""}),
        (
            "assign_user_task",
            {"key": BIG, "assignee": "bob", "allow_override": False, "action": "pick"},
        ),
        ("unassign_user_task", {"key": BIG}),
    ]
    answer = exchange("POST", path, json={})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "assignee is required")
    answer = exchange("POST", path, json={"assignee": "ann", "allowOverride": "no"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "allowOverride must be true or false")
    answer = exchange("POST", "/v2/user-tasks/x1/assignment", json={"assignee": "ann"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "userTaskKey")


def test_completion_and_update_pass_what_is_present() -> None:
    fake = FakeOperations()
    completion = {"variables": {"approved": True}, "action": "approve"}
    assert exchange("POST", "/v2/user-tasks/5/completion", fake=fake, json=completion)[0] == 204
    assert exchange("POST", "/v2/user-tasks/6/completion", fake=fake)[0] == 204
    changes = {
        "changeset": {
            "dueDate": "2027-01-15T12:00:00Z",
            "followUpDate": None,  # null keeps the value
            "candidateGroups": [],  # [] clears it
            "priority": 80,
        }
    }
    assert exchange("PATCH", "/v2/user-tasks/7", fake=fake, json=changes)[0] == 204
    assert fake.calls == [
        ("complete_user_task", {"key": 5, "variables": {"approved": True}, "action": "approve"}),
        ("complete_user_task", {"key": 6, "variables": {}, "action": ""}),
        (
            "update_user_task",
            {
                "key": 7,
                "action": "",
                "candidate_groups": [],
                "due_date": "2027-01-15T12:00:00Z",
                "priority": 80,
            },
        ),
    ]
    answer = exchange("POST", "/v2/user-tasks/5/completion", json={"variables": "x"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "variables must be a JSON object")
    answer = exchange("PATCH", "/v2/user-tasks/7", json={"changeset": {"priority": "high"}})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "priority")


def test_a_claim_of_a_task_someone_has_is_the_engines_conflict() -> None:
    fake = FakeOperations()
    fake.fail_with = GatewayError(
        Status.FAILED_PRECONDITION,
        "Command 'CLAIM' rejected with code 'INVALID_STATE': Expected to claim user task with"
        " key '5', but it has already been assigned",
    )
    request = {"assignee": "bob", "allowOverride": False}
    answer = exchange("POST", "/v2/user-tasks/5/assignment", fake=fake, json=request)
    assert_problem(answer, 409, "FAILED_PRECONDITION", "it has already been assigned")
