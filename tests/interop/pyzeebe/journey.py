"""A pyzeebe 4.7 program, unchanged pyzeebe API only, run by tests/gateway/test_pyzeebe.py
in a process of its own (pyzeebe's stubs and the gateway's cannot share a process).

    python journey.py ADDRESS BPMN_DIR

Prints one JSON line per step: topology, deploy, a form deployed with the process linking it, a
DMN deployed and one of its decisions evaluated, a signal broadcast to an instance waiting for it,
a process whose execution listeners the worker completes, a booking compensated by the worker's
handlers, processes of the conformance corpus (inclusive gateways, links, job elements,
escalations), a worker's task run with result, messages an instance waits for, and a task that
always fails (its job becomes an incident after its retries, which the test reads from the log).
No `from __future__ import annotations`: pyzeebe reads the task functions' annotations
(`job: Job`) at run time.
"""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pyzeebe import Job, ZeebeClient, ZeebeWorker, create_insecure_channel


def say(step: str, **fields: object) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


async def main(address: str, bpmn_dir: Path) -> None:
    channel = create_insecure_channel(grpc_address=address)
    client = ZeebeClient(channel)
    worker = ZeebeWorker(channel, name="journey-worker", poll_retry_delay=0)

    topology = await client.topology()
    say(
        "topology",
        brokers=len(topology.brokers),
        partitions=topology.partitions_count,
        version=topology.gateway_version,
    )

    deployed = await client.deploy_resource(
        *(str(bpmn_dir / f"{name}.bpmn") for name in ("double", "fails", "wait", "streamed"))
    )
    say("deploy", processes=sorted(d.bpmn_process_id for d in deployed.deployments))
    forms = bpmn_dir.parent / "forms"
    linked = await client.deploy_resource(
        str(forms / "claim.form"), str(forms / "form-latest.bpmn")
    )
    dmn = bpmn_dir.parent.parent / "dmn" / "dish.dmn"
    deployed_dmn = await client.deploy_resource(str(dmn))
    evaluated = await client.evaluate_decision(None, "discount", variables={"total": 600})
    say(
        "decision",
        kinds=sorted({type(d).__name__ for d in deployed_dmn.deployments}),
        output=evaluated.decision_output,
        evaluated=[d.decision_id for d in evaluated.evaluated_decisions],
        failure=evaluated.failure_message,
    )
    say(
        "deploy-form",
        kinds=sorted(type(d).__name__ for d in linked.deployments),
        forms=[[d.form_id, d.version] for d in linked.deployments if hasattr(d, "form_id")],
    )

    @worker.task(task_type="gw-double")
    async def double(job: Job, amount: int) -> dict[str, object]:
        return {"amount": amount * int(job.custom_headers["factor"]), "by": job.worker}

    @worker.task(task_type="gw-boom")
    async def boom(amount: int) -> dict[str, object]:
        raise RuntimeError(f"cannot handle amount {amount}")

    results: dict[str, dict[str, object]] = {
        "open-file": {"origin": "pyzeebe"},  # execution listeners are jobs too
        "prepare": {"prepared": True},
        "check-front": {},
        "work": {"result": 42},
        "audit": {"audited": True},
        "route": {"large": True},
        "close-file": {"closed": True},
        "book-hotel": {},  # a booking, then its compensation
        "charge": {},
        "refund": {"refunded": True},
        "cancel-hotel": {"cancelled": True},
        "wrap": {},  # an inclusive gateway's branches
        "express": {},
        "ship": {},
        "send-mail": {},  # send, script, business rule and job-based user tasks, throw events
        "score-script": {"score": 7},
        "rules": {"approved": True},
        "io.camunda.zeebe:userTask": {"signedOff": "pyzeebe"},
        "notify": {},
        "publish-end": {},
        "drive": {},  # an escalation's
        "apologise": {},
    }
    for job_type, result in results.items():
        worker.task(task_type=job_type)(_returning(result))

    streamer = ZeebeWorker(channel, name="journey-streamer", stream_enabled=True)

    @streamer.task(task_type="gw-streamed")
    async def streamed(amount: int) -> dict[str, object]:
        await asyncio.sleep(1.5)  # long enough for the gateway to make the job the worker's
        return {"amount": amount + 1}

    working = asyncio.create_task(worker.work())
    streaming = asyncio.create_task(streamer.work())
    try:
        result = await client.run_process_with_result("gw-double", {"amount": 21}, timeout=30_000)
        say("run-with-result", variables=result.variables, key=result.process_instance_key)

        waiting = asyncio.create_task(
            client.run_process_with_result("gw-wait", {"orderId": "o-7"}, timeout=30_000)
        )
        await asyncio.sleep(1.0)  # the instance subscribes to the message first
        published = await client.publish_message(
            "gw-paid", correlation_key="o-7", variables={"paidBy": "card"}
        )
        done = await waiting
        say("message", key=published.key, variables=done.variables)

        await asyncio.sleep(3.0)  # the engine sees the stream's gateway among the type's workers
        result = await client.run_process_with_result("gw-streamed", {"amount": 1}, timeout=30_000)
        say("streamed", variables=result.variables)

        await _conformance_models(client, bpmn_dir.parents[2] / "conformance" / "bpmn")

        failing = await client.run_process("gw-fails", {"amount": 5})
        say("failing", key=failing.process_instance_key)
        await asyncio.sleep(3.0)  # both attempts fail: an incident
    finally:
        await worker.stop()
        await streamer.stop()
        await working
        await streaming


async def _conformance_models(client: ZeebeClient, folder: Path) -> None:
    """A signal broadcast to an instance waiting for it; a process with execution listeners;
    a booking compensated by its handlers; inclusive gateways, links, job elements (send,
    script, business rule and job-based user tasks, message throw and end events) and
    escalations, as the conformance corpus has them."""
    await client.deploy_resource(str(folder / "signals.bpmn"))
    waiting = await client.run_process("signals", {"order": "o-9"})
    await asyncio.sleep(1.0)  # the instance waits for the signal "go"
    sent = await client.broadcast_signal("go", {"goBy": "pyzeebe"})
    say("signal", key=sent.key, instance=waiting.process_instance_key)

    await client.deploy_resource(str(folder / "execution-listeners.bpmn"))
    result = await client.run_process_with_result(
        "execution-listeners", {"amount": 5, "desk": "front"}, timeout=30_000
    )
    say("listeners", variables=result.variables, key=result.process_instance_key)

    await client.deploy_resource(str(folder / "compensation.bpmn"))
    result = await client.run_process_with_result("compensation", {"failed": True}, timeout=30_000)
    say("compensation", variables=result.variables, key=result.process_instance_key)

    for model, process_id, variables in (
        ("inclusive.bpmn", "inclusive", {"gift": True, "express": True}),
        ("links.bpmn", "links", {}),
        ("job-elements.bpmn", "job-elements", {"owner": "ann", "reviewers": [], "count": 1}),
    ):
        await client.deploy_resource(str(folder / model))
        result = await client.run_process_with_result(process_id, variables, timeout=30_000)
        say(process_id, variables=result.variables)
    await client.deploy_resource(str(folder / "escalations.bpmn"))
    escalating = await client.run_process("escalations", {"stuck": True})
    say("escalations", key=escalating.process_instance_key)


def _returning(result: dict[str, object]) -> Any:
    async def handler() -> dict[str, object]:
        return result

    return handler


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
