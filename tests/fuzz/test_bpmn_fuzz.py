"""Fuzzing BPMN resources: mutated fixture files and random XML either give a model or a
BpmnValidationError listing its problems, never another exception; hostile documents (XML
bombs, external entities, huge, deep or wide files) are refused quickly, naming the limit.

Run longer with `HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz/test_bpmn_fuzz.py`.
"""

from __future__ import annotations

import copy
import time
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.bpmn.xml import MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS
from partita.processing.deployment.validation import processes_of
from tests.support.fuzz_profiles import fuzz_settings
from tests.support.paths import BPMN_FIXTURES

FILES = {path.name: path.read_bytes() for path in sorted(BPMN_FIXTURES.glob("*.bpmn"))}
BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
ZEEBE = "http://camunda.org/schema/zeebe/1.0"
SECONDS = 2.0


def assert_model_or_validation_error(data: bytes) -> None:
    """The property, through both entry points: the parser alone and what a deployment runs
    (the parser with FEEL checks and static timer validation)."""
    for parse in (parse_bpmn, processes_of):
        try:
            parse(data, "fuzz.bpmn")
        except BpmnValidationError as error:
            assert error.problems, "a validation error must list its problems"
            assert all(problem.reason for problem in error.problems), error.problems
            assert str(error)


# -- mutations of the fixtures --------------------------------------------------------------

LOCAL_NAMES = [
    "definitions",
    "process",
    "startEvent",
    "endEvent",
    "serviceTask",
    "userTask",
    "task",
    "sequenceFlow",
    "exclusiveGateway",
    "parallelGateway",
    "eventBasedGateway",
    "subProcess",
    "callActivity",
    "boundaryEvent",
    "intermediateCatchEvent",
    "timerEventDefinition",
    "messageEventDefinition",
    "errorEventDefinition",
    "conditionExpression",
    "multiInstanceLoopCharacteristics",
    "message",
    "error",
    "timeDuration",
    "timeCycle",
    "timeDate",
    "incoming",
    "outgoing",
]
ZEEBE_NAMES = ["taskDefinition", "ioMapping", "input", "output", "subscription", "calledElement"]
ATTRIBUTES = [
    "id",
    "name",
    "sourceRef",
    "targetRef",
    "attachedToRef",
    "messageRef",
    "errorRef",
    "default",
    "isExecutable",
    "cancelActivity",
    "type",
    "retries",
    "source",
    "target",
    "correlationKey",
    "processId",
    "inputCollection",
    "inputElement",
    "outputCollection",
    "outputElement",
    "isSequential",
    "errorCode",
]
NOISE = st.text(max_size=30) | st.sampled_from(
    [
        "",
        "=",
        "= ",
        "=x +",
        "=if then",
        "=(((((",
        "=" + "(" * 2000 + "1" + ")" * 2000,
        "=" + "+".join(["1"] * 3000),
        "=²",
        "=for x in 1..10000000 return x",
        "PT",
        "PT-1S",
        "R/PT1S",
        "R-1/PT1S",
        "R99999999999999999999/PT1S",
        "P99999999999999999999D",
        "9999-99-99T99:99:99Z",
        "start",
        "f1",
        "task",
        "true",
        "false",
        "-1",
        "99999999999999999999",
    ]
)
"""Text for ids, references, expressions and timer values: random and known-awkward."""


