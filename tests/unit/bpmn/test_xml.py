"""Safe XML reading: element text is gathered in linear time, whatever its size and shape."""

from __future__ import annotations

import time

from partita.bpmn import parse_bpmn
from partita.bpmn.xml import MAX_BYTES, parse_xml

BPMN = "http://www.omg.org/spec/BPMN/20100524/MODEL"
HEAD = f'<bpmn:definitions xmlns:bpmn="{BPMN}" id="d"><bpmn:documentation>'.encode()
TAIL = b"</bpmn:documentation></bpmn:definitions>"


def test_a_text_node_of_four_megabytes_parses_in_linear_time() -> None:
    # short lines: expat hands every line over as a piece of its own (419,000 of them here);
    # appending them to one string took 29 s, gathering and joining them takes 0.1 s
    lines = (MAX_BYTES - len(HEAD) - len(TAIL)) // 10
    text = "123456789\n" * lines
    started = time.monotonic()
    root = parse_xml(HEAD + text.encode() + TAIL, "huge.bpmn")
    elapsed = time.monotonic() - started
    (documentation,) = root.children
    assert documentation.tag == "{" + BPMN + "}documentation"
    assert documentation.text == text
    assert elapsed < 5  # a loaded CI machine; the quadratic version never got near


def test_text_around_child_elements_is_joined_in_order() -> None:
    data = f'<bpmn:definitions xmlns:bpmn="{BPMN}">one<a>inner</a>two<b/>three</bpmn:definitions>'
    root = parse_xml(data.encode(), "mixed.bpmn")
    assert root.text == "onetwothree"
    assert [child.text for child in root.children] == ["inner", ""]


def test_a_huge_condition_expression_reaches_the_model_whole() -> None:
    condition = "=" + " or ".join(f"x = {n}" for n in range(50_000))  # 0.5 MB, one line
    notes = "&lt;notes&gt;\n" * 100_000  # 1.5 MB of lines, with entities between them
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="{BPMN}" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" id="d">
  <bpmn:process id="p" isExecutable="true">
    <bpmn:documentation>{notes}</bpmn:documentation>
    <bpmn:startEvent id="start" />
    <bpmn:exclusiveGateway id="gate" default="other" />
    <bpmn:endEvent id="yes" />
    <bpmn:endEvent id="no" />
    <bpmn:sequenceFlow id="in" sourceRef="start" targetRef="gate" />
    <bpmn:sequenceFlow id="chosen" sourceRef="gate" targetRef="yes">
      <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">{condition}
      </bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="other" sourceRef="gate" targetRef="no" />
  </bpmn:process>
</bpmn:definitions>"""
    (process,) = parse_bpmn(body.encode(), "conditions.bpmn")
    assert process.flows["chosen"].condition == condition
