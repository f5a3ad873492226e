"""A job worker in its own process, for tests that kill it:
`python -m tests.support.job_worker_process BOOTSTRAP NAMESPACE NAME TYPE [--exactly-once]`.

Its task takes 20 ms and completes the job with `{"doneBy": NAME}`; it prints `ready` once its
partitions are assigned and stops gracefully on SIGTERM.
"""

from __future__ import annotations

import sys
import threading
import time

from partita.client import JobWorker
from partita.config import Config


def main(argv: list[str]) -> int:
    bootstrap, namespace, name, job_type, *flags = argv
    config = Config(bootstrap_servers=bootstrap, namespace=namespace)
    worker = JobWorker(config, name, concurrency=5, exactly_once="--exactly-once" in flags)

    @worker.task(job_type)
    def work(n: int) -> dict[str, object]:
        time.sleep(0.02)
        return {"doneBy": name, "m": n * 10}

    worker.install_signal_handlers()

    def announce() -> None:
        worker.ready.wait()
        print("ready", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    stats = worker.run()
    print(f"stopped: {stats.handled} jobs, {stats.transactions} transactions", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
