"""The REST API's decision evaluation and signal broadcast over a fake command layer: the
request each makes of the engine, the result as Camunda's clients read it, and the problems of
bad requests."""

from __future__ import annotations

from tests.support.rest_fakes import BIG, FakeOperations, assert_problem, exchange


def test_a_decision_is_evaluated_by_id_or_key() -> None:
    fake = FakeOperations()
    path = "/v2/decision-definitions/evaluation"
    request = {"decisionDefinitionId": "dish", "variables": {"month": 12}}
    code, _headers, body = exchange("POST", path, fake=fake, json=request)
    assert code == 200, body
    assert body["decisionDefinitionKey"] == str(BIG)  # keys as strings
    assert body["output"] == '"Stew"' and body["failureMessage"] is None
    assert body["decisionEvaluationKey"] == str(BIG + 9)
    assert body["evaluatedDecisions"][0]["decisionDefinitionId"] == "dish"
    by_key = {"decisionDefinitionKey": str(BIG)}
    assert exchange("POST", path, fake=fake, json=by_key)[0] == 200
    assert fake.calls == [
        (
            "evaluate_decision",
            {"decision_id": "dish", "decision_key": -1, "variables": {"month": 12}},
        ),
        ("evaluate_decision", {"decision_id": "", "decision_key": BIG, "variables": {}}),
    ]
    both = {"decisionDefinitionId": "dish", "decisionDefinitionKey": str(BIG)}
    assert_problem(exchange("POST", path, json=both), 400, "INVALID_ARGUMENT", "one of")
    assert_problem(exchange("POST", path, json={}), 400, "INVALID_ARGUMENT", "one of")


def test_a_signal_is_broadcast_and_its_key_returned() -> None:
    fake = FakeOperations()
    request = {"signalName": "go", "variables": {"why": "ready"}}
    code, _headers, body = exchange("POST", "/v2/signals/broadcast", fake=fake, json=request)
    assert (code, body) == (200, {"signalKey": str(BIG + 3), "tenantId": "<default>"})
    assert fake.calls == [("broadcast_signal", {"name": "go", "variables": {"why": "ready"}})]
    answer = exchange("POST", "/v2/signals/broadcast", json={"variables": {}})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "signalName is required")
