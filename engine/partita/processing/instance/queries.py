"""Read-only views of a partition's state for tools (not used by processing).

`instance_tree` is a process instance as a tree: every active element instance with its
state, the open incidents on it, and, under a call activity, the child instance it called
(recursively), so an incident deep in a called process is visible from the root.
"""

from __future__ import annotations

from typing import Any

from partita.processing.incident.state import BY_ELEMENT, INCIDENTS
from partita.processing.instance import state as instance_state
from partita.state import PartitionDb


def instance_tree(db: PartitionDb, key: int) -> dict[str, Any] | None:
    """The element instance `key` and everything active under it; None when it is not active."""
    stored = instance_state.instance(db, key)
    if stored is None:
        return None
    node: dict[str, Any] = {
        "key": key,
        "elementId": stored.element_id,
        "elementType": stored.element_type.name,
        "state": stored.state,
        "incidents": [],
        "children": [],
    }
    incident_key = db.column(BY_ELEMENT).get(key)
    incident = db.column(INCIDENTS).get(incident_key) if incident_key is not None else None
    if incident is not None:
        node["incidents"].append(
            {
                "key": incident_key,
                "errorType": incident.error_type.name,
                "message": incident.error_message,
            }
        )
    for child in instance_state.children(db, key):
        subtree = instance_tree(db, child)
        if subtree is not None:
            node["children"].append(subtree)
    called = stored.called_child_key
    if called > 0:
        subtree = instance_tree(db, called)
        if subtree is not None:
            node["called"] = subtree
    return node


def incidents_in_tree(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """Every incident in a tree from `instance_tree`, depth first."""
    found = list(tree["incidents"])
    for child in tree["children"]:
        found += incidents_in_tree(child)
    if "called" in tree:
        found += incidents_in_tree(tree["called"])
    return found
