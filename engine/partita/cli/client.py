"""`partita deploy | create | cancel | publish | jobs ... | incidents resolve`: the client
commands.

Each sends a command with a reply address and prints the result; rejections print their type
and reason (see `partita.client`). `partita incidents` without an action, and `incidents list`,
read the running analytics (`partita.cli.analytics`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any, Literal

from partita.cli.analytics import INCIDENTS_EPILOG, register_incidents_list
from partita.cli.common import (
    Command,
    Subcommands,
    add_command,
    add_group,
    build_config,
    progress,
)
from partita.config import Config, duration_ms
from partita.errors import PartitaError

DEPLOY_EXAMPLES = """examples:
  partita deploy examples/order-pricing.bpmn
  partita deploy a.bpmn b.bpmn         one deployment; prints each process's version and key

A resource identical to the deployed one is not deployed again ("unchanged").
"""

CREATE_EXAMPLES = """examples:
  partita create order-pricing --vars '{"amount": 20}'
  partita create order-pricing --version 2
  partita create order-pricing --vars '{"amount": 20}' --await --fetch price
                                       wait for the end and print only the variable price
"""

CANCEL_EXAMPLES = """examples:
  partita cancel 2251799813685249      the process instance key `partita create` printed
"""

JOBS_EXAMPLES = """examples:
  partita jobs work price --vars '{"price": 21.5}'   complete every job of type price
  partita jobs complete 2251799813685262 --vars '{"price": 21.5}'
  partita jobs fail 2251799813685262 --retries 2 --message "card declined" --backoff 5000
"""

COMPLETE_EXAMPLES = """examples:
  partita jobs complete 2251799813685262
  partita jobs complete 2251799813685262 --vars '{"price": 21.5}'
"""

FAIL_EXAMPLES = """examples:
  partita jobs fail 2251799813685262 --retries 2 --message "card declined"
  partita jobs fail 2251799813685262 --retries 2 --backoff 5000   activatable again in 5 s
  partita jobs fail 2251799813685262 --retries 0 --message "gave up"   raises an incident
"""

THROW_EXAMPLES = """examples:
  partita jobs throw-error 2251799813685262 --code CARD_DECLINED --message "no funds"

The nearest error boundary event or error event subprocess for this errorCode catches it;
uncaught, it raises an incident naming the code.
"""

RETRIES_EXAMPLES = """examples:
  partita jobs retries 2251799813685262 --retries 3   then resolve its incident, if it has one
"""

WORK_EXAMPLES = """examples:
  partita jobs work price --vars '{"price": 21.5}'   until Ctrl-C
  partita jobs work notify --count 10                stop after 10 jobs
  partita jobs work notify --duration 60             stop after a minute
  partita jobs work notify --poll                    ask for jobs instead of taking pushed ones

It takes pushed jobs from <ns>.jobs.TYPE (made here when this principal may create topics)
in the consumer group <ns>.workers.TYPE; while that group has members the engine pushes the
type's jobs, otherwise they wait for pollers (as Zeebe pushes only to open job streams).
"""

PUBLISH_EXAMPLES = """examples:
  partita publish payment-received --correlation-key order-42 --vars '{"paid": true}'
  partita publish payment-received --correlation-key order-42 --ttl PT1H --message-id pay-42
  partita publish payment-received --correlation-key order-42 --await
                                       print the instance it reached, or that it is buffered
"""

RESOLVE_EXAMPLES = """examples:
  partita incidents resolve 2251799813685262   after fixing the cause (variables, retries)
