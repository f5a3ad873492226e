"""A camunda-orchestration-sdk 10.0.1 program, the SDK's public API only, run by
tests/gateway/test_rest.py with the SDK's own venv against `partita gateway`'s REST API:

    CAMUNDA_REST_ADDRESS=http://127.0.0.1:PORT python user_tasks.py USER_TASK_KEY

What a task list application does with one user task, each step one JSON line: assign it,
fail to claim it for someone else, unassign it, claim it, update its due date, candidate
groups and priority, complete it with variables, and fail to complete it twice. The test finds
the key on the log (task searches belong to the visibility work). Imports nothing of Partita.
"""

import asyncio
import datetime
import sys

from camunda_orchestration_sdk import (
    CamundaAsyncClient,
    Changeset,
    UserTaskAssignmentRequest,
    UserTaskCompletionRequest,
    UserTaskCompletionRequestVariables,
    UserTaskUpdateRequest,
)
from camunda_orchestration_sdk.errors import ApiError
from sdk_steps import say


async def attempt(step: str, call: object) -> None:
    try:
        await call  # type: ignore[misc]
    except ApiError as error:
        say(step, error=type(error).__name__, status=error.status_code)
        return
    say(step, error=None)


async def main(key: str) -> None:
    async with CamundaAsyncClient() as client:
        await attempt(
            "assign",
            client.assign_user_task(key, data=UserTaskAssignmentRequest(assignee="ann")),
        )
        claim = UserTaskAssignmentRequest(assignee="bob", allow_override=False)
        await attempt("claim-taken", client.assign_user_task(key, data=claim))
        await attempt("unassign", client.unassign_user_task(key))
        await attempt("claim", client.assign_user_task(key, data=claim))
        due = datetime.datetime(2027, 1, 15, 12, 0, tzinfo=datetime.UTC)
        changes = Changeset(due_date=due, candidate_groups=["audit"], priority=80)
        await attempt(
            "update", client.update_user_task(key, data=UserTaskUpdateRequest(changeset=changes))
        )
        variables = UserTaskCompletionRequestVariables.from_dict({"approved": True})
        done = UserTaskCompletionRequest(variables=variables)
        await attempt("complete", client.complete_user_task(key, data=done))
        await attempt("complete-again", client.complete_user_task(key, data=done))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
