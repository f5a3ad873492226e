"""Per-partition counters of what the engine turned away at its trust boundary, carried in the
`metadata` of the engine group's committed ingress offset, so `partita status` can show them
without a topic of their own and they survive restarts and moves:

    partita-counters:refused=5,backpressured=120,replies_dropped=3

- `refused`: ingress records rejected before reaching the log (not a command, an internal
  intent, a foreign key, undecodable);
- `backpressured`: new instances and messages rejected RESOURCE_EXHAUSTED;
- `replies_dropped`: replies not written (reply topic not allowed or missing, partition out of
  range).

The owner of the partition reads them back when it opens it and keeps counting from there.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "partita-counters:"
NAMES = ("refused", "backpressured", "replies_dropped")


def encode(counters: Mapping[str, int]) -> str:
    """The metadata string of `counters` (only the known, non-zero ones)."""
    return PREFIX + ",".join(f"{name}={counters[name]}" for name in NAMES if counters.get(name))


def decode(metadata: str | None) -> dict[str, int]:
    """The counters in a committed offset's metadata; empty for any other metadata."""
    if not metadata or not metadata.startswith(PREFIX):
        return {}
    found = {}
    for item in metadata[len(PREFIX) :].split(","):
        name, _, value = item.partition("=")
        if name in NAMES and value.isdigit():
            found[name] = int(value)
    return found
