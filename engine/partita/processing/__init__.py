"""The deterministic state machine: processors decide, appliers mutate.

`Engine` maps (record type, value type, intent) to processors and (value type, intent,
version) to event appliers. A processor reads state and writes records through its
`ProcessingContext`; every event it writes is applied at once (read-your-writes inside the
batch). Replay runs the appliers only.

The machinery is in this package's own modules: `dispatch` (the dispatch maps, and `Handlers`,
the decorators a module registers its processors, appliers and due-date checkers with),
`context` (what a processor sees), `awaiting` (requests awaiting a result), `banning` (ERROR
events ban their instance) and `builtin` (the default engine: every domain installed). Each
domain is a package laid out alike: `processors` (the commands; a domain with several
kinds of commands has one module per kind, e.g. `message.subscriptions`), `appliers` (the
events) and `state` (its column families and how they are read):

- `deployment/`: DEPLOYMENT CREATE / DISTRIBUTE, validation, deployed processes, the start
  events a version opens;
- `instance/`: process instances: creation, cancel, element instance state and the appliers
  of their lifecycle, views for tools;
- `element/`: ACTIVATE_ELEMENT / COMPLETE_ELEMENT, with one module per element family
  (process, gateways, tasks, events, subprocesses, call activities, multi-instance);
- `job/`, `message/`, `timer/`, `incident/`, `variable/`;
- `behavior/`: what several domains share (variable mapping, incidents, event subscriptions and
  triggers, termination, BPMN errors, results). It imports domains' `state` modules only.

Nothing imports a domain's processors or appliers but `builtin`. User tasks, decisions and
signals get domain packages of their own (`user_task/`, `decision/`, `signal/`) laid out the same
way and added to `builtin.HANDLER_MODULES`. `docs/internals/handlers.md` lists the function that
handles each (value type, intent); regenerate it with `python -m partita.processing.handlers_doc`.
How to add a command, an applier or an element: `docs/development.md`.
"""

from partita.processing.context import ProcessingContext, ProcessingOutput, RejectionError
from partita.processing.dispatch import Applier, Engine, Processor

__all__ = [
    "Applier",
    "Engine",
    "ProcessingContext",
    "ProcessingOutput",
    "Processor",
    "RejectionError",
]
