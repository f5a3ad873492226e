"""kill -9 between commits: reopening shows exactly the last committed batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from partita.state import ColumnFamilies, PartitionDb
from tests.support.paths import ROOT

CHILD = """
import sys, time
from partita.state import ColumnFamilies, PartitionDb
db = PartitionDb(sys.argv[1])
jobs = db.column(ColumnFamilies.JOB_STATE)
for batch in range(1, 1000):
    for i in range(100):
        jobs.upsert(batch * 1000 + i, f"batch-{batch}")
    db.commit(last_processed_position=batch)
    # uncommitted writes of the next batch are in the overlay when the kill comes
    for i in range(50):
        jobs.upsert(-(batch * 1000 + i), "never-committed")
    print(batch, flush=True)
    sys.stdin.readline()
    db.rollback()
"""


def test_kill_9_between_commits_keeps_exactly_the_committed_batches(tmp_path: Path) -> None:
    path = tmp_path / "p"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdin is not None and child.stdout is not None
    last = 0
    for _ in range(7):
        last = int(child.stdout.readline())
        child.stdin.write("\n")
        child.stdin.flush()
    last = int(child.stdout.readline())  # batch 8 committed, its overlay pending
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)

    with PartitionDb(path) as db:
        jobs = dict(db.column(ColumnFamilies.JOB_STATE).items())
        assert db.position("last_processed_position") == last == 8
        assert jobs == {  # every committed batch, nothing of the overlay (negative keys)
            batch * 1000 + i: f"batch-{batch}" for batch in range(1, last + 1) for i in range(100)
        }
