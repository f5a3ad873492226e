#!/usr/bin/env python3
"""Long chaos soak of the partition worker: sustained load while workers are killed (-9),
stopped gracefully and restarted at random, then the exactly-once invariants and
verify-replay. The test suite runs a short version (tests/integration/test_worker_failover.py).

    .venv/bin/python scripts/soak.py --minutes 30 --workers 3 --partitions 6

Uses KAFKA_BOOTSTRAP_SERVERS, or the local broker (`partita kafka up`). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from partita.config import Config  # noqa: E402
from tests.integration.workers import (  # noqa: E402
    Load,
    WorkerProcess,
    assert_exactly_once,
    create_topics,
    wait_answered,
    wait_until,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    home = Path(tempfile.mkdtemp(prefix="partita-soak-"))
    config = Config.from_env().with_overrides(
        namespace=f"soak{uuid.uuid4().hex[:6]}", partitions=args.partitions, home=home
    )
    create_topics(config)
    workers = [WorkerProcess(config, home / f"w{i}", f"w{i}").start() for i in range(args.workers)]
    faults = {"kill9": 0, "sigterm": 0}
    deadline = time.monotonic() + args.minutes * 60
    with Load(config) as load:
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(2, 10))
            victim = rng.choice(workers)
            if rng.random() < 0.7:
                victim.kill()
                faults["kill9"] += 1
            else:
                victim.stop()
                faults["sigterm"] += 1
            victim.start()
            print(f"{faults} sent={load.sent}", file=sys.stderr, flush=True)
        sent = load.stop()
    log = wait_answered(config, sent, 300, workers[0])
    checked = assert_exactly_once(log, args.partitions)
    for worker in workers[1:]:
        worker.stop()
    last = workers[0]
    wait_until(
        lambda: f"assigned partitions {list(range(args.partitions))}" in last.tail(200),
        120, "one worker to own every partition", last.tail,
    )
    last.stop()
    verify = last.verify_replay()
    print(
        json.dumps(
            {
                "soak_minutes": args.minutes,
                "instances": checked,
                "faults": faults,
                "lost": 0,
                "duplicated": 0,
                "verify_replay_equal": verify.returncode == 0,
                "seed": args.seed,
            }
        )
    )
    return 0 if verify.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
