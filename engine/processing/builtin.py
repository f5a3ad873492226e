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
    messages,
    process_subscriptions,
    timers,
    variables,
)
from engine.processing.engine import Engine
from engine.processing.job import appliers as job_appliers
from engine.processing.job import processors as job_processors
from engine.processing.job import push as job_push


def build_engine() -> Engine:
    """The core (ERROR events ban instances), deployments, and every domain added since."""
    engine = Engine()
    banning.register(engine)
    deployment.register(engine)
    instances.register(engine)
    creation.register(engine)
    element.register(engine)
    engine.install(job_processors.handlers)
    engine.install(job_appliers.handlers)
    incidents.register(engine)
    variables.register(engine)
    engine.install(job_push.handlers)
    messages.register(engine)
    process_subscriptions.register(engine)
    timers.register(engine)
    events.register(engine)
    return engine
