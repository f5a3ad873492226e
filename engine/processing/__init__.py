"""The deterministic state machine: processors decide, appliers mutate.

`Engine` maps (record type, value type, intent) to processors and (value type, intent,
version) to event appliers. A processor reads state and writes records through its
`ProcessingContext`; every event it writes is applied at once (read-your-writes inside the
batch). Replay runs the appliers only.
"""

from engine.processing.context import ProcessingContext, ProcessingOutput, RejectionError
from engine.processing.engine import Applier, Engine, Processor

__all__ = [
    "Applier",
    "Engine",
    "ProcessingContext",
    "ProcessingOutput",
    "Processor",
    "RejectionError",
]
