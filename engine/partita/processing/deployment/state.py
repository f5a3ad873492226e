"""Deployed process definitions in state, and their parsed models.

State (written only by the PROCESS CREATED applier): `process_by_key` holds the definition,
`process_resource` its BPMN XML, `process_by_id_and_version` and `latest_process_version`
index it. Parsed models are cached in memory by key: parsing is deterministic, so the cache is
derived data, never state.
"""

from __future__ import annotations

import hashlib

from msgspec import Struct

from partita.bpmn import Process, parse_bpmn
from partita.state import ColumnFamilies, PartitionDb
from partita.state.errors import KeyNotFoundError
from partita.state.stored import DeployedProcessRecord
from partita.state.view import StateView

BY_KEY = ColumnFamilies.PROCESS_BY_KEY
RESOURCES = ColumnFamilies.PROCESS_RESOURCE
BY_ID_AND_VERSION = ColumnFamilies.PROCESS_BY_ID_AND_VERSION
LATEST = ColumnFamilies.LATEST_PROCESS_VERSION


class DeployedProcess(Struct, frozen=True, gc=False):
    """A deployed process definition, as processors and appliers see it. A Struct, not a
    frozen dataclass: one is built for every lookup of a definition, several per instance."""

    key: int
    bpmn_process_id: str
    version: int
    resource_name: str
    checksum: str
    deployment_key: int = -1

    def model(self, db: StateView) -> Process:
        identity = (self.key, self.checksum, self.bpmn_process_id)
        cached = _MODELS.get(identity)
        if cached is not None:
            return cached
        resource = db.column(RESOURCES).get(self.key)
        if resource is None:
            raise KeyNotFoundError(RESOURCES.name, self.key, "the BPMN resource of a process")
        model = _parse(resource, self.resource_name, self.bpmn_process_id)
        if len(_MODELS) >= _MAX_MODELS:
            _MODELS.pop(next(iter(_MODELS)), None)  # batches of partitions run side by side
        _MODELS[identity] = model
        return model


def checksum(resource: bytes) -> bytes:
    return hashlib.md5(resource, usedforsecurity=False).digest()


def _from_state(key: int, stored: DeployedProcessRecord) -> DeployedProcess:
    return DeployedProcess(
        key,
        stored.bpmn_process_id,
        stored.version,
        stored.resource_name,
        stored.checksum,
        stored.deployment_key,
    )


def by_key(db: StateView, key: int) -> DeployedProcess | None:
    stored = db.column(BY_KEY).get(key)
    return None if stored is None else _from_state(key, stored)


def deployed(db: PartitionDb, key: int) -> DeployedProcess:
    """The process definition `key`, which an event on the log refers to; KeyNotFoundError
    when this partition has no such definition (the appliers' check: never an assert)."""
    found = by_key(db, key)
    if found is None:
        raise KeyNotFoundError(BY_KEY.name, key, "use of a process definition")
    return found


def latest(db: StateView, bpmn_process_id: str) -> DeployedProcess | None:
    version = db.column(LATEST).get(bpmn_process_id)
    return None if version is None else by_version(db, bpmn_process_id, version)


def by_version(db: StateView, bpmn_process_id: str, version: int) -> DeployedProcess | None:
    key = db.column(BY_ID_AND_VERSION).get((bpmn_process_id, version))
    return None if key is None else by_key(db, key)


_MODELS: dict[tuple[int, str, str], Process] = {}
"""Parsed models by (definition key, resource checksum, process id): derived data, never
state. The checksum is part of the identity because a key alone can name another definition
in another store (tests, tools) or after a rolled-back batch reuses it."""
_MAX_MODELS = 1024


def _parse(resource: str, resource_name: str, bpmn_process_id: str) -> Process:
    for process in parse_bpmn(resource.encode("utf-8"), resource_name):
        if process.id == bpmn_process_id:
            return process
    raise LookupError(f"process {bpmn_process_id} not in its resource {resource_name}")
