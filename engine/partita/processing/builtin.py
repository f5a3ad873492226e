"""The engine this build runs by default (`partita worker --engine`): every domain installed."""

from __future__ import annotations

from types import ModuleType

from partita.processing import banning
from partita.processing.compensation import appliers as compensation_appliers
from partita.processing.decision import processors as decision_processors
from partita.processing.deployment import appliers as deployment_appliers
from partita.processing.deployment import processors as deployment_processors
from partita.processing.dispatch import Engine
from partita.processing.element import lifecycle
from partita.processing.incident import appliers as incident_appliers
from partita.processing.incident import processors as incident_processors
from partita.processing.instance import appliers as instance_appliers
from partita.processing.instance import cancel, creation
from partita.processing.job import appliers as job_appliers
from partita.processing.job import processors as job_processors
from partita.processing.job import push
from partita.processing.message import appliers as message_appliers
from partita.processing.message import process_subscriptions, subscriptions
from partita.processing.message import processors as message_processors
from partita.processing.signal import appliers as signal_appliers
from partita.processing.signal import processors as signal_processors
from partita.processing.timer import appliers as timer_appliers
from partita.processing.timer import processors as timer_processors
from partita.processing.user_task import appliers as user_task_appliers
from partita.processing.user_task import processors as user_task_processors
from partita.processing.variable import appliers as variable_appliers
from partita.processing.variable import processors as variable_processors

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
    user_task_processors,
    user_task_appliers,
    decision_processors,
    signal_processors,
    signal_appliers,
    compensation_appliers,
)
"""Every module whose `handlers` the build installs, in this order (it is also the order in
which the due-date checkers run: job back-offs and time-outs, message expiry, timers)."""


def build_engine() -> Engine:
    """The core (ERROR events ban instances), deployments, and every domain added since."""
    engine = Engine()
    for module in HANDLER_MODULES:
        engine.install(module.handlers)
    return engine
