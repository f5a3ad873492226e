"""`partita tasks`: the open user tasks (from `partita analytics`), and a person's commands on
one: assign, claim, unassign, update and complete (sent to the engine with a reply address)."""

from __future__ import annotations

import argparse
import json

from partita.cli.analytics import add_query_flags, fetch, render_table, timestamp_text
from partita.cli.client import client_command, json_arg, open_client
from partita.cli.common import Subcommands, add_command, add_group

TASKS_EXAMPLES = """examples:
  partita tasks                                  open user tasks, most urgent first
  partita tasks list --candidate-group sales     the tasks the sales group may claim
  partita tasks list --assignee ann --due-before 2026-12-31T00:00:00Z
  partita tasks claim 2251799813685301 ann       ann takes it, unless someone has it
  partita tasks complete 2251799813685301 --vars '{"approved": true}'
"""
LIST_EXAMPLES = """examples:
  partita tasks list
  partita tasks list --unassigned --candidate-group sales
  partita tasks list --json
"""
ASSIGN_EXAMPLES = """examples:
  partita tasks assign 2251799813685301 bob      bob has it now, whoever had it before
"""
CLAIM_EXAMPLES = """examples:
  partita tasks claim 2251799813685301 ann       refused if someone else has it
"""
UNASSIGN_EXAMPLES = """examples:
  partita tasks unassign 2251799813685301
"""
UPDATE_EXAMPLES = """examples:
  partita tasks update 2251799813685301 --due 2027-01-15T12:00:00Z --priority 80
  partita tasks update 2251799813685301 --candidate-groups sales,audit
  partita tasks update 2251799813685301 --follow-up ''    clears the follow-up date
"""
COMPLETE_EXAMPLES = """examples:
  partita tasks complete 2251799813685301
  partita tasks complete 2251799813685301 --vars '{"approved": true}'
"""


def cmd_tasks_list(args: argparse.Namespace) -> int:
    found = fetch(
        args.url,
        "/api/user-tasks",
        {
            "assignee": getattr(args, "assignee", None),
            "unassigned": "true" if getattr(args, "unassigned", False) else None,
            "candidateGroup": getattr(args, "candidate_group", None),
            "candidateUser": getattr(args, "candidate_user", None),
            "process": getattr(args, "process", None),
            "dueBefore": getattr(args, "due_before", None),
            "limit": getattr(args, "limit", None),
        },
        token=getattr(args, "token", None),
    )
    if getattr(args, "json", False):
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print("No open user tasks match.")
        return 0
    rows = [
        (
            t["userTaskKey"],
            t["bpmnProcessId"],
            t["elementId"],
            t["assignee"] or "-",
            ",".join(t["candidateGroups"]) or "-",
            ",".join(t["candidateUsers"]) or "-",
            t["dueDate"] or "-",
            t["priority"],
            timestamp_text(t["created"]),
        )
        for t in found
    ]
    columns = ("TASK", "PROCESS", "ELEMENT", "ASSIGNEE", "GROUPS", "USERS", "DUE", "PRIO", "SINCE")
    print(render_table(columns, rows))
    return 0


def cmd_tasks_assign(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.assign_user_task(args.key, args.assignee)
    print(f"user task {args.key} assigned to {args.assignee}")
    return 0


def cmd_tasks_claim(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.claim_user_task(args.key, args.assignee)
    print(f"user task {args.key} claimed by {args.assignee}")
    return 0


def cmd_tasks_unassign(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.assign_user_task(args.key, "", action="unassign")
    print(f"user task {args.key} unassigned")
    return 0


def cmd_tasks_update(args: argparse.Namespace) -> int:
    def names(text: str | None) -> list[str] | None:
        return None if text is None else [n.strip() for n in text.split(",") if n.strip()]

    attributes = {
        "candidate_groups": names(args.candidate_groups),
        "candidate_users": names(args.candidate_users),
        "due_date": args.due,
        "follow_up_date": args.follow_up,
        "priority": args.priority,
    }
    with open_client(args) as client:
        event = client.update_user_task(args.key, **attributes)
    changed = ", ".join(event.value.changed_attributes) or "nothing (the values were the same)"
    print(f"user task {args.key} updated: {changed}")
    return 0


def cmd_tasks_complete(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        client.complete_user_task(args.key, json_arg(args.vars))
    print(f"user task {args.key} completed")
    return 0


def _list_flags(parser: argparse.ArgumentParser, *, in_subcommand: bool = False) -> None:
    def default(value: object) -> object:
        return argparse.SUPPRESS if in_subcommand else value

    add_query_flags(parser, in_subcommand=in_subcommand)
    parser.add_argument("--assignee", default=default(None), help="only tasks assigned to this")
    parser.add_argument(
        "--unassigned", action="store_true", default=default(False), help="only unassigned"
    )
    parser.add_argument(
        "--candidate-group", default=default(None), metavar="GROUP", help="claimable by GROUP"
    )
    parser.add_argument(
        "--candidate-user", default=default(None), metavar="USER", help="claimable by USER"
    )
    parser.add_argument(
        "--due-before", default=default(None), metavar="DATE_TIME", help="due before (ISO 8601)"
    )
    parser.add_argument("--limit", type=int, default=default(100), help="at most (100)")


def register(commands: Subcommands) -> None:
    """Add `partita tasks` (list, assign, claim, unassign, update, complete)."""
    tasks, actions = add_group(
        commands,
        "tasks",
        "list open user tasks (from `partita analytics`), assign, claim or complete one",
        examples=TASKS_EXAMPLES,
        dest="tasks_command",
        required=False,
        description="Without an action: list the open user tasks (as `list`).",
    )
    _list_flags(tasks)
    tasks.set_defaults(func=cmd_tasks_list)
    listing = add_command(
        actions,
        "list",
        cmd_tasks_list,
        "open user tasks, the most urgent first",
        examples=LIST_EXAMPLES,
        cluster=False,
    )
    _list_flags(listing, in_subcommand=True)
    for name, func, help_text, examples in (
        ("assign", cmd_tasks_assign, "assign a task (replacing any assignee)", ASSIGN_EXAMPLES),
        ("claim", cmd_tasks_claim, "claim a task unless someone else has it", CLAIM_EXAMPLES),
    ):
        parser = client_command(actions, name, func, help_text, examples)
        parser.add_argument("key", type=int, metavar="KEY")
        parser.add_argument("assignee", metavar="USER")
    unassign = client_command(
        actions, "unassign", cmd_tasks_unassign, "take a task's assignee away", UNASSIGN_EXAMPLES
    )
    unassign.add_argument("key", type=int, metavar="KEY")
    update = client_command(
        actions, "update", cmd_tasks_update, "change candidates, dates or priority", UPDATE_EXAMPLES
    )
    update.add_argument("key", type=int, metavar="KEY")
    update.add_argument("--candidate-groups", metavar="A,B", help="who may claim it (groups)")
    update.add_argument("--candidate-users", metavar="A,B", help="who may claim it (users)")
    update.add_argument("--due", metavar="DATE_TIME", help="due date (ISO 8601; '' clears it)")
    update.add_argument("--follow-up", metavar="DATE_TIME", help="follow-up date ('' clears)")
    update.add_argument("--priority", type=int, help="0 to 100")
    complete = client_command(
        actions, "complete", cmd_tasks_complete, "complete a task", COMPLETE_EXAMPLES
    )
    complete.add_argument("key", type=int, metavar="KEY")
    complete.add_argument("--vars", help="variables as a JSON object")
