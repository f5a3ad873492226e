"""A camunda-orchestration-sdk 10.0.1 program, the SDK's public API only, run by
tests/gateway/test_rest.py with the SDK's own venv (it is not a dependency of the
checkout) against `partita gateway`'s REST API:

    CAMUNDA_REST_ADDRESS=http://127.0.0.1:PORT python journey.py BPMN_DIR

Prints one JSON line per step: the topology, a deployment from files, an instance created with
awaitCompletion while the SDK's job worker works its task, a buffered message an instance
started later consumes, a message correlated to a waiting instance, the SDK's errors for a
message nothing waits for and an unknown process, and a DMN deployed and a decision evaluated.
Imports nothing of Partita.
"""

import asyncio
import os
import sys
from pathlib import Path

from camunda_orchestration_sdk import (
    CamundaAsyncClient,
    ConnectedJobContext,
    DecisionEvaluationByID,
    DecisionEvaluationByIdVariables,
    MessageCorrelationRequest,
    MessageCorrelationRequestVariables,
    MessagePublicationRequest,
    MessagePublicationRequestVariables,
    ProcessCreationById,
    ProcessInstanceCreationInstructionBaseVariables,
    WorkerConfig,
)
from camunda_orchestration_sdk.errors import ApiError
from sdk_steps import say


def by_id(process_id: str, awaiting: bool, **variables: object) -> ProcessCreationById:
    return ProcessCreationById(
        process_definition_id=process_id,  # type: ignore[arg-type]
        variables=ProcessInstanceCreationInstructionBaseVariables.from_dict(variables),
        await_completion=awaiting,
        request_timeout=30_000 if awaiting else 0,
    )


async def double(job: ConnectedJobContext) -> dict[str, object]:
    amount = job.variables.to_dict()["amount"]
    factor = int(job.custom_headers.to_dict()["factor"])
    return {"amount": amount * factor, "by": job.worker}


async def failure(call: object) -> dict[str, object]:
    try:
        await call  # type: ignore[misc]
    except ApiError as error:
        return {"error": type(error).__name__, "status": error.status_code}
    return {"error": None}


async def main(bpmn_dir: Path) -> None:
    async with CamundaAsyncClient() as client:
        topology = await client.get_topology()
        say(
            "topology",
            brokers=len(topology.brokers),
            partitions=topology.partitions_count,
            version=topology.gateway_version,
        )

        deployed = await client.deploy_resources_from_files(
            [bpmn_dir / "double.bpmn", bpmn_dir / "wait.bpmn"]
        )
        say(
            "deploy",
            key=str(deployed.deployment_key),
            processes=sorted(str(p.process_definition_id) for p in deployed.processes),
        )

        config = WorkerConfig(
            job_type="gw-double",
            job_timeout_milliseconds=30_000,
            request_timeout_milliseconds=5_000,
            worker_name="sdk-worker",
        )
        client.create_job_worker(config=config, callback=double, execution_strategy="async")
        result = await client.create_process_instance(data=by_id("gw-double", True, amount=21))
        say(
            "await-completion",
            key=str(result.process_instance_key),
            variables=result.variables.to_dict(),
        )

        published = await client.publish_message(
            data=MessagePublicationRequest(
                name="gw-paid",
                correlation_key="o-8",
                time_to_live=60_000,
                variables=MessagePublicationRequestVariables.from_dict({"paidBy": "card"}),
            )
        )
        buffered = await client.create_process_instance(data=by_id("gw-wait", True, orderId="o-8"))
        say(
            "buffered-message",
            key=str(published.message_key),
            variables=buffered.variables.to_dict(),
        )

        waiting = await client.create_process_instance(data=by_id("gw-wait", False, orderId="o-9"))
        await asyncio.sleep(1.0)  # the instance subscribes to the message first
        correlated = await client.correlate_message(
            data=MessageCorrelationRequest(
                name="gw-paid",
                correlation_key="o-9",
                variables=MessageCorrelationRequestVariables.from_dict({"paidBy": "cash"}),
            )
        )
        say(
            "correlate",
            instance=str(waiting.process_instance_key),
            correlated=str(correlated.process_instance_key),
            key=str(correlated.message_key),
        )

        nobody = client.correlate_message(
            data=MessageCorrelationRequest(name="gw-paid", correlation_key="o-nobody")
        )
        say("correlate-nobody", **await failure(nobody))
        unknown = client.create_process_instance(data=by_id("gw-unknown", False))
        say("unknown-process", **await failure(unknown))

        dish = bpmn_dir.parent.parent / "dmn" / "dish.dmn"
        dmn = await client.deploy_resources_from_files([dish])
        asked = DecisionEvaluationByID(
            decision_definition_id="discount",  # type: ignore[arg-type]
            variables=DecisionEvaluationByIdVariables.from_dict({"total": 150}),
        )
        evaluated = await client.evaluate_decision(data=asked)
        say(
            "decision",
            decisions=sorted(str(d.decision_definition_id) for d in dmn.decisions),
            output=evaluated.output,
            version=evaluated.decision_definition_version,
            failure=evaluated.failure_message,
        )


if __name__ == "__main__":
    os.environ.setdefault("CAMUNDA_AUTH_STRATEGY", "NONE")
    asyncio.run(main(Path(sys.argv[1])))
