"""Link events: an intermediate throw event with `linkEventDefinition name="N"` goes on at the
intermediate catch event of the same name in the same scope, as if a sequence flow joined them
(a way to draw long flows, or loops, across a diagram). Each throw must find exactly one catch
of its name in its scope; a catch has no incoming flows, a throw no outgoing ones."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from partita.bpmn.errors import Problem
from partita.bpmn.model import FlowNode, LinkEvent
from partita.bpmn.xml import Node
from partita.elements import BpmnElementType, BpmnEventType


def link_event(
    node: Node, definition: Node, common: dict[str, Any], problems: list[Problem]
) -> FlowNode | None:
    """A link intermediate throw or catch event (its `name` says which link)."""
    name = definition.attributes.get("name", "").strip()
    if not name:
        problems.append(Problem(node.attributes["id"], "a link event needs a name"))
        return None
    throw = node.local == "intermediateThrowEvent"
    kind = (
        BpmnElementType.INTERMEDIATE_THROW_EVENT
        if throw
        else BpmnElementType.INTERMEDIATE_CATCH_EVENT
    )
    return LinkEvent(element_type=kind, event_type=BpmnEventType.LINK, link_name=name, **common)


def resolve_links(elements: dict[str, FlowNode], problems: list[Problem]) -> None:
    """Point every link throw at its catch (in place), reporting what does not pair up."""
    catches: dict[tuple[str, str], list[str]] = defaultdict(list)
    for element in elements.values():
        if isinstance(element, LinkEvent) and _is_catch(element):
            catches[(element.scope, element.link_name)].append(element.id)
            if element.incoming:
                problems.append(
                    Problem(element.id, "a link catch event cannot have incoming sequence flows")
                )
    for (_, name), ids in catches.items():
        if len(ids) > 1:
            problems.append(
                Problem(ids[1], f"link catch events {', '.join(ids)} share the name '{name}'")
            )
    for element_id, element in list(elements.items()):
        if not isinstance(element, LinkEvent) or _is_catch(element):
            continue
        if element.outgoing:
            problems.append(
                Problem(element_id, "a link throw event cannot have outgoing sequence flows")
            )
        found = catches.get((element.scope, element.link_name), [])
        if not found:
            problems.append(
                Problem(
                    element_id,
                    f"no link catch event named '{element.link_name}' in the same scope",
                )
            )
            continue
        elements[element_id] = replace(element, target=found[0])


def _is_catch(element: LinkEvent) -> bool:
    return element.element_type is BpmnElementType.INTERMEDIATE_CATCH_EVENT
