"""Renders `docs/internals/handlers.md`: for every (value type, intent) of the protocol, the
function of the default engine (`builtin.build_engine`) that handles it (the processor of a
command, the applier of an event) and the module that defines and registers it; then the
due-date checkers and after-command hooks in the order they run.

The table is read from the engine's registry, and a test compares it with the committed file,
so the docs cannot drift from the code. Regenerate with:
`python -m partita.processing.handlers_doc > docs/internals/handlers.md`.
"""

from __future__ import annotations

from collections.abc import Callable

from partita.processing.builtin import build_engine
from partita.processing.dispatch import Engine
from partita.protocol.enums import RecordType
from partita.protocol.intents import CLIENT_COMMANDS, INTENTS_BY_VALUE_TYPE

_NONE = "-"
_ROOM_PREFIX = "engine/partita/processing/"


def _function(function: Callable[..., object]) -> str:
    return f"`{function.__qualname__}`"


def _module(function: Callable[..., object]) -> str:
    """The module's file (under engine/partita/processing/ when it is there), linked from
    docs/internals/."""
    path = "engine/" + function.__module__.replace(".", "/") + ".py"
    return f"[{path.removeprefix(_ROOM_PREFIX)}](../../{path})"


def render(engine: Engine | None = None) -> str:
    """The handlers page of `engine` (the default engine when None)."""
    engine = build_engine() if engine is None else engine
    lines = [
        "# Handlers",
        "",
        "Which function of the default engine (`partita.processing.builtin`) handles each record:",
        "the processor of a command, the applier of an event, and the module that defines and",
        "registers it (`@handlers.processor(...)` / `@handlers.applier(...)` on the function;",
        "modules are under `engine/partita/processing/`).",
        "A command without a processor is rejected (`no processor ... in this engine`); an event",
        "without an applier changes no state. Where the domains are and what they share:",
        "`engine/partita/processing/__init__.py`.",
        "",
        "Generated from the engine's registry by",
        "`python -m partita.processing.handlers_doc > docs/internals/handlers.md`;",
        "a test fails when this file is stale.",
    ]
    for value_type, intents in INTENTS_BY_VALUE_TYPE.items():
        lines += [
            "",
            f"## {value_type.name}",
            "",
            "| intent | record | handler | module |",
            "|---|---|---|---|",
        ]
        for intent in intents:
            found: list[tuple[int, Callable[..., object]]]
            if intent.is_event:
                kind = "event"
                found = [
                    (version, applier)
                    for (vt, event, version), applier in engine.appliers.items()
                    if vt is value_type and event is intent
                ]
            else:
                kind = "client command" if (value_type, intent) in CLIENT_COMMANDS else "command"
                processor = engine.processors.get((RecordType.COMMAND, value_type, intent))
                found = [] if processor is None else [(1, processor)]
            if not found:
                lines.append(f"| `{intent.name}` | {kind} | {_NONE} | {_NONE} |")
            for version, handler in sorted(found, key=lambda item: item[0]):
                name = _function(handler) + (f" (v{version})" if version != 1 else "")
                lines.append(f"| `{intent.name}` | {kind} | {name} | {_module(handler)} |")
    lines += [
        "",
        "## Scheduled",
        "",
        "Due-date checkers, in the order they run (each returns the commands for work due now),",
        "and the hooks that run after every processed command:",
        "",
        "| kind | function | module |",
        "|---|---|---|",
    ]
    for checker in engine.due_date_checkers:
        lines.append(f"| due-date checker | {_function(checker)} | {_module(checker)} |")
    for hook in engine.after_command_hooks:
        lines.append(f"| after command | {_function(hook)} | {_module(hook)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
