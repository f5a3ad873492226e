"""Every `partita` command's `--help` ends with examples that the parser accepts, and building
the parser (what `partita --help` does) loads no Kafka client, RocksDB, faust or BPMN parser."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest

from partita.cli import build_parser


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The parser and every (sub)command parser below it, with its command path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def example_commands(epilog: str) -> list[list[str]]:
    """The arguments after `partita` of each command line in the `examples:` block (up to the
    first blank line): continuation lines joined, notes after two spaces or `#` dropped, and
    environment assignments, pipes and redirections left out."""
    block = epilog.split("\n\n", 1)[0].splitlines()[1:]
    lines: list[str] = []
    for line in block:
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + " " + line.strip()
        else:
            lines.append(line.strip())
    commands = []
    for line in lines:
        words = shlex.split(re.split(r"\s{2,}", line)[0], comments=True)
        if "partita" not in words:
            continue  # a note on its own line, or another program (curl)
        words = words[words.index("partita") + 1 :]
        for operator in ("|", ">", "&&"):
            if operator in words:
                words = words[: words.index(operator)]
        commands.append(words)
    return commands


ALL = list(parsers(build_parser()))


def test_the_walk_finds_every_group_and_command() -> None:
    paths = {" ".join(path) for path, _ in ALL}
    wanted = {"", "kafka", "kafka up", "jobs fail", "incidents list", "bench e2e", "worker"}
    assert wanted | {"tasks claim"} <= paths
    assert len(paths) == 50


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(p) or "partita" for p, _ in ALL])
def test_help_ends_with_examples_the_parser_accepts(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    help_text = parser.format_help()
    assert "\nexamples:\n" in help_text, f"`partita {' '.join(path)} --help` shows no examples"
    commands = [c for c in example_commands(parser.epilog or "") if "--help" not in c]
    assert commands, f"the examples of `partita {' '.join(path)}` run no partita command"
    assert any(tuple(words[: len(path)]) == path for words in commands), (
        f"no example of `partita {' '.join(path)}` runs it"
    )
    for words in commands:  # every example, also of another command, has valid flags
        try:
            args = build_parser().parse_args(words)
        except SystemExit:
            pytest.fail(f"argparse refuses the example `partita {shlex.join(words)}`")
        assert callable(args.func), words


def test_examples_keep_their_lines_while_descriptions_wrap() -> None:
    chaos = dict(ALL)[("chaos",)]
    help_text = chaos.format_help()
    assert "  partita chaos --hostile-rate 0 --no-truncate    no hostile producer" in help_text
    assert max(len(line) for line in help_text.split("examples:")[0].splitlines()) <= 100


def test_a_command_without_examples_cannot_be_added() -> None:
    from partita.cli.common import add_command

    commands = argparse.ArgumentParser().add_subparsers()
    with pytest.raises(ValueError, match="examples"):
        add_command(commands, "x", lambda _: 0, "a command", examples="x does things")


def test_help_is_fast_because_the_engine_is_not_loaded() -> None:
    heavy = ("confluent_kafka", "rocksdict", "faust", "fastavro", "partita.bpmn", "partita.client")
    script = (
        "import sys; from partita.cli import build_parser; build_parser().format_help();"
        f" print([m for m in sys.modules if m.split('.')[0] in {heavy!r} or m in {heavy!r}])"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    assert loaded.strip() == "[]"


def test_python_dash_m_engine_cli_runs_partita() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "partita.cli", "--version"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("partita ")
