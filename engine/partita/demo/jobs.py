"""The demo's job worker, run by `partita demo` in a process of its own (as `partita bench e2e`
runs its job worker), so that its tasks never share an interpreter with the load generator:

    python -m partita.demo.jobs BOOTSTRAP NAMESPACE PARENT_PID

A push job worker for the two service tasks of `order-demo.bpmn`. It prints `ready` once every
job topic has partitions assigned, or exits with 1 (the reason on stderr) when that takes
longer than `READY_TIMEOUT_S`. It stops gracefully on SIGTERM or SIGINT, and by itself within
a second when PARENT_PID is no longer its parent, exiting at most `ORPHAN_GRACE_S` later, so a
demo that was killed leaves no worker behind. Stopping, it prints one JSON line: its pid and
the counts of the jobs it handled.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time

from partita.client import ActivatedJob, JobWorker
from partita.config import Config
from partita.demo import READY_TIMEOUT_S

ORPHAN_GRACE_S = 5.0
"""How long a worker whose demo is gone tries to stop gracefully before it exits."""


def demo_job_worker(config: Config) -> JobWorker:
    """A push JobWorker with the tasks of `order-demo.bpmn`'s service tasks."""
    worker = JobWorker(config, "demo")

    @worker.task("demo.reserve")
    def reserve(items: int) -> dict[str, object]:
        return {"reserved": items}

    @worker.task("demo.review")
    def review(order: dict[str, object], job: ActivatedJob) -> dict[str, object]:
        return {"reviewedBy": job.custom_headers.get("reviewer", "someone")}

    return worker


def _announce_ready(worker: JobWorker, failed: threading.Event) -> None:
    if worker.ready.wait(READY_TIMEOUT_S):
        print("ready", flush=True)
        return
    if worker.stopping.is_set():
        return
    print(
        f"the demo's job worker got no partitions of its job topics within"
        f" {READY_TIMEOUT_S:g} s; is the broker's group coordinator up?",
        file=sys.stderr,
        flush=True,
    )
    failed.set()
    worker.stop()


def _stop_without_parent(worker: JobWorker, parent: int) -> None:
    """Once `parent` is gone, stop; and exit after `ORPHAN_GRACE_S` even if the jobs in hand
    are not answered by then. Nothing waits for them any more, and their engine worker, which
    died with the demo, may never reply: the worker's own drain would wait its client's
    timeout for each job topic. An unanswered job is pushed again to the next worker."""
    while not worker.stopping.wait(0.5):
        if os.getppid() != parent:
            worker.stop()
            time.sleep(ORPHAN_GRACE_S)
            os._exit(1)


def main(argv: list[str]) -> int:
    bootstrap, namespace, parent = argv
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = Config.from_env().with_overrides(bootstrap_servers=bootstrap, namespace=namespace)
    worker = demo_job_worker(config)
    worker.install_signal_handlers()
    failed = threading.Event()
    threading.Thread(target=_announce_ready, args=(worker, failed), daemon=True).start()
    threading.Thread(target=_stop_without_parent, args=(worker, int(parent)), daemon=True).start()
    stats = worker.run()
    counts = {
        "pid": os.getpid(),
        "completed": stats.completed,
        "failed": stats.failed,
        "errors_thrown": stats.errors_thrown,
        "rejected": stats.rejected,
    }
    print(json.dumps(counts), flush=True)
    return 1 if failed.is_set() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
