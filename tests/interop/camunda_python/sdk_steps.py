"""What the camunda-orchestration-sdk programs beside this file share (run with the SDK's own
venv; the script's folder is on their path): one JSON line per step, and the one job of a type,
long-polled through the SDK's public API. Imports nothing of Partita."""

import json

from camunda_orchestration_sdk import CamundaAsyncClient, JobActivationRequest


def say(step: str, **fields: object) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


async def one_job(client: CamundaAsyncClient, job_type: str) -> object:
    """The one job of `job_type`, long-polled (five requests of 20 s at most)."""
    request = JobActivationRequest(
        type_=job_type, timeout=60_000, max_jobs_to_activate=1, request_timeout=20_000
    )
    for _ in range(5):
        found = (await client.activate_jobs(data=request)).jobs
        if found:
            return found[0]
    raise SystemExit(f"no job of type {job_type}")
