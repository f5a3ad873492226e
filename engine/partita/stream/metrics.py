"""What one partition's processing counts: commands, rejections, the trust boundary's refusals,
batches. Plain counters on the hot path; `partita bench` and `partita status` read them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class ProcessingMetrics:
    commands: int = 0
    follow_ups: int = 0
    rejections: int = 0
    errors: int = 0
    forwarded: int = 0
    ingress: int = 0
    """Client commands read from the ingress topic (admitted or refused)."""
    refused: int = 0
    """Ingress records refused before reaching the log (not commands, internal intents, ...)."""
    backpressured: int = 0
    """New instances and messages refused RESOURCE_EXHAUSTED while ingress lagged."""
    replies_dropped: int = 0
    """Replies not written: topic not allowed or missing, partition out of range."""
    undecodable: int = 0
    batches: int = 0
    aborted: int = 0
    predicted: int = 0
    """Batches whose client commands were processed at the log positions their copies were
    predicted to land at (checked before the commit), instead of settled once delivered."""
    mispredicted: int = 0
    """Of those, batches aborted and processed again: another producer wrote first."""
    not_read_back: int = 0
    """Batches whose own records the log consumer was moved past instead of reading them back
    (`ProcessingStateMachine` step 5)."""
    first_batch_started: float = 0.0
    """time.monotonic() when the first batch began (0 before), for throughput figures."""
    last_batch_committed: float = 0.0

    def boundary_counters(self) -> dict[str, int]:
        """What the trust boundary turned away (partita.stream.counters)."""
        return {
            "refused": self.refused,
            "backpressured": self.backpressured,
            "replies_dropped": self.replies_dropped,
        }
