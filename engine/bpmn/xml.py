"""Safe XML reading for untrusted BPMN resources.

expat with every DTD feature refused: a DOCTYPE is an error (BPMN never needs one), so entity
expansion bombs and external entities cannot happen; no network, no file access. Size, depth
and element-count limits bound the work for huge inputs. The result is a small element tree
that keeps line numbers for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from xml.parsers import expat

from engine.bpmn.errors import BpmnValidationError, Problem

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_ELEMENTS = 100_000


@dataclass(slots=True)
class Node:
    """An element: `tag` is `{namespace}local`, as in ElementTree."""

    tag: str
    attributes: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)
    text: str = ""

    @property
    def namespace(self) -> str:
        return self.tag[1:].split("}", 1)[0] if self.tag.startswith("{") else ""

    @property
    def local(self) -> str:
        return self.tag.rsplit("}", 1)[-1]

    def find_all(self, tag: str) -> list[Node]:
        return [child for child in self.children if child.tag == tag]

    def find(self, tag: str) -> Node | None:
        return next((child for child in self.children if child.tag == tag), None)


class _RefusedError(Exception):
    pass


def parse_xml(data: bytes, resource_name: str) -> Node:
    """The root element of `data`; BpmnValidationError for anything unsafe or malformed."""
    if len(data) > MAX_BYTES:
        raise BpmnValidationError(
            resource_name,
            [Problem("(resource)", f"{len(data)} bytes, over the limit of {MAX_BYTES}")],
        )
    parser = expat.ParserCreate(namespace_separator="}")
    stack: list[Node] = []
    root: list[Node] = []
    count = [0]

    def refuse(reason: str) -> None:
        raise _RefusedError(reason)

    def start(name: str, attributes: dict[str, str]) -> None:
        count[0] += 1
        if count[0] > MAX_ELEMENTS:
            refuse(f"more than {MAX_ELEMENTS} elements")
        if len(stack) >= MAX_DEPTH:
            refuse(f"elements nested deeper than {MAX_DEPTH}")
        tag = "{" + name if "}" in name else name
        node = Node(
            tag, {_attribute(k): v for k, v in attributes.items()}, parser.CurrentLineNumber
        )
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(_name: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack:
            stack[-1].text += data

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text

    def doctype(*_: object) -> None:
        refuse("a DOCTYPE is not allowed (no DTDs or entities in BPMN resources)")

    def entity(*_: object) -> None:
        refuse("entity declarations are not allowed")

    def external(*_: object) -> int:
        refuse("external entities are not allowed")
        return 0

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.ExternalEntityRefHandler = external
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except _RefusedError as refused:
        raise BpmnValidationError(
            resource_name, [Problem(f"line {parser.CurrentLineNumber}", str(refused))]
        ) from None
    except (ValueError, LookupError) as exc:  # e.g. an unknown encoding in <?xml ...?>
        raise BpmnValidationError(
            resource_name, [Problem("line 1", f"unreadable XML declaration: {exc}")]
        ) from None
    except expat.ExpatError as exc:
        raise BpmnValidationError(
            resource_name,
            [Problem(f"line {exc.lineno}", f"not well-formed XML: {expat.ErrorString(exc.code)}")],
        ) from None
    if not root:
        raise BpmnValidationError(resource_name, [Problem("(resource)", "no XML element")])
    return root[0]


def _attribute(name: str) -> str:
    return "{" + name if "}" in name else name
