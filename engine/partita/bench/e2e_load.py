"""The load generator of `partita bench e2e`, run in its own process:

    python -m partita.bench.e2e_load BOOTSTRAP NAMESPACE PROCESS_ID INSTANCES RATE IN_FLIGHT [TURNS]

Creates INSTANCES instances of PROCESS_ID (variables `{"n": N}`, or the demo's orders for the
demo's process) with CREATE_WITH_AWAITING_RESULT, at RATE per second
(0: as fast as the engine takes them, at most IN_FLIGHT unanswered; with TURNS, a
`partita.bench.turns.Turns` argument, at RATE in this generator's slots only), and prints one
JSON line:
completed, rejected, unanswered, seconds, instances/s, create-to-complete latency percentiles
and this process's CPU and peak RSS.
"""

from __future__ import annotations

import json
import sys
import time

from partita import demo
from partita.bench.procstats import sample, usage
from partita.bench.turns import Turns, send_times
from partita.client import Client
from partita.config import Config
from partita.demo import AwaitedCreations, percentile


def run(  # noqa: PLR0917 - the command line, spelled out
    bootstrap: str,
    namespace: str,
    process_id: str,
    instances: int,
    rate: float,
    in_flight: int,
    turns: Turns | None = None,
) -> dict[str, float | int]:
    config = Config.from_env().with_overrides(bootstrap_servers=bootstrap, namespace=namespace)
    with Client(config, timeout=120) as client:
        awaited = AwaitedCreations(client)
        orders = demo.orders(instances) if process_id == demo.PROCESS_ID else None
        origin, offset = send_times(rate, turns)
        cpu_before = sample()
        started = max(origin, time.monotonic())  # taking turns: from the first slot
        for n in range(instances):
            if offset is not None:
                due = origin + offset(n)
                while (wait := due - time.monotonic()) > 0:
                    awaited.collect(min(wait, 0.005))
            while len(awaited.sent) >= in_flight:
                awaited.collect(0.005)
            awaited.create(process_id, {"order": next(orders)} if orders else {"n": n})
            if n % 50 == 0:
                awaited.collect(0)
        latencies = awaited.finish(120)
        seconds = time.monotonic() - started
    return {
        "completed": len(latencies),
        "rejected": awaited.rejected,
        "unanswered": len(awaited.sent),
        "seconds": round(seconds, 2),
        "instances_per_s": round(len(latencies) / seconds, 1),
        "latency_ms_p50": round(percentile(latencies, 0.50), 1),
        "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "latency_ms_p99": round(percentile(latencies, 0.99), 1),
        **usage(cpu_before, sample(), seconds),
    }


def main(argv: list[str]) -> int:
    bootstrap, namespace, process_id, instances, rate, in_flight, *rest = argv
    turns = Turns.parse(rest[0]) if rest else None
    result = run(
        bootstrap, namespace, process_id, int(instances), float(rate), int(in_flight), turns
    )
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