def _tag(namespace: str, local: str) -> str:
    return f"{{{namespace}}}{local}"


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> bytes:
    """A fixture with random structural and textual damage, re-serialized, maybe truncated."""
    root = ET.fromstring(draw(st.sampled_from(list(FILES.values()))))
    for _ in range(draw(st.integers(1, 6))):
        parents = {child: parent for parent in root.iter() for child in parent}
        elements = list(parents)
        if not elements:  # everything dropped already
            break
        element = draw(st.sampled_from(elements))
        parent = parents[element]
        action = draw(
            st.sampled_from(
                [
                    "drop",
                    "duplicate",
                    "rename",
                    "move",
                    "drop-attribute",
                    "rename-attribute",
                    "set-attribute",
                    "text",
                ]
            )
        )
        if action == "drop":
            parent.remove(element)
        elif action == "duplicate":
            parent.insert(list(parent).index(element), copy.deepcopy(element))
        elif action == "rename":
            namespace, names = draw(st.sampled_from([(BPMN, LOCAL_NAMES), (ZEEBE, ZEEBE_NAMES)]))
            element.tag = _tag(namespace, draw(st.sampled_from(names)))
        elif action == "move":
            inside = set(element.iter())  # never into itself: that would be a cycle
            parent.remove(element)
            draw(st.sampled_from([e for e in [root, *elements] if e not in inside])).append(element)
        elif action in ("drop-attribute", "rename-attribute") and element.attrib:
            name = draw(st.sampled_from(sorted(element.attrib)))
            value = element.attrib.pop(name)
            if action == "rename-attribute":
                element.set(draw(st.sampled_from(ATTRIBUTES)), value)
        elif action == "set-attribute":
            element.set(draw(st.sampled_from(ATTRIBUTES)), draw(NOISE))
        else:
            element.text = draw(NOISE)
    data = ET.tostring(root, encoding="utf-8")
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return data


@fuzz_settings()
@given(data=mutated_fixtures())
def test_mutated_fixtures_give_a_model_or_a_validation_error(data: bytes) -> None:
    assert_model_or_validation_error(data)


