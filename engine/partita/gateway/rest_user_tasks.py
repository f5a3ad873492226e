"""The REST API's user task commands: assignment (`allowOverride: false` is a claim), removing
the assignee, completion with variables, and updating candidates, dates and priority. Each
answers 204 once the engine has written the task's final event; the engine's rejections map as
every command's do (404 unknown task, 409 not in state CREATED or someone else has it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from partita.gateway.rest_bodies import bad, json_body, no_content, operations_of, path_key

_CANDIDATES = (("candidateGroups", "candidate_groups"), ("candidateUsers", "candidate_users"))


async def assign_user_task(request: web.Request) -> web.Response:
    key = path_key(request, "userTaskKey")
    body = await json_body(request)
    override = body.body.get("allowOverride")
    if override is not None and not isinstance(override, bool):
        raise bad(f"allowOverride must be true or false, not {json.dumps(override)}")
    await operations_of(request).assign_user_task(
        key,
        body.text("assignee", required=True),
        allow_override=override is not False,
        action=body.text("action"),
    )
    return no_content()


async def unassign_user_task(request: web.Request) -> web.Response:
    await operations_of(request).unassign_user_task(path_key(request, "userTaskKey"))
    return no_content()


async def complete_user_task(request: web.Request) -> web.Response:
    key = path_key(request, "userTaskKey")
    body = await json_body(request, optional=True)
    await operations_of(request).complete_user_task(
        key, body.variables(), action=body.text("action")
    )
    return no_content()


async def update_user_task(request: web.Request) -> web.Response:
    """The changeset's attributes that are present and not null change ("" or [] clears
    one); the assignee changes only through assignment."""
    key = path_key(request, "userTaskKey")
    body = await json_body(request, optional=True)
    changeset = body.object("changeset")
    attributes: dict[str, object] = {}
    if changeset is not None:
        present = {name for name, value in changeset.body.items() if value is not None}
        for name, field in (
            ("candidateGroups", "candidate_groups"),
            ("candidateUsers", "candidate_users"),
        ):
            if name in present:
                attributes[field] = changeset.texts(name)
        for name, field in (("dueDate", "due_date"), ("followUpDate", "follow_up_date")):
            if name in present:
                attributes[field] = changeset.text(name)
        if "priority" in present:
            attributes["priority"] = changeset.integer("priority")
    await operations_of(request).update_user_task(key, action=body.text("action"), **attributes)
    return no_content()


def add_routes(add: Callable[..., Any]) -> None:
    add("POST", "/v2/user-tasks/{key}/assignment", assign_user_task)
    add("DELETE", "/v2/user-tasks/{key}/assignee", unassign_user_task)
    add("POST", "/v2/user-tasks/{key}/completion", complete_user_task)
    add("PATCH", "/v2/user-tasks/{key}", update_user_task)
