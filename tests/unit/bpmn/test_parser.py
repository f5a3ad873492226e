"""BPMN XML -> validated model: a Modeler file, every problem reported, unsafe XML refused."""

from __future__ import annotations

import pytest

from partita.bpmn import BpmnValidationError, ExclusiveGateway, JobWorkerElement, parse_bpmn
from partita.bpmn.xml import MAX_BYTES
from partita.protocol.enums import BpmnElementType
from tests.support.paths import BPMN_FIXTURES


def _process(body: str, extra_ns: str = "") -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" {extra_ns} id="d">
  <bpmn:process id="p" isExecutable="true">{body}</bpmn:process>
</bpmn:definitions>""".encode()


def _problems(data: bytes) -> list[str]:
    with pytest.raises(BpmnValidationError) as raised:
        parse_bpmn(data, "test.bpmn")
    return [str(p) for p in raised.value.problems]


def test_a_camunda_modeler_file_parses_into_the_executable_model() -> None:
    (process,) = parse_bpmn(
        (BPMN_FIXTURES / "order-process.bpmn").read_bytes(), "order-process.bpmn"
    )
    assert (process.id, process.name, process.start_event) == (
        "order-process",
        "Order process",
        "StartEvent_1",
    )
    charge = process.element("charge")
    assert isinstance(charge, JobWorkerElement)
    assert (charge.job_type, charge.retries, charge.headers) == (
        "payment-service",
        "5",
        (("method", "card"),),
    )
    assert [(m.source, m.target) for m in charge.inputs] == [("=order.total", "amount")]
    assert [(m.source, m.target) for m in charge.outputs] == [("=paid", "orderPaid")]
    gateway = process.element("paid-gateway")
    assert isinstance(gateway, ExclusiveGateway) and gateway.default_flow == "Flow_refund"
    assert process.flows["Flow_ship"].condition == "=orderPaid = true"
    assert [f.target for f in process.outgoing("fork")] == ["pack", "invoice"]
    assert process.element("join").incoming == ("Flow_c", "Flow_d")
    assert process.element("pack").element_type is BpmnElementType.MANUAL_TASK
    refund = process.element("refund")
    assert isinstance(refund, JobWorkerElement) and refund.job_type == '="refund-" + region'
    assert process.element("shipped").element_type is BpmnElementType.END_EVENT


def test_every_problem_is_reported_with_its_element_id_in_one_error() -> None:
    problems = _problems(
        _process(
            """
        <bpmn:startEvent id="start"/>
        <bpmn:serviceTask id="no-type"/>
        <bpmn:complexGateway id="human"/>
        <bpmn:exclusiveGateway id="gw" default="nowhere"/>
        <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="gw"/>
        <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="ghost"/>
        <bpmn:endEvent id="end"/>
        <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="end"/>
        <bpmn:sequenceFlow id="f4" sourceRef="gw" targetRef="end"/>
        """
        )
    )
    assert 'no-type: a bpmn:serviceTask needs <zeebe:taskDefinition type="..."/>' in problems
    assert "human: bpmn:complexGateway is not supported" in problems
    assert "f2: targetRef 'ghost' is not a flow node of the same scope" in problems
    assert "gw: default flow 'nowhere' is not one of its outgoing flows" in problems
    assert any(
        p.startswith("f3: a flow leaving an exclusive gateway needs a condition") for p in problems
    )


def test_structural_rules() -> None:
    problems = _problems(
        _process(
            """
        <bpmn:startEvent id="a"/><bpmn:startEvent id="b"/>
        <bpmn:task id="t"/>
        <bpmn:parallelGateway id="g"/>
        <bpmn:endEvent id="e"/>
        <bpmn:sequenceFlow id="f1" sourceRef="a" targetRef="t"/>
        <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="g"/>
        <bpmn:sequenceFlow id="f2" sourceRef="e" targetRef="b">
          <bpmn:conditionExpression>=x</bpmn:conditionExpression>
        </bpmn:sequenceFlow>
        """
        )
    )
    assert "p: more than one none start event: a, b" in problems
    assert "g: a gateway needs an outgoing sequence flow" in problems
    assert not [p for p in problems if p.startswith("t:")]  # a task may end its path
    assert "e: an end event cannot have outgoing sequence flows" in problems
    assert "b: a start event cannot have incoming sequence flows" in problems
    assert (
        "f2: only flows leaving an exclusive or inclusive gateway can have conditions" in problems
    )


def test_unsupported_event_definitions_are_named() -> None:
    problems = _problems(
        _process(
            """<bpmn:startEvent id="s"><bpmn:conditionalEventDefinition/></bpmn:startEvent>
               <bpmn:endEvent id="e"/>
               <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/>"""
        )
    )
    assert "s: conditional startEvents are not supported yet" in problems


def test_duplicate_ids_and_no_executable_process() -> None:
    assert "x: the id is used twice" in _problems(
        _process('<bpmn:startEvent id="x"/><bpmn:endEvent id="x"/>')
    )
    data = _process("").replace(b'isExecutable="true"', b'isExecutable="false"')
    assert _problems(data) == ['(resource): no executable process (isExecutable="true")']


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">&lol3;</bpmn:definitions>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">&secret;</bpmn:definitions>"""


@pytest.mark.parametrize(
    "data", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["entity-bomb", "external-entity"]
)
def test_dtds_and_entities_are_refused(data: bytes) -> None:
    (problem,) = _problems(data)
    assert "DOCTYPE is not allowed" in problem


def test_malformed_huge_deep_and_foreign_documents() -> None:
    (problem,) = _problems(b"<bpmn:definitions xmlns:bpmn='x'><unclosed></bpmn:definitions>")
    assert problem.startswith("line 1: not well-formed XML")
    (problem,) = _problems(b"<a>" + b" " * (MAX_BYTES + 1) + b"</a>")
    assert "over the limit" in problem
    (problem,) = _problems(b"<a>" * 100 + b"</a>" * 100)
    assert "nested deeper than 64" in problem
    (problem,) = _problems(b'<?xml version="1.0" encoding="U-F-8"?><a/>')
    assert problem.startswith("line 1: unreadable XML declaration")
    (problem,) = _problems(b"<html/>")
    assert problem == "html: the root element must be bpmn:definitions"


def test_link_events_pair_up_by_name_in_their_scope() -> None:
    problems = _problems(
        _process(
            """
        <bpmn:startEvent id="s"/>
        <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="jump"/>
        <bpmn:intermediateThrowEvent id="jump"><bpmn:linkEventDefinition name="nowhere"/>
        </bpmn:intermediateThrowEvent>
        <bpmn:intermediateCatchEvent id="a"><bpmn:linkEventDefinition name="twice"/>
        </bpmn:intermediateCatchEvent>
        <bpmn:intermediateCatchEvent id="b"><bpmn:linkEventDefinition name="twice"/>
        </bpmn:intermediateCatchEvent>
        <bpmn:sequenceFlow id="f2" sourceRef="s" targetRef="a"/>
        <bpmn:intermediateThrowEvent id="nameless"><bpmn:linkEventDefinition/>
        </bpmn:intermediateThrowEvent>
        """
        )
    )
    assert "jump: no link catch event named 'nowhere' in the same scope" in problems
    assert "b: link catch events a, b share the name 'twice'" in problems
    assert "a: a link catch event cannot have incoming sequence flows" in problems
    assert "nameless: a link event needs a name" in problems
