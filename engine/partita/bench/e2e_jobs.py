"""The job workers of `partita bench e2e`, run in their own process:

    python -m partita.bench.e2e_jobs BOOTSTRAP NAMESPACE JOB_TYPE CONCURRENCY

A push job worker whose task completes at once with one variable. Prints `ready` when its
partitions are assigned; stops gracefully on SIGTERM.
"""

from __future__ import annotations

import sys
import threading

from partita.client import JobWorker
from partita.config import Config


def main(argv: list[str]) -> int:
    bootstrap, namespace, job_type, concurrency = argv
    config = Config.from_env().with_overrides(bootstrap_servers=bootstrap, namespace=namespace)
    worker = JobWorker(config, f"bench-{job_type}", concurrency=int(concurrency))

    @worker.task(job_type)
    def work(n: int) -> dict[str, object]:
        return {"done": n}

    worker.install_signal_handlers()

    def announce() -> None:
        worker.ready.wait()
        print("ready", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
