"""Deployed decisions: DMN resources (`.dmn`), each a decision requirements graph (DRG),
versioned per DRG id, and its decisions, versioned per decision id, as Zeebe versions them.

State (written only by the DECISION_REQUIREMENTS and DECISION CREATED appliers): `drg_by_key`
holds a graph and its XML, `decision_by_key` a decision and its graph's key; `*_by_id_and_version`
and `latest_*_version` index them. Parsed graphs are cached in memory by key and checksum (derived
data, never state), as process models are."""

from __future__ import annotations

from dataclasses import dataclass

from partita.dmn import Drg, parse_dmn
from partita.processing.context import ProcessingContext
from partita.processing.deployment import state as deployment_state
from partita.protocol.decision_values import (
    DecisionMetadata,
    DecisionRequirementsMetadata,
    DecisionRequirementsValue,
    DecisionValue,
)
from partita.protocol.intents import DecisionIntent, DecisionRequirementsIntent
from partita.state import ColumnFamilies
from partita.state.stored import DeployedDecision, DeployedDrg
from partita.state.view import StateView

DRGS = ColumnFamilies.DRG_BY_KEY
DRG_VERSIONS = ColumnFamilies.DRG_BY_ID_AND_VERSION
LATEST_DRG = ColumnFamilies.LATEST_DRG_VERSION
DECISIONS = ColumnFamilies.DECISION_BY_KEY
DECISION_VERSIONS = ColumnFamilies.DECISION_BY_ID_AND_VERSION
LATEST_DECISION = ColumnFamilies.LATEST_DECISION_VERSION

SUFFIX = ".dmn"


@dataclass(frozen=True, slots=True)
class ParsedDmn:
    name: str
    content: bytes
    drg: Drg


def latest_drg(db: StateView, drg_id: str) -> tuple[int, DeployedDrg] | None:
    version = db.column(LATEST_DRG).get(drg_id)
    key = None if version is None else db.column(DRG_VERSIONS).get((drg_id, version))
    drg = None if key is None else db.column(DRGS).get(key)
    return None if key is None or drg is None else (key, drg)


def decision(db: StateView, key: int) -> DeployedDecision | None:
    return db.column(DECISIONS).get(key)


def latest_decision(db: StateView, decision_id: str) -> tuple[int, DeployedDecision] | None:
    version = db.column(LATEST_DECISION).get(decision_id)
    return None if version is None else decision_version(db, decision_id, version)


def decision_version(
    db: StateView, decision_id: str, version: int
) -> tuple[int, DeployedDecision] | None:
    key = db.column(DECISION_VERSIONS).get((decision_id, version))
    found = None if key is None else db.column(DECISIONS).get(key)
    return None if key is None or found is None else (key, found)


def newest_decision_where(
    db: StateView, decision_id: str, *, version_tag: str = "", deployment_key: int = -1
) -> tuple[int, DeployedDecision] | None:
    """The newest version of `decision_id` with this version tag, or from this deployment."""
    newest = db.column(LATEST_DECISION).get(decision_id) or 0
    for version in range(newest, 0, -1):
        found = decision_version(db, decision_id, version)
        if found is None:
            continue
        if version_tag and found[1].version_tag == version_tag:
            return found
        if deployment_key >= 0 and found[1].deployment_key == deployment_key:
            return found
    return None


_PARSED: dict[tuple[int, str], Drg] = {}
_MAX_PARSED = 256


def graph(db: StateView, drg_key: int) -> Drg:
    """The parsed graph of `drg_key` (cached: parsing is deterministic)."""
    stored = db.column(DRGS).get(drg_key)
    if stored is None:
        raise LookupError(f"no decision requirements graph {drg_key}")
    identity = (drg_key, stored.checksum)
    cached = _PARSED.get(identity)
    if cached is None:
        cached = parse_dmn(stored.resource.encode("utf-8"), stored.resource_name)
        if len(_PARSED) >= _MAX_PARSED:
            _PARSED.pop(next(iter(_PARSED)), None)
        _PARSED[identity] = cached
    return cached


