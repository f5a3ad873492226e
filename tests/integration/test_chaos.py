"""The short chaos run (the long one is in docs/operations.md): load through the ingress topic
while engine workers are killed, frozen, added and removed, the job worker is killed, the broker
restarts, workers snapshot and truncate the log, and a hostile producer writes records no
client may send; then, from the log, nothing lost, nothing duplicated, every hostile record
rejected once and nothing else, and replay equal on every partition."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.kafka


@pytest.mark.timeout(900)
def test_short_chaos_run_loses_and_duplicates_nothing() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "partita.cli",
            "chaos",
            "--duration",
            "45",
            "--rate",
            "10",
            "--fault-every",
            "4",
            "--min-faults",
            "8",
            "--seed",
            "3",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=850,
        check=False,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, run.stdout + run.stderr[-3000:]
    summary = json.loads(lines[-1])
    assert summary["lost"] == 0, summary
    assert summary["duplicated"] == 0, summary
    assert summary["replay"] == "equal", summary
    assert summary["truncated_records"] > 0, summary  # the log start moved during the run
    hostile = summary["hostile"]
    assert hostile["sent"] >= 20, summary
    assert hostile["rejected"] == hostile["sent"], summary
    assert hostile["changed_state"] == hostile["answered_twice"] == 0, summary
    assert summary["replies_on_log"] == 0, summary
    assert summary["records_in_other_namespace"] == 0, summary
    assert summary["instances"] >= 400, summary
    assert summary["faults"] >= 8, summary
    assert {"kill", "broker"} <= set(summary["faults_by_kind"]), summary
    assert run.returncode == 0, run.stderr[-3000:]
