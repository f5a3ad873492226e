"""Behaviours several domains share. Each writes records through the `ProcessingContext` (never
state directly) and imports only other behaviours and the domains' `state` modules, never a
domain's processors or appliers, so every domain can use them without an import cycle:

- `variables`: a command's variables document, setting variables, Zeebe's default merge,
  input and output mappings;
- `incidents`: the INCIDENT CREATED of an element or a job that cannot go on;
- `expressions`: FEEL expressions that name something (a message, a correlation key, a timer,
  a called process);
- `subscriptions`: opening and closing the messages and timers an element instance waits for;
- `triggers`: an event fired: the PROCESS_EVENT it records and how the instance moves on, and
  instances an event starts;
- `termination`: terminating an element instance and everything in it;
- `errors`: the catch event of a thrown BPMN error;
- `results`: the reply to a CREATE_WITH_AWAITING_RESULT request when its instance completes.
"""
