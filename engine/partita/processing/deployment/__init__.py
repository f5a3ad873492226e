"""The deployment domain: BPMN resources become versioned process definitions on every
partition.

- `processors`: DEPLOYMENT CREATE (partition 0) and DISTRIBUTE (every other partition);
- `validation`: parsing and checking a resource, every problem reported at once;
- `start_events`: what a new latest version opens (message start event subscriptions, timer
  start events) and closes of the version before;
- `appliers`: PROCESS CREATED;
- `state`: deployed processes and their parsed models.
"""