@fuzz_settings()
@given(name=st.sampled_from(sorted(FILES)), data=st.data())
def test_byte_damage_to_fixtures_gives_a_model_or_a_validation_error(
    name: str, data: st.DataObject
) -> None:
    raw = bytearray(FILES[name])
    for _ in range(data.draw(st.integers(1, 8))):
        index = data.draw(st.integers(0, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    assert_model_or_validation_error(bytes(raw))


# -- random XML -----------------------------------------------------------------------------


def _element(children: list[str], draw_name: str, attributes: list[tuple[str, str]]) -> str:
    attrs = "".join(f' {k}="{_escape(v)}"' for k, v in attributes)
    return f"<{draw_name}{attrs}>{''.join(children)}</{draw_name}>"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


NAMES = st.sampled_from([f"bpmn:{n}" for n in LOCAL_NAMES] + [f"zeebe:{n}" for n in ZEEBE_NAMES])
XML_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=10).map(_escape)
ELEMENTS = st.recursive(
    XML_TEXT,
    lambda inner: st.builds(
        _element,
        st.lists(inner, max_size=4),
        NAMES,
        st.lists(
            st.tuples(st.sampled_from(ATTRIBUTES), NOISE), max_size=3, unique_by=lambda a: a[0]
        ),
    ),
    max_leaves=25,
)


@fuzz_settings()
@given(body=st.lists(ELEMENTS, max_size=5))
def test_random_bpmn_shaped_xml_gives_a_model_or_a_validation_error(body: list[str]) -> None:
    document = (
        f'<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:zeebe="{ZEEBE}" id="d">'
        + "".join(body)
        + "</bpmn:definitions>"
    )
    assert_model_or_validation_error(document.encode("utf-8"))


@fuzz_settings()
@given(
    data=st.binary(max_size=300)
    | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_random_bytes_give_a_validation_error(data: bytes) -> None:
    assert_model_or_validation_error(data)


# -- hostile documents ----------------------------------------------------------------------

DEFINITIONS = f'<bpmn:definitions xmlns:bpmn="{BPMN}">'


def _dtd(declarations: str, body: str) -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE d [{declarations}]>\n{DEFINITIONS}{body}'
        "</bpmn:definitions>"
    ).encode()


LAUGHS = '<!ENTITY lol "lol">' + "".join(
    f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">' for i in range(1, 10)
)
HOSTILE = {
    "billion-laughs": (_dtd(LAUGHS, "&lol9;"), "DOCTYPE is not allowed"),
    "external-entity": (
        _dtd('<!ENTITY secret SYSTEM "file:///etc/passwd">', "&secret;"),
        "DOCTYPE is not allowed",
    ),
    "external-dtd": (
        f'<!DOCTYPE d SYSTEM "file:///etc/passwd">{DEFINITIONS}</bpmn:definitions>'.encode(),
        "DOCTYPE is not allowed",
    ),
    "parameter-entity": (
        _dtd('<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;', ""),
        "DOCTYPE is not allowed",
    ),
    "quadratic-blowup": (
        _dtd(f'<!ENTITY a "{"a" * 50_000}">', "&a;" * 50_000),
        "DOCTYPE is not allowed",
    ),
    "undeclared-entity": (DEFINITIONS.encode() + b"&lol;</bpmn:definitions>", "undefined entity"),
    "deep-nesting": (
        DEFINITIONS.encode() + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</bpmn:definitions>",
        f"nested deeper than {MAX_DEPTH}",
    ),
    "five-megabytes": (
        DEFINITIONS.encode() + b"<!--" + b"x" * 5 * 1024 * 1024 + b"-->" + b"</bpmn:definitions>",
        f"over the limit of {MAX_BYTES}",
    ),
    "many-elements": (
        DEFINITIONS.encode() + b"<a/>" * 200_000 + b"</bpmn:definitions>",
        f"more than {MAX_ELEMENTS} elements",
    ),
    "many-attributes": (
        f"<bpmn:definitions xmlns:bpmn='{BPMN}' ".encode()
        + b" ".join(b"a%d='x'" % i for i in range(200_000))
        + b"/>",
        "no executable process",  # 2.4 MB: under the size limit, read in well under a second,
    ),
    "invalid-utf-8": (
        DEFINITIONS.encode() + b"\xff\xfe\xc3\x28</bpmn:definitions>",
        "not well-formed",
    ),
    "latin-1-declared-utf-8": (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        + DEFINITIONS.encode()
        + b"<bpmn:process id='caf\xe9'/></bpmn:definitions>",
        "not well-formed",
    ),
    "unknown-encoding": (b'<?xml version="1.0" encoding="EBCDIC-9"?><a/>', "line 1"),
    "utf-16-bom-with-utf-8-bytes": (b"\xff\xfe" + FILES["one-task.bpmn"], "not well-formed"),
    "nul-bytes": (b"\x00" * 1000, "not well-formed"),
    "empty": (b"", "not well-formed"),
}


@pytest.mark.parametrize(("data", "named"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_documents_are_refused_quickly_naming_the_limit(data: bytes, named: str) -> None:
    started = time.monotonic()
    with pytest.raises(BpmnValidationError) as caught:
        processes_of(data, "hostile.bpmn")
    assert time.monotonic() - started < SECONDS
    assert named in str(caught.value), str(caught.value)[:500]


BOMS = {
    "utf-8-bom": b"\xef\xbb\xbf" + FILES["one-task.bpmn"],
    "utf-16-le-bom": FILES["one-task.bpmn"].decode().replace("UTF-8", "UTF-16").encode("utf-16"),
    "utf-16-be-bom": b"\xfe\xff"
    + FILES["one-task.bpmn"].decode().replace("UTF-8", "UTF-16").encode("utf-16-be"),
    "latin-1-declared": FILES["one-task.bpmn"]
    .decode()
    .replace("UTF-8", "ISO-8859-1")
    .replace('name="', 'name="caf\xe9 ', 1)
    .encode("latin-1"),
}


@pytest.mark.parametrize("data", BOMS.values(), ids=BOMS.keys())
def test_byte_order_marks_and_declared_encodings_are_read(data: bytes) -> None:
    started = time.monotonic()
    (process,) = processes_of(data, "bom.bpmn")
    assert process.id == "one-task"
    assert time.monotonic() - started < SECONDS
