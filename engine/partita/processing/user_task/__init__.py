"""Zeebe user tasks (`zeebe:userTask`): USER_TASK records, their state, and the client's
commands (assign, claim, update, complete)."""
