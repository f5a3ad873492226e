"""`partita bench state`: throughput of the partition store through the batch overlay.

- put/s: upserts into the overlay (encode key and value);
- get/s: point reads of committed keys through the overlay (RocksDB + decode);
- scan items/s: prefix iteration of committed children merged with overlay writes;
- commits/s: commits of 1,000-upsert batches (one WriteBatch each, WAL on).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from partita.state import ColumnFamilies, PartitionDb


def run(operations: int = 200_000) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="partita-bench-state-"))
    try:
        with PartitionDb(directory / "p") as db:
            jobs = db.column(ColumnFamilies.JOB_STATE)
            children = db.column(ColumnFamilies.ELEMENT_INSTANCE_CHILDREN)

            started = time.perf_counter()
            for key in range(operations):
                jobs.upsert(key, "ACTIVATABLE")
            put_s = operations / (time.perf_counter() - started)
            db.commit()

            started = time.perf_counter()
            for key in range(operations):
                jobs.get(key)
            get_s = operations / (time.perf_counter() - started)

            scopes = 100
            per_scope = operations // scopes
            for scope in range(scopes):
                for child in range(0, per_scope, 2):
                    children.upsert((scope, child), None)
            db.commit()
            for scope in range(scopes):  # half of the children only in the overlay
                for child in range(1, per_scope, 2):
                    children.upsert((scope, child), None)
            started = time.perf_counter()
            seen = 0
            for scope in range(scopes):
                for _ in children.items(ColumnFamilies.ELEMENT_INSTANCE_CHILDREN.key.prefix(scope)):
                    seen += 1
            scan_s = seen / (time.perf_counter() - started)
            db.rollback()

            batches = max(20, operations // 1000 // 4)
            started = time.perf_counter()
            for batch in range(batches):
                for i in range(1000):
                    jobs.upsert(batch * 1000 + i, "ACTIVATED")
                db.commit(last_processed_position=batch)
            commit_s = batches / (time.perf_counter() - started)
        return {
            "bench": "state",
            "put_per_s": round(put_s),
            "get_per_s": round(get_s),
            "scan_items_per_s": round(scan_s),
            "commits_per_s_1000_ops": round(commit_s, 1),
            "operations": operations,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)
