"""The process instance domain: instances as a whole and the element instances in them.

- `creation`: PROCESS_INSTANCE_CREATION CREATE and CREATE_WITH_AWAITING_RESULT;
- `cancel`: PROCESS_INSTANCE CANCEL;
- `appliers`: the PROCESS_INSTANCE lifecycle events (ELEMENT_ACTIVATING ... ELEMENT_TERMINATED,
  SEQUENCE_FLOW_TAKEN) and PROCESS_EVENT TRIGGERING / TRIGGERED;
- `state`: element instances, their scopes and children, taken flows and event triggers;
- `queries`: read-only views for tools (an instance as a tree, with its incidents).

What an element does when it activates or completes is the element domain (`element/`).
"""
