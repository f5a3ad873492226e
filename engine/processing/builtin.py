"""The engine this build runs by default (`partita worker --engine`): every room installed."""

from __future__ import annotations

from types import ModuleType

from engine.processing import banning
from engine.processing.deployment import appliers as deployment_appliers
from engine.processing.deployment import processors as deployment_processors
from engine.processing.element import lifecycle
from engine.processing.engine import Engine
from engine.processing.incident import appliers as incident_appliers
from engine.processing.incident import processors as incident_processors
from engine.processing.instance import appliers as instance_appliers
from engine.processing.instance import cancel, creation
from engine.processing.job import appliers as job_appliers
from engine.processing.job import processors as job_processors
from engine.processing.job import push
from engine.processing.message import appliers as message_appliers
from engine.processing.message import process_subscriptions, subscriptions
from engine.processing.message import processors as message_processors
from engine.processing.timer import appliers as timer_appliers
from engine.processing.timer import processors as timer_processors
from engine.processing.variable import appliers as variable_appliers
from engine.processing.variable import processors as variable_processors

HANDLER_MODULES: tuple[ModuleType, ...] = (
    banning,
    deployment_processors,
    deployment_appliers,
    creation,
    cancel,
    lifecycle,
    instance_appliers,
    job_processors,
    job_appliers,
    push,
    incident_processors,
    incident_appliers,
    variable_processors,
    variable_appliers,
    message_processors,
    subscriptions,
    process_subscriptions,
    message_appliers,
    timer_processors,
    timer_appliers,
)
"""Every module whose `handlers` the build installs, in this order (it is also the order in
which the due-date checkers run: job back-offs and time-outs, message expiry, timers)."""


def build_engine() -> Engine:
    """The core (ERROR events ban instances), deployments, and every domain added since."""
    engine = Engine()
    for module in HANDLER_MODULES:
        engine.install(module.handlers)
    return engine
