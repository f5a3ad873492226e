"""Deployed forms (`.form` resources: Camunda Forms JSON, identified by their top-level `id`),
versioned per form id as processes are, and how a user task finds the form it links.

State (written only by the FORM CREATED applier): `form_by_key` holds the form and its JSON,
`form_by_id_and_version` and `latest_form_version` index it."""

from __future__ import annotations

import json

from partita.state import ColumnFamilies
from partita.state.stored import DeployedForm
from partita.state.view import StateView

BY_KEY = ColumnFamilies.FORM_BY_KEY
BY_ID_AND_VERSION = ColumnFamilies.FORM_BY_ID_AND_VERSION
LATEST = ColumnFamilies.LATEST_FORM_VERSION

SUFFIX = ".form"
MAX_ID_LENGTH = 256


def parse_form(name: str, content: bytes) -> tuple[str, str]:
    """The form id and version tag of a `.form` resource; ValueError saying what is wrong."""
    try:
        document = json.loads(content)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"'{name}' is not a form: not valid JSON ({error})") from None
    if not isinstance(document, dict):
        raise ValueError(f"'{name}' is not a form: its JSON must be an object")
    form_id = document.get("id")
    if form_id is None:
        raise ValueError(f"'{name}': Expected the form id to be present, but none given")
    if not isinstance(form_id, str) or not form_id.strip():
        raise ValueError(f"'{name}': Expected the form id to be filled, but it is blank")
    if len(form_id) > MAX_ID_LENGTH:
        raise ValueError(f"'{name}': the form id is longer than {MAX_ID_LENGTH} characters")
    tag = document.get("versionTag", "")
    return form_id, tag if isinstance(tag, str) else ""


def latest(db: StateView, form_id: str) -> tuple[int, DeployedForm] | None:
    version = db.column(LATEST).get(form_id)
    return None if version is None else by_version(db, form_id, version)


def by_version(db: StateView, form_id: str, version: int) -> tuple[int, DeployedForm] | None:
    key = db.column(BY_ID_AND_VERSION).get((form_id, version))
    form = None if key is None else db.column(BY_KEY).get(key)
    return None if key is None or form is None else (key, form)


def newest_where(
    db: StateView, form_id: str, *, version_tag: str = "", deployment_key: int = -1
) -> tuple[int, DeployedForm] | None:
    """The newest version of `form_id` with this version tag, or from this deployment."""
    newest = db.column(LATEST).get(form_id) or 0
    for version in range(newest, 0, -1):
        found = by_version(db, form_id, version)
        if found is None:
            continue
        _, form = found
        if version_tag and form.version_tag == version_tag:
            return found
        if deployment_key >= 0 and form.deployment_key == deployment_key:
            return found
    return None
