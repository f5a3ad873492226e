"""Processors read, appliers write: the split is in the types. A processor's context holds
state as a read-only `StateView`; writing through it is a mypy error, not a convention."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def _mypy(tmp_path: Path, body: str) -> str:
    source = tmp_path / "probe.py"
    source.write_text(
        "from partita.processing.context import ProcessingContext\n"
        "from partita.state import ColumnFamilies, PartitionDb\n\n" + body
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return result.stdout


def test_a_processor_cannot_write_state_but_an_applier_can(tmp_path: Path) -> None:
    out = _mypy(
        tmp_path,
        "def processor(ctx: ProcessingContext) -> None:\n"
        "    ctx.state.column(ColumnFamilies.JOB_PUSHED).upsert('t', 1)\n"
        "    ctx.state.column(ColumnFamilies.JOB_PUSHED).delete('t')\n"
        "    assert ctx.state.column(ColumnFamilies.JOB_PUSHED).get('t') is None\n\n"
        "def applier(db: PartitionDb) -> None:\n"
        "    db.column(ColumnFamilies.JOB_PUSHED).upsert('t', 1)\n",
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 2, out
    assert all("has no attribute" in e and "ReadOnlyColumn" in e for e in errors), out
    assert {e.split(":")[1] for e in errors} == {"5", "6"}, out
