"""A camunda-orchestration-sdk 10.0.1 program, the SDK's public API only, run by
tests/gateway/test_rest.py with the SDK's own venv against `partita gateway`'s REST API:

    CAMUNDA_REST_ADDRESS=http://127.0.0.1:PORT python task_listeners.py USER_TASK_KEY
    CAMUNDA_REST_ADDRESS=http://127.0.0.1:PORT python task_listeners.py cancel INSTANCE_KEY

A task listener worker and a task list application at work on one user task of
tests/conformance/bpmn/task-listeners.bpmn, each step one JSON line: the creating listener's
job completed; the assigning listener's job completed with a correction of the assignee; a
completion the completing listener denies (the application gets 409); a completion both
completing listeners let through (the application's request ends after them). With `cancel`:
an instance of `task-listeners-cancel` cancelled, then its task's two canceling listeners'
jobs completed. Imports nothing of Partita.
"""

import asyncio
import sys

from camunda_orchestration_sdk import (
    CamundaAsyncClient,
    CancelProcessInstanceRequest,
    JobCompletionRequest,
    JobResultCorrections,
    JobResultUserTask,
    UserTaskCompletionRequest,
)
from camunda_orchestration_sdk.errors import ApiError
from sdk_steps import one_job, say


async def complete_task(client: CamundaAsyncClient, key: str) -> str:
    try:
        await client.complete_user_task(key, data=UserTaskCompletionRequest())
    except ApiError as error:
        return f"{type(error).__name__} {error.status_code}"
    return "completed"


async def main(key: str) -> None:
    async with CamundaAsyncClient() as client:
        created = await one_job(client, "tl-create")
        say("creating", kind=str(created.kind), event=str(created.listener_event_type))
        await client.complete_job(created.job_key)

        assigning = await one_job(client, "tl-assign")
        headers = assigning.custom_headers.to_dict()
        say("assigning", assignee=headers.get("io.camunda.zeebe:assignee"))
        corrected = JobResultUserTask(corrections=JobResultCorrections(assignee="bob"))
        await client.complete_job(assigning.job_key, data=JobCompletionRequest(result=corrected))

        completing = asyncio.create_task(complete_task(client, key))
        check = await one_job(client, "tl-check")
        denial = JobResultUserTask(denied=True, denied_reason="needs a second look")
        await client.complete_job(check.job_key, data=JobCompletionRequest(result=denial))
        say("denied", answer=await completing)

        completing = asyncio.create_task(complete_task(client, key))
        for job_type in ("tl-check", "tl-final"):
            job = await one_job(client, job_type)
            await client.complete_job(job.job_key)
        say("completed", answer=await completing)


async def cancel(instance_key: str) -> None:
    async with CamundaAsyncClient() as client:
        await client.cancel_process_instance(instance_key, data=CancelProcessInstanceRequest())
        say("cancelled")
        for job_type in ("tl-cancel-a", "tl-cancel-b"):
            job = await one_job(client, job_type)
            headers = job.custom_headers.to_dict()
            say(
                job_type,
                event=str(job.listener_event_type),
                task=headers.get("io.camunda.zeebe:userTaskKey"),
            )
            await client.complete_job(job.job_key)


if __name__ == "__main__":
    if sys.argv[1] == "cancel":
        asyncio.run(cancel(sys.argv[2]))
    else:
        asyncio.run(main(sys.argv[1]))
