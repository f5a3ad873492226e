"""Decisions evaluated: by business rule tasks with `zeebe:calledDecision` and on a client's
request (DECISION_EVALUATION EVALUATE, Zeebe's EvaluateDecision)."""
