"""`partita deploy | create | cancel | jobs ... | incidents ...`: the client commands.

Each sends a command with a reply address and prints the result; rejections print their type
and reason (see `engine.client`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from engine.config import Config
from engine.errors import PartitaError

AddCommand = Callable[..., argparse.ArgumentParser]


def _client(args: argparse.Namespace) -> Any:
    from engine.cli import _config
    from engine.client import Client

    config: Config = _config(args)
    return Client(config, timeout=args.timeout)


def _json_arg(text: str | None) -> dict[str, object]:
    import json

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
    from pathlib import Path

    paths = [Path(p) for p in args.files]
    for path in paths:
        if not path.is_file():
            raise PartitaError(f"no such file: {path}")
    with _client(args) as client:
        result = client.deploy(*paths)
    for meta in result.value.processes_metadata:
        note = " (unchanged: an identical resource is deployed)" if meta.is_duplicate else ""
        print(
            f"{meta.bpmn_process_id} version {meta.version} key {meta.process_definition_key}{note}"
        )
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    with _client(args) as client:
        result = client.create_instance(
            args.process_id,
            _json_arg(args.vars),
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
    with _client(args) as client:
        client.cancel_instance(args.key)
    print(f"instance {args.key} cancelled")
    return 0


def cmd_jobs_complete(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.complete_job(args.key, _json_arg(args.vars))
    print(f"job {args.key} completed")
    return 0


def cmd_jobs_fail(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.fail_job(args.key, args.retries, args.message, backoff_ms=args.backoff)
    later = f", activatable again in {args.backoff} ms" if args.backoff and args.retries else ""
    print(f"job {args.key} failed ({args.retries} retries left{later})")
    return 0


def cmd_jobs_throw_error(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.throw_error(args.key, args.code, args.message)
    print(f"error {args.code!r} thrown for job {args.key}")
    return 0


def cmd_jobs_retries(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.update_job_retries(args.key, args.retries)
    print(f"job {args.key} has {args.retries} retries")
    return 0


def cmd_jobs_work(args: argparse.Namespace) -> int:
    """A demo job worker: activate jobs of a type and complete them with fixed variables."""
    import time

    variables = _json_arg(args.vars)
    done = 0
    deadline = time.monotonic() + args.duration if args.duration else None
    with _client(args) as client:
        while args.count is None or done < args.count:
            if deadline is not None and time.monotonic() > deadline:
                break
            jobs = client.activate_jobs(args.type, worker="partita-cli", max_jobs=32)
            for key, job in jobs:
                client.complete_job(key, variables)
                done += 1
                print(f"completed job {key} of instance {job.process_instance_key}", flush=True)
                if args.count is not None and done >= args.count:
                    break
            if not jobs:
                time.sleep(0.2)
    print(f"{done} jobs of type {args.type} completed")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from engine.config import duration_ms

    ttl = duration_ms(args.ttl, "--ttl") if args.ttl else -1
    with _client(args) as client:
        result = client.publish_message(
            args.name,
            args.correlation_key,
            _json_arg(args.vars),
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
    with _client(args) as client:
        client.resolve_incident(args.key)
    print(f"incident {args.key} resolved")
    return 0


def register(commands: Any, add: AddCommand) -> None:
    """Add the client commands to the `partita` parser (`add` is the CLI's helper)."""

    def client_command(
        sub: Any,
        name: str,
        func: Callable[[argparse.Namespace], int],
        help_text: str,
    ) -> argparse.ArgumentParser:
        p = add(sub, name, func, help_text, local=True)
        p.add_argument(
            "--timeout", type=float, default=30.0, help="seconds to wait for the reply (30)"
        )
        return p

    deploy = client_command(commands, "deploy", cmd_deploy, "deploy BPMN files")
    deploy.add_argument("files", nargs="+", metavar="FILE")
    create = client_command(commands, "create", cmd_create, "start a process instance")
    create.add_argument("process_id", metavar="PROCESS_ID")
    create.add_argument("--version", type=int, default=-1, help="version (default: latest)")
    create.add_argument("--vars", help="variables as a JSON object")
    create.add_argument(
        "--await", dest="wait", action="store_true", help="wait for completion, print variables"
    )
    create.add_argument("--fetch", nargs="*", help="with --await: only these variables")
    cancel = client_command(commands, "cancel", cmd_cancel, "cancel a process instance")
    cancel.add_argument("key", type=int, metavar="KEY")

    jobs = commands.add_parser("jobs", help="complete, fail or work on jobs")
    job_commands = jobs.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)
    job_complete = client_command(job_commands, "complete", cmd_jobs_complete, "complete a job")
    job_complete.add_argument("key", type=int, metavar="KEY")
    job_complete.add_argument("--vars", help="variables as a JSON object")
    job_fail = client_command(job_commands, "fail", cmd_jobs_fail, "fail a job")
    job_fail.add_argument("key", type=int, metavar="KEY")
    job_fail.add_argument("--retries", type=int, required=True, help="retries left")
    job_fail.add_argument("--message", default="", help="why it failed")
    job_fail.add_argument(
        "--backoff", type=int, default=0, metavar="MS", help="wait this long before a retry"
    )
    job_throw = client_command(
        job_commands, "throw-error", cmd_jobs_throw_error, "answer a job with a BPMN error"
    )
    job_throw.add_argument("key", type=int, metavar="KEY")
    job_throw.add_argument("--code", required=True, help="the error code (errorCode)")
    job_throw.add_argument("--message", default="", help="what happened")
    job_retries = client_command(job_commands, "retries", cmd_jobs_retries, "set a job's retries")
    job_retries.add_argument("key", type=int, metavar="KEY")
    job_retries.add_argument("--retries", type=int, required=True)
    job_work = client_command(
        job_commands, "work", cmd_jobs_work, "a demo worker: complete jobs of a type"
    )
    job_work.add_argument("type", metavar="TYPE")
    job_work.add_argument("--vars", help="variables every completion sets (JSON object)")
    job_work.add_argument("--count", type=int, help="stop after this many jobs")
    job_work.add_argument("--duration", type=float, help="stop after this many seconds")

    publish = client_command(commands, "publish", cmd_publish, "publish a message")
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

    from engine.cli_analytics import register_incidents_list

    incidents = commands.add_parser(
        "incidents",
        help="list open incidents (from `partita analytics`) or resolve one",
        description="Without an action: list the open incidents (as `list`).",
    )
    incident_commands = incidents.add_subparsers(dest="incidents_command", metavar="ACTION")
    register_incidents_list(incidents, incident_commands)
    resolve = client_command(incident_commands, "resolve", cmd_incidents_resolve, "resolve one")
    resolve.add_argument("key", type=int, metavar="KEY")
