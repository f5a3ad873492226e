"""The element domain: what BPMN elements do when they activate and complete.

- `lifecycle`: PROCESS_INSTANCE ACTIVATE_ELEMENT and COMPLETE_ELEMENT, the steps every element
  goes through (mappings, events, ACTIVATED / COMPLETED, outgoing flows, the scope's
  completion), handing what is particular to an element to its family's module;
- `process`: a process instance starts at its start event and, completed, answers an awaiting
  client or its calling activity;
- `gateways`: exclusive (a condition chooses), parallel (a join waits), event-based (the event
  that fired chooses);
- `tasks`: a service task's job;
- `events`: start, catch and boundary events taking their trigger, error and terminate end
  events;
- `subprocesses`, `call_activities`, `multi_instance`.

Terminating elements, events, variables and incidents are shared behaviours (`behavior/`).
The lifecycle events' appliers are the process instance domain's (`instance.appliers`).
"""