def deploy(
    ctx: ProcessingContext, parsed: ParsedDmn, deployment_key: int
) -> tuple[DecisionRequirementsMetadata, list[DecisionMetadata]]:
    """A new version of the graph and of each of its decisions (DECISION_REQUIREMENTS and
    DECISION CREATED), or the latest ones when the resource is a duplicate: same name, same
    checksum, and each of its decisions' latest version still from that graph."""
    drg = parsed.drg
    digest = deployment_state.checksum(parsed.content)
    latest = latest_drg(ctx.state, drg.id)
    if latest is not None and _duplicate(ctx.state, latest, parsed, digest.hex()):
        key, stored = latest
        meta = DecisionRequirementsMetadata(
            drg.id, drg.name, stored.version, key, drg.namespace, parsed.name, digest, True
        )
        decisions = []
        for decision_id in drg.decisions:
            found = latest_decision(ctx.state, decision_id)
            assert found is not None  # _duplicate checked it
            d_key, d = found
            decisions.append(
                DecisionMetadata(
                    decision_id,
                    d.name,
                    d.version,
                    d.version_tag,
                    d_key,
                    drg.id,
                    key,
                    True,
                    deployment_key=d.deployment_key,
                )
            )
        return meta, decisions
    version = 1 if latest is None else latest[1].version + 1
    key = ctx.keys.next_key()
    value = DecisionRequirementsValue(
        drg.id, drg.name, version, key, drg.namespace, parsed.name, digest, parsed.content
    )
    ctx.append_event(DecisionRequirementsIntent.CREATED, value, key)
    decisions = []
    for decision_id, model in drg.decisions.items():
        previous = latest_decision(ctx.state, decision_id)
        created = DecisionValue(
            decision_id,
            model.name,
            1 if previous is None else previous[1].version + 1,
            model.version_tag,
            ctx.keys.next_key(),
            drg.id,
            key,
            deployment_key=deployment_key,
        )
        ctx.append_event(DecisionIntent.CREATED, created, created.decision_key)
        decisions.append(_metadata(created))
    meta = DecisionRequirementsMetadata(
        drg.id, drg.name, version, key, drg.namespace, parsed.name, digest, False
    )
    return meta, decisions


def _duplicate(
    db: StateView, latest: tuple[int, DeployedDrg], parsed: ParsedDmn, checksum: str
) -> bool:
    key, stored = latest
    if stored.resource_name != parsed.name or stored.checksum != checksum:
        return False
    for decision_id in parsed.drg.decisions:
        found = latest_decision(db, decision_id)
        if found is None or found[1].drg_key != key:
            return False
    return True


def _metadata(value: DecisionValue) -> DecisionMetadata:
    return DecisionMetadata(
        value.decision_id,
        value.decision_name,
        value.version,
        value.version_tag,
        value.decision_key,
        value.decision_requirements_id,
        value.decision_requirements_key,
        value.is_duplicate,
        value.tenant_id,
        value.deployment_key,
    )


def distribute(
    ctx: ProcessingContext,
    drgs: tuple[DecisionRequirementsMetadata, ...],
    decisions: tuple[DecisionMetadata, ...],
    resources: dict[str, bytes],
) -> None:
    """On another partition: the graphs and decisions partition 0 created, as it created them."""
    for meta in drgs:
        if meta.is_duplicate or ctx.state.column(DRGS).get(meta.decision_requirements_key):
            continue
        value = DecisionRequirementsValue(
            meta.decision_requirements_id,
            meta.decision_requirements_name,
            meta.decision_requirements_version,
            meta.decision_requirements_key,
            meta.namespace,
            meta.resource_name,
            meta.checksum,
            resources[meta.resource_name],
        )
        ctx.append_event(DecisionRequirementsIntent.CREATED, value, meta.decision_requirements_key)
    for d in decisions:
        if d.is_duplicate or ctx.state.column(DECISIONS).get(d.decision_key):
            continue
        created = DecisionValue(
            d.decision_id,
            d.decision_name,
            d.version,
            d.version_tag,
            d.decision_key,
            d.decision_requirements_id,
            d.decision_requirements_key,
            deployment_key=d.deployment_key,
        )
        ctx.append_event(DecisionIntent.CREATED, created, d.decision_key)
