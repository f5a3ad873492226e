"""The domains of engine/partita/processing: docs/internals/handlers.md is the table the engine's
registry gives, every handler is registered by the module that defines it, and the processing
modules import each other without a cycle: domains' `state` and the shared `behavior` import no
domain's logic, and no module but the build imports one that registers handlers."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from msgspec.structs import replace

from partita.processing import ProcessingContext
from partita.processing.builtin import HANDLER_MODULES, build_engine
from partita.processing.dispatch import Engine, Handlers
from partita.processing.handlers_doc import render
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.intents import JobIntent
from partita.protocol.records import Record, command
from partita.protocol.values import JobValue
from tests.support.paths import ENGINE, ROOT

PROCESSING = ENGINE / "processing"


def test_the_handlers_table_in_docs_is_generated_from_the_engine() -> None:
    committed = (ROOT / "docs" / "internals" / "handlers.md").read_text()
    assert committed == render(), (
        "docs/internals/handlers.md is stale: run"
        " `python -m partita.processing.handlers_doc > docs/internals/handlers.md`"
    )


def test_the_table_names_each_handler_and_its_module() -> None:
    page = render()
    assert (
        "| `COMPLETE` | client command | `complete` | [job/processors.py]"
        "(../../engine/partita/processing/job/processors.py) |"
    ) in page
    assert "| `COMPLETED` | event | `apply_completed` | [job/appliers.py]" in page
    assert "| `UPDATE_TIMEOUT` | client command | `update_timeout` | [job/processors.py]" in page


def test_every_handler_is_registered_by_the_module_that_defines_it() -> None:
    engine = build_engine()
    registered = {
        *engine.processors.values(),
        *engine.appliers.values(),
        *engine.due_date_checkers,
        *engine.after_command_hooks,
    }
    installed = set()
    for module in HANDLER_MODULES:
        handlers: Handlers = module.handlers
        functions = [
            *(f for _, f in handlers.processors),
            *(f for _, f, _version in handlers.appliers),
            *handlers.due_date_checkers,
            *handlers.after_command_hooks,
        ]
        assert functions, f"{module.__name__} registers nothing"
        for function in functions:
            assert function.__module__ == module.__name__, (
                f"{module.__name__} registers {function.__qualname__} of {function.__module__}"
            )
        installed.update(functions)
    assert registered == installed


def test_install_registers_in_definition_order() -> None:
    handlers = Handlers()
    calls: list[str] = []

    @handlers.processor(JobIntent.COMPLETE, JobIntent.FAIL)
    def decide(record: object, ctx: object) -> None:
        calls.append("decide")

    @handlers.due_date_checker
    def first(db: object, now: int) -> list[object]:
        return []

    @handlers.due_date_checker
    def second(db: object, now: int) -> list[object]:
        return []

    engine = Engine()
    engine.install(handlers)
    assert {key[2] for key in engine.processors} == {JobIntent.COMPLETE, JobIntent.FAIL}
    assert engine.due_date_checkers == [first, second]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, known: set[str]) -> set[str]:
    """The partita.processing modules `path` imports when it is imported (annotations-only
    imports under TYPE_CHECKING aside)."""
    found: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and child.module in known:
                found.add(child.module)
                found.update(f"{child.module}.{a.name}" for a in child.names)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            walk(child)

    walk(ast.parse(path.read_text(), str(path)))
    return found & known


def _graph() -> dict[str, set[str]]:
    """partita.processing module -> the partita.processing modules it imports at run time."""
    paths = {_module_name(p): p for p in sorted(PROCESSING.rglob("*.py"))}
    return {name: _runtime_imports(path, set(paths)) - {name} for name, path in paths.items()}


def test_shared_behaviours_and_state_modules_import_no_room_logic() -> None:
    """A domain's `state` imports only other domains' state; `behavior` only state, other
    behaviours and the machinery: so any domain can use them without a cycle."""
    machinery = {"partita.processing.context", "partita.processing.dispatch"}
    packages = {name for name in _graph() if (ENGINE.parent / name.replace(".", "/")).is_dir()}

    def allowed(imported: str, *, behavior: bool) -> bool:
        if imported in packages or imported.endswith(".state"):
            return True
        return behavior and (
            imported.startswith("partita.processing.behavior.") or imported in machinery
        )

    for name, imports in _graph().items():
        if name.endswith(".state"):
            wrong = {i for i in imports if not allowed(i, behavior=False)}
        elif name.startswith("partita.processing.behavior."):
            wrong = {i for i in imports if not allowed(i, behavior=True)}
        else:
            continue
        assert not wrong, f"{name} imports {sorted(wrong)}"


def test_processing_modules_import_each_other_without_a_cycle() -> None:
    graph = _graph()
    known = set(graph)
    handler_modules = {
        name
        for name in known
        if isinstance(getattr(importlib.import_module(name), "handlers", None), Handlers)
    }
    importers = {
        (name, imported)
        for name, imports in graph.items()
        for imported in imports & handler_modules
        if name != "partita.processing.builtin"
    }
    assert not importers, f"modules that register handlers are imported by others: {importers}"

    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError(f"import cycle: {' -> '.join([*path[path.index(name) :], name])}")
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_a_processor_is_found_for_its_command_only() -> None:
    engine = Engine()

    def complete(record: Record, ctx: ProcessingContext) -> None:
        del record, ctx

    engine.processor(JobIntent.COMPLETE, complete)
    job_command = command(JobIntent.COMPLETE, JobValue())
    assert engine.find_processor(job_command) is complete
    assert engine.find_processor(command(JobIntent.FAIL, JobValue())) is None
    assert engine.find_processor(replace(job_command, record_type=RecordType.EVENT)) is None
    # an intent of JOB on a record claiming another value type finds nothing
    assert engine.find_processor(replace(job_command, value_type=ValueType.MESSAGE)) is None
