"""The timer domain: timers of catch events, boundary events, event-based gateways and timer
start events.

- `processors`: TIMER TRIGGER, with the due-date checker that writes it for due timers;
- `appliers`: TIMER CREATED, TRIGGERED and CANCELED;
- `state`: timers by owner and by due date.

Timers are created and cancelled by the behaviours that open and close an element's events
(`behavior.subscriptions`) and, for start events, by the deployment domain.
"""
