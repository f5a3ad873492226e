"""The engine's layers, read from its imports (every `import partita...` of every module, at any
depth), so a dependency that crosses a layer fails here instead of in a review:

    protocol <- state <- processing <- stream <- cli
    stream: processing's generic core only, never a domain package (job, message, ...)
    bpmn, feel: nothing else of the engine (its shared errors aside); dmn: bpmn's XML reader, feel
    client, analytics: protocol and log (and the shared config and errors) only

An import inside a function must say why on its line (`# lazy: ...`): startup time of the
command line, or an optional dependency. Dodging an import cycle is not a reason.

KNOWN_VIOLATIONS lists what the code still does against these rules (nothing today). The test
fails on a new violation and on a listed one that is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import ENGINE

SHARED = {"errors", "config", "resources", "elements", "partita"}
"""Imported by every layer: the error base classes, the one Config, contract file lookup, and
the BPMN element and event types the model and the records share."""

ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "bpmn": set(),
    "feel": set(),
    "dmn": {"bpmn", "feel"},
    "log": {"protocol"},
    "state": {"protocol"},
    "processing": {"protocol", "state", "bpmn", "feel", "dmn"},
    "snapshots": {"protocol", "state", "log"},
    "stream": {"protocol", "state", "processing", "snapshots", "log", "bpmn", "feel", "dmn"},
    "client": {"protocol", "log"},
    "gateway": {"protocol", "log", "client"},
    "analytics": {"protocol", "log"},
    "localkafka": {"log"},
}
"""For each package, the packages it may import besides SHARED. Packages not listed (cli, ops,
bench, demo) are applications on top and may import anything."""

PROCESSING_CORE = {
    "partita.processing",
    "partita.processing.dispatch",
    "partita.processing.context",
    "partita.processing.awaiting",
    "partita.processing.banning",
}
"""What of processing the stream layer may import: the generic core (dispatch, context, awaited
results, banned instances). Domain packages (job, message, ...) reach it only as TopicHooks."""

CONFIG_ALLOWED = {"errors", "log", "bpmn"}
"""partita.config reads properties files (log.properties) and ISO-8601 durations (bpmn)."""

KNOWN_VIOLATIONS: set[tuple[str, str]] = set()
"""None left; a violation the code cannot lose at once is listed here with the item to fix it."""


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "partita"


def _imports(path: Path) -> Iterator[tuple[str, bool, int]]:
    """(imported engine module, inside a function, line) for every import of `path`."""
    tree = ast.parse(path.read_text(), str(path))
    lines = path.read_text().splitlines()

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[str, bool, int]]:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # annotations only: never imported at run time
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("partita"):
                yield str(child.module), in_function, child.lineno
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("partita"):
                        yield alias.name, in_function, child.lineno
            yield from walk(child, nested)

    for module, in_function, line in walk(tree, False):
        # a stated reason (startup time, an optional dependency) makes it a plain import
        yield module, in_function and "# lazy:" not in lines[line - 1], line


def violations(engine: Path = ENGINE) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(engine.rglob("*.py")):
        module = _module_name(path, engine.parent)
        package = _package(module)
        for imported, lazy, _line in _imports(path):
            target = _package(imported)
            if lazy and package != "cli":
                found.add((module, f"lazy {imported}"))
            if target == package:
                continue
            if package == "stream" and target == "processing" and imported not in PROCESSING_CORE:
                found.add((module, imported))
            if module == "partita.config":
                if target not in CONFIG_ALLOWED:
                    found.add((module, imported))
                continue
            allowed = ALLOWED.get(package)
            if allowed is not None and target not in allowed | SHARED:
                found.add((module, imported))
    return found


def test_imports_follow_the_layers() -> None:
    found = violations()
    new = sorted(found - KNOWN_VIOLATIONS)
    assert not new, f"imports across the engine's layers (see this module's docstring): {new}"


def test_the_known_violations_are_still_there() -> None:
    gone = sorted(KNOWN_VIOLATIONS - violations())
    assert not gone, f"fixed, so remove them from KNOWN_VIOLATIONS: {gone}"


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    (tmp_path / "partita" / "client").mkdir(parents=True)
    (tmp_path / "partita" / "client" / "probe.py").write_text(
        "from partita.processing import Engine\n"
        "from partita.log.clients import new_consumer\n\n"
        "def f():\n"
        "    from partita.client import x\n"
        "    from partita.client import y  # lazy: an optional dependency\n"
    )
    assert violations(tmp_path / "partita") == {
        ("partita.client.probe", "partita.processing"),
        ("partita.client.probe", "lazy partita.client"),
    }
