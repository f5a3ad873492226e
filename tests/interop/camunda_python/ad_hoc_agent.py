"""A camunda-orchestration-sdk 10.0.1 program, the SDK's public API only, run by
tests/gateway/test_camunda_python.py with the SDK's own venv against `partita gateway`'s REST
API:

    CAMUNDA_REST_ADDRESS=http://127.0.0.1:PORT python ad_hoc_agent.py

An agent at work on one instance of tests/conformance/bpmn/ad-hoc-agent.bpmn (a job worker
ad-hoc subprocess), each step one JSON line: the agent's first job (what it may activate), its
result activating the lookup tool with its arguments, the tool's job, the agent's next job
(after the tool's path completed) and its result completing the subprocess. Imports nothing of
Partita.
"""

import asyncio

from camunda_orchestration_sdk import (
    CamundaAsyncClient,
    JobCompletionRequest,
    JobCompletionRequestVariables,
    JobResultActivateElement,
    JobResultActivateElementVariables,
    JobResultAdHocSubProcess,
)
from sdk_steps import one_job, say


async def main() -> None:
    async with CamundaAsyncClient() as client:
        agent = await one_job(client, "agent")
        offered = agent.variables.to_dict()["adHocSubProcessElements"]
        say("agent", kind=str(agent.kind), tools=[tool["elementId"] for tool in offered])
        arguments = JobResultActivateElementVariables.from_dict({"toolName": "lookup"})
        call = JobResultActivateElement(element_id="lookup", variables=arguments)
        decided = JobResultAdHocSubProcess(activate_elements=[call])
        await client.complete_job(agent.job_key, data=JobCompletionRequest(result=decided))

        tool = await one_job(client, "lookup")
        say("tool", toolName=tool.variables.to_dict().get("toolName"))
        answer = JobCompletionRequestVariables.from_dict({"answer": "shipped"})
        await client.complete_job(tool.job_key, data=JobCompletionRequest(variables=answer))

        agent = await one_job(client, "agent")
        say("agent-again", results=agent.variables.to_dict().get("toolCallResults"))
        done = JobResultAdHocSubProcess(is_completion_condition_fulfilled=True)
        await client.complete_job(agent.job_key, data=JobCompletionRequest(result=done))
        say("done")


if __name__ == "__main__":
    asyncio.run(main())
