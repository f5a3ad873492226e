"""The engine this build runs by default (`partita worker --engine`)."""

from __future__ import annotations

from engine.processing import (
    banning,
    creation,
    deployment,
    element,
    events,
    incidents,
    instances,
    job_activation,
    job_push,
    jobs,
    messages,
    process_subscriptions,
    timers,
    variables,
)
from engine.processing.engine import Engine


def build_engine() -> Engine:
    """The core (ERROR events ban instances), deployments, and every domain added since."""
    engine = Engine()
    banning.register(engine)
    deployment.register(engine)
    instances.register(engine)
    creation.register(engine)
    element.register(engine)
    jobs.register(engine)
    incidents.register(engine)
    variables.register(engine)
    job_activation.register(engine)
    job_push.register(engine)
    messages.register(engine)
    process_subscriptions.register(engine)
    timers.register(engine)
    events.register(engine)
    return engine
