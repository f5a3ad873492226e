"""The engine this build runs by default (`partita worker --engine`)."""

from __future__ import annotations

from engine.processing import banning
from engine.processing.engine import Engine


def build_engine() -> Engine:
    """The core (ERROR events ban instances) plus every domain registered so far."""
    engine = Engine()
    banning.register(engine)
    return engine