"""


def open_client(args: argparse.Namespace) -> Any:
    """A Client (Any: the commands read the fields of whichever reply value comes back)."""
    from partita.client import Client

    return Client(build_config(args), timeout=args.timeout)


def json_arg(text: str | None) -> dict[str, object]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise PartitaError(f"--vars is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise PartitaError("--vars must be a JSON object, e.g. '{\"orderId\": 42}'")
    return value


def cmd_deploy(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.files]
    for path in paths:
        if not path.is_file():
            raise PartitaError(f"no such file: {path}")
    with open_client(args) as client:
        result = client.deploy(*paths)
    for meta in result.value.processes_metadata:
        note = " (unchanged: an identical resource is deployed)" if meta.is_duplicate else ""
        print(
            f"{meta.bpmn_process_id} version {meta.version} key {meta.process_definition_key}{note}"
        )
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        result = client.create_instance(
            args.process_id,
            json_arg(args.vars),
            version=args.version,
            await_result=args.wait,
            fetch_variables=args.fetch or (),
        )
    value = result.value
    if args.wait:
        print(f"instance {value.process_instance_key} completed: {value.variables}")
    else:
        print(
            f"instance {value.process_instance_key} of {value.bpmn_process_id}"
            f" version {value.version} created"
        )
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.cancel_instance(args.key)
    print(f"instance {args.key} cancelled")
    return 0


def cmd_jobs_complete(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.complete_job(args.key, json_arg(args.vars))
    print(f"job {args.key} completed")
    return 0


def cmd_jobs_fail(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.fail_job(args.key, args.retries, args.message, backoff_ms=args.backoff)
    later = f", activatable again in {args.backoff} ms" if args.backoff and args.retries else ""
    print(f"job {args.key} failed ({args.retries} retries left{later})")
    return 0


def cmd_jobs_throw_error(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.throw_error(args.key, args.code, args.message)
    print(f"error {args.code!r} thrown for job {args.key}")
    return 0


def cmd_jobs_retries(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.update_job_retries(args.key, args.retries)
    print(f"job {args.key} has {args.retries} retries")
    return 0


def cmd_jobs_work(args: argparse.Namespace) -> int:
    """A demo job worker: complete jobs of a type with fixed variables. It takes pushed jobs
    (joining the type's workers on `<ns>.jobs.<type>`, made here when this principal may);
    where the job topic cannot be made, or with --poll, it polls."""
    from partita.client import Client, JobWorker
    from partita.client.tasks import ActivatedJob

    variables = json_arg(args.vars)
    config = build_config(args)
    with Client(config, timeout=args.timeout) as client:
        mode: Literal["push", "poll"] = "poll" if args.poll else "push"
        if mode == "push":
            try:
                _ensure_job_topic(config, client, args.type)
            except PartitaError as error:
                progress(f"polling for jobs of type {args.type}: {error}")
                mode = "poll"
        worker = JobWorker(config, "partita-cli", mode=mode, client=client, concurrency=1)

        @worker.task(args.type)
        def work(job: ActivatedJob) -> dict[str, object]:
            print(f"completed job {job.key} of instance {job.process_instance_key}", flush=True)
            return variables

        worker.install_signal_handlers()
        progress(f"working jobs of type {args.type} ({mode}); Ctrl-C to stop")
        stats = worker.run(duration=args.duration, max_jobs=args.count)
    print(f"{stats.completed} jobs of type {args.type} completed")
    return 0


def _ensure_job_topic(config: Config, client: Any, job_type: str) -> None:
    """`<ns>.jobs.<type>` exists after this, or PartitaError says why it cannot."""
    from partita.log.admin import admin_client
    from partita.log.topics import apply_topics, job_topic_spec

    topics = client.connection.consumer.list_topics(timeout=client.timeout).topics
    if config.job_topic(job_type) in topics:
        return
    actual = dataclasses.replace(config, partitions=client.partition_count)
    apply_topics(admin_client(client.connection.access), [job_topic_spec(actual, job_type)])


def cmd_publish(args: argparse.Namespace) -> int:
    ttl = duration_ms(args.ttl, "--ttl") if args.ttl else -1
    with open_client(args) as client:
        result = client.publish_message(
            args.name,
            args.correlation_key,
            json_arg(args.vars),
            ttl_ms=ttl,
            message_id=args.message_id or "",
            await_result=args.wait,
        )
    if result is None:
        print(f"message {args.name!r} ({args.correlation_key}) published")
        return 0
    value = result.value
    kind = result.value_type.name
    if kind == "MESSAGE_SUBSCRIPTION":
        print(
            f"message {value.message_key} correlated to process instance"
            f" {value.process_instance_key} ({value.bpmn_process_id}, element instance"
            f" {value.element_instance_key})"
        )
    elif kind == "MESSAGE_START_EVENT_SUBSCRIPTION":
        print(
            f"message {value.message_key} started process instance"
            f" {value.process_instance_key} of {value.bpmn_process_id}"
        )
    else:
        print(f"message {result.key} buffered: nothing waits for it yet")
    return 0


def cmd_incidents_resolve(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.resolve_incident(args.key)
    print(f"incident {args.key} resolved")
    return 0


def client_command(
    commands: Subcommands, name: str, func: Command, help_text: str, examples: str
) -> argparse.ArgumentParser:
    parser = add_command(commands, name, func, help_text, examples=examples, local=True)
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for the reply (30)"
    )
    return parser


def register(commands: Subcommands) -> None:
    """Add the client commands: deploy, create, cancel, jobs, publish and incidents."""
    deploy = client_command(commands, "deploy", cmd_deploy, "deploy BPMN files", DEPLOY_EXAMPLES)
    deploy.add_argument("files", nargs="+", metavar="FILE")
    create = client_command(
        commands, "create", cmd_create, "start a process instance", CREATE_EXAMPLES
    )
    create.add_argument("process_id", metavar="PROCESS_ID")
    create.add_argument("--version", type=int, default=-1, help="version (default: latest)")
    create.add_argument("--vars", help="variables as a JSON object")
    create.add_argument(
        "--await", dest="wait", action="store_true", help="wait for completion, print variables"
    )
    create.add_argument("--fetch", nargs="*", help="with --await: only these variables")
    cancel = client_command(
        commands, "cancel", cmd_cancel, "cancel a process instance", CANCEL_EXAMPLES
    )
    cancel.add_argument("key", type=int, metavar="KEY")

    _, jobs = add_group(
        commands,
        "jobs",
        "complete, fail or work on jobs",
        examples=JOBS_EXAMPLES,
        dest="jobs_command",
    )
    complete = client_command(
        jobs, "complete", cmd_jobs_complete, "complete a job", COMPLETE_EXAMPLES
    )
    complete.add_argument("key", type=int, metavar="KEY")
    complete.add_argument("--vars", help="variables as a JSON object")
    fail = client_command(jobs, "fail", cmd_jobs_fail, "fail a job", FAIL_EXAMPLES)
    fail.add_argument("key", type=int, metavar="KEY")
    fail.add_argument("--retries", type=int, required=True, help="retries left")
    fail.add_argument("--message", default="", help="why it failed")
    fail.add_argument(
        "--backoff", type=int, default=0, metavar="MS", help="wait this long before a retry"
    )
    throw = client_command(
        jobs, "throw-error", cmd_jobs_throw_error, "answer a job with a BPMN error", THROW_EXAMPLES
    )
    throw.add_argument("key", type=int, metavar="KEY")
    throw.add_argument("--code", required=True, help="the error code (errorCode)")
    throw.add_argument("--message", default="", help="what happened")
    retries = client_command(
        jobs, "retries", cmd_jobs_retries, "set a job's retries", RETRIES_EXAMPLES
    )
    retries.add_argument("key", type=int, metavar="KEY")
    retries.add_argument("--retries", type=int, required=True)
    work = client_command(
        jobs, "work", cmd_jobs_work, "a demo worker: complete jobs of a type", WORK_EXAMPLES
    )
    work.add_argument("type", metavar="TYPE")
    work.add_argument("--vars", help="variables every completion sets (JSON object)")
    work.add_argument("--count", type=int, help="stop after this many jobs")
    work.add_argument(
        "--poll",
        action="store_true",
        help="ask for jobs (ActivateJobs) instead of taking pushed ones from the job topic",
    )
    work.add_argument("--duration", type=float, help="stop after this many seconds")

    publish = client_command(
        commands, "publish", cmd_publish, "publish a message", PUBLISH_EXAMPLES
    )
    publish.add_argument("name", metavar="NAME", help="the message name")
    publish.add_argument("--correlation-key", required=True, metavar="KEY")
    publish.add_argument("--vars", help="message variables as a JSON object")
    publish.add_argument(
        "--ttl", metavar="DURATION", help="time to live, ISO-8601 (PT1M) or ms (default PT5M)"
    )
    publish.add_argument("--message-id", metavar="ID", help="deduplicate by this id while alive")
    publish.add_argument(
        "--await",
        dest="wait",
        action="store_true",
        help="wait for the engine and print where the message went",
    )

    incidents, actions = add_group(
        commands,
        "incidents",
        "list open incidents (from `partita analytics`) or resolve one",
        examples=INCIDENTS_EPILOG,
        dest="incidents_command",
        required=False,
        description="Without an action: list the open incidents (as `list`).",
    )
    register_incidents_list(incidents, actions)
    resolve = client_command(
        actions, "resolve", cmd_incidents_resolve, "resolve one", RESOLVE_EXAMPLES
    )
    resolve.add_argument("key", type=int, metavar="KEY")
