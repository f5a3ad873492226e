"""Safe XML reading for untrusted BPMN resources.

expat with every DTD feature refused: a DOCTYPE is an error (BPMN never needs one), so entity
expansion bombs and external entities cannot happen; no network, no file access. Size, depth
and element-count limits bound the work for huge inputs. The result is a small element tree
that keeps line numbers for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from partita.bpmn.errors import BpmnValidationError, Problem

BPMN = "{http://www.omg.org/spec/BPMN/20100524/MODEL}"
ZEEBE = "{http://camunda.org/schema/zeebe/1.0}"
"""The namespaces of BPMN elements and of Zeebe's extensions, as `Node.tag` prefixes."""

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


class _Builder:
    """expat handlers that build the tree and refuse everything DTD-related. An element's text
    is gathered in chunks and joined once when it ends: linear in its size, however many
    pieces expat hands over."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.stack: list[Node] = []
        self.texts: list[list[str]] = []  # the text chunks of each element on the stack
        self.root: list[Node] = []
        self.count = 0

    def start(self, name: str, attributes: dict[str, str]) -> None:
        self.count += 1
        if self.count > MAX_ELEMENTS:
            raise _RefusedError(f"more than {MAX_ELEMENTS} elements")
        if len(self.stack) >= MAX_DEPTH:
            raise _RefusedError(f"elements nested deeper than {MAX_DEPTH}")
        tag = "{" + name if "}" in name else name
        attrs = {_attribute(k): v for k, v in attributes.items()}
        node = Node(tag, attrs, self.parser.CurrentLineNumber)
        (self.stack[-1].children if self.stack else self.root).append(node)
        self.stack.append(node)
        self.texts.append([])

    def end(self, _name: str) -> None:
        self.stack.pop().text = "".join(self.texts.pop())

    def text(self, data: str) -> None:
        if self.texts:
            self.texts[-1].append(data)

    def doctype(self, *_: object) -> None:
        raise _RefusedError("a DOCTYPE is not allowed (no DTDs or entities in BPMN resources)")

    def entity(self, *_: object) -> None:
        raise _RefusedError("entity declarations are not allowed")

    def external(self, *_: object) -> int:
        raise _RefusedError("external entities are not allowed")


def parse_xml(data: bytes, resource_name: str) -> Node:
    """The root element of `data`; BpmnValidationError for anything unsafe or malformed."""
    if len(data) > MAX_BYTES:
        raise BpmnValidationError(
            resource_name,
            [Problem("(resource)", f"{len(data)} bytes, over the limit of {MAX_BYTES}")],
        )
    parser = expat.ParserCreate(namespace_separator="}")
    builder = _Builder(parser)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.text
    parser.StartDoctypeDeclHandler = builder.doctype
    parser.EntityDeclHandler = builder.entity
    parser.ExternalEntityRefHandler = builder.external
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
    if not builder.root:
        raise BpmnValidationError(resource_name, [Problem("(resource)", "no XML element")])
    return builder.root[0]


def _attribute(name: str) -> str:
    return "{" + name if "}" in name else name
