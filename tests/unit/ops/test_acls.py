"""`partita acls`: what each role may do on the cluster, judged the way Kafka's authorizer does."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclBinding

from partita import cli
from partita.analytics.export import export_group
from partita.config import Config, KafkaRole
from partita.log.clients import engine_group, transactional_id
from partita.log.topics import export_topic_name
from partita.ops.acls import (
    Acl,
    AclError,
    Operation,
    Pattern,
    Resource,
    kafka_acls_commands,
    role_acls,
)
from partita.ops.acls_apply import apply_acls
from partita.protocol.enums import ValueType

NS = "shop"
CONFIG = Config(namespace=NS)
T, G, X = Resource.TOPIC, Resource.GROUP, Resource.TRANSACTIONAL_ID
R, W, C, D = Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE

_IMPLIED = {
    Operation.DESCRIBE: {R, W, D, Operation.ALTER},
    Operation.DESCRIBE_CONFIGS: {Operation.ALTER_CONFIGS},
}


def allows(acls: Sequence[Acl], resource: Resource, name: str, operation: Operation) -> bool:
    """Whether Kafka would let the principal of `acls` do `operation` on the named resource:
    a literal binding matches its name, a prefixed one every name it starts; Read, Write,
    Delete and Alter imply Describe, AlterConfigs implies DescribeConfigs."""
    granting = {operation} | _IMPLIED.get(operation, set())
    return any(
        acl.resource is resource
        and acl.operation in granting
        and (name == acl.name if acl.pattern is Pattern.LITERAL else name.startswith(acl.name))
        for acl in acls
    )


def acls_of(role: KafkaRole, config: Config = CONFIG, job_types: Sequence[str] = ()) -> list[Acl]:
    return role_acls(role, config, f"User:{role}", job_types)


def test_the_number_of_acls_of_each_role() -> None:
    counts = {str(role): len(acls_of(role)) for role in KafkaRole}
    assert counts == {
        "engine": 13,
        "client": 3,
        "job-worker": 6,
        "analytics": 6,
        "exporter": 4,
        "operator": 4,
        "gateway": 5,
    }


def test_every_acl_allows_one_principal_from_any_host_and_none_is_on_the_cluster() -> None:
    for role in KafkaRole:
        acls = acls_of(role)
        assert len(set(acls)) == len(acls), role
        assert {acl.principal for acl in acls} == {f"User:{role}"}
        assert {acl.host for acl in acls} == {"*"}
        assert all(acl.resource is not Resource.CLUSTER for acl in acls), role
        assert all(acl.why for acl in acls), role


def test_a_client_writes_commands_reads_replies_and_cannot_touch_what_the_engine_writes() -> None:
    client = acls_of(KafkaRole.CLIENT)
    assert allows(client, T, f"{NS}.commands", W)
    assert allows(client, T, f"{NS}.replies", R)
    assert allows(client, G, f"{NS}.client.replies-3f2a", R), "a reply consumer joining a group"
    assert not allows(client, G, engine_group(NS), R)
    for topic in (f"{NS}.log", f"{NS}.snapshots", f"{NS}.jobs.charge-card"):
        assert not allows(client, T, topic, W), topic
        assert not allows(client, T, topic, R), topic
    assert not allows(client, T, f"{NS}.commands", R)
    assert not allows(client, T, f"{NS}.replies", W)
    assert not any(acl.resource is X for acl in client)


def test_a_client_reads_every_allowed_reply_topic() -> None:
    config = Config(namespace=NS, reply_topics=("orders.replies",))
    client = acls_of(KafkaRole.CLIENT, config)
    engine = acls_of(KafkaRole.ENGINE, config)
    for topic in (f"{NS}.replies", "orders.replies"):
        assert allows(client, T, topic, R)
        assert allows(engine, T, topic, W)
        assert not allows(engine, T, topic, R)


def test_the_engine_creates_nothing_and_stays_inside_its_namespace() -> None:
    engine = acls_of(KafkaRole.ENGINE)
    assert not any(acl.operation in (C, Operation.ALTER, Operation.ALTER_CONFIGS) for acl in engine)
    assert all(acl.name.startswith(f"{NS}.") for acl in engine)
    assert not allows(engine, T, "other.log", R)
    assert not allows(engine, T, f"{NS}.export.job", W)
    assert not allows(engine, T, f"{NS}.analytics-jobs-changelog", R)


def test_the_engine_runs_its_partitions() -> None:
    engine = acls_of(KafkaRole.ENGINE)
    log, commands, snapshots = f"{NS}.log", f"{NS}.commands", f"{NS}.snapshots"
    assert allows(engine, T, log, R) and allows(engine, T, log, W)
    assert allows(engine, T, log, D), "truncation is DeleteRecords"
    assert allows(engine, T, commands, R) and not allows(engine, T, commands, W)
    for operation in (R, W, D):
        assert allows(engine, T, snapshots, operation)
    assert allows(engine, T, f"{NS}.jobs.charge-card", W)
    assert allows(engine, T, f"{NS}.replies", W)
    assert allows(engine, G, engine_group(NS), R)
    for partition in (0, 7, 123):
        assert allows(engine, X, transactional_id(NS, partition), W)
        assert allows(engine, G, f"{NS}.restore.{partition}", Operation.DESCRIBE)
    assert not allows(engine, X, f"{NS}.workers.charge-card.w1", W)


def test_the_engine_reads_the_offsets_of_the_downstream_groups_it_waits_for() -> None:
    config = Config(namespace=NS, downstream_groups=(f"{NS}.analytics", "warehouse"))
    engine = acls_of(KafkaRole.ENGINE, config)
    for group in (f"{NS}.analytics", "warehouse"):
        assert allows(engine, G, group, Operation.DESCRIBE)
        assert not allows(engine, G, group, R)
    assert allows(engine, G, f"{NS}.workers.ship", Operation.DESCRIBE)  # job push: workers?
    assert not allows(engine, G, f"{NS}.workers.ship", R)
    assert len(engine) == 15


def test_a_job_worker_reads_its_jobs_and_answers_as_a_client() -> None:
    worker = acls_of(KafkaRole.JOB_WORKER)
    for job_type in ("charge-card", "ship"):
        assert allows(worker, T, f"{NS}.jobs.{job_type}", R)
        assert allows(worker, T, f"{NS}.jobs.{job_type}", Operation.DESCRIBE)
        assert allows(worker, G, f"{NS}.workers.{job_type}", R)
        assert allows(worker, X, f"{NS}.workers.{job_type}.billing-1", W)
        assert not allows(worker, T, f"{NS}.jobs.{job_type}", W)
    assert allows(worker, T, f"{NS}.commands", W)
    assert allows(worker, T, f"{NS}.replies", R)
    assert not allows(worker, T, f"{NS}.log", W)
    assert not any(acl.operation is C for acl in worker)


def test_a_job_worker_with_job_types_pays_only_for_those() -> None:
    worker = acls_of(KafkaRole.JOB_WORKER, job_types=["charge-card"])
    assert allows(worker, T, f"{NS}.jobs.charge-card", R)
    assert allows(worker, G, f"{NS}.workers.charge-card", R)
    assert allows(worker, X, f"{NS}.workers.charge-card.billing-1", W)
    assert not allows(worker, T, f"{NS}.jobs.ship", R)
    assert not allows(worker, T, f"{NS}.jobs.charge-card-v2", R)
    assert not allows(worker, G, f"{NS}.workers.ship", R)
    assert not allows(worker, X, f"{NS}.workers.ship.billing-1", W)
    assert len(worker) == 6
    assert len(acls_of(KafkaRole.JOB_WORKER, job_types=["charge-card", "ship"])) == 9


def test_the_analytics_read_the_log_and_own_only_faust_s_names() -> None:
    import faust
    from faust.transport.consumer import TransactionManager

    from partita.analytics.app import group_id
    from partita.analytics.appliers import Tables

    app = faust.App(group_id(NS), store="memory://")
    changelogs = [app.Table(name).changelog_topic_name for name in Tables.names()]
    analytics = acls_of(KafkaRole.ANALYTICS)
    assert allows(analytics, T, f"{NS}.log", R)
    assert not allows(analytics, T, f"{NS}.log", W)
    for topic in [*changelogs, app._leader_assignor._leader_topic_name]:
        for operation in (R, W, C):
            assert allows(analytics, T, topic, operation), (topic, operation)
    assert allows(analytics, G, app.conf.id, R)
    faust_id = TransactionManager.transactional_id_format.format(
        group_id=app.conf.id, tpg=type("TPG", (), {"group": 0, "partition": 2})
    )
    assert allows(analytics, X, faust_id, W)
    for topic in (f"{NS}.commands", f"{NS}.snapshots", f"{NS}.jobs.x", f"{NS}.replies"):
        assert not allows(analytics, T, topic, R) and not allows(analytics, T, topic, W)


def test_the_exporter_reads_the_log_and_writes_only_its_export_topics() -> None:
    exporter = acls_of(KafkaRole.EXPORTER)
    assert allows(exporter, T, f"{NS}.log", R)
    assert not allows(exporter, T, f"{NS}.log", W)
    for value_type in ValueType:
        topic = export_topic_name(NS, value_type)
        assert allows(exporter, T, topic, W)
        assert allows(exporter, T, topic, Operation.DESCRIBE), "it checks they exist"
        assert not allows(exporter, T, topic, C)
    assert allows(exporter, G, export_group(NS), R)
    assert allows(exporter, X, f"{export_group(NS)}.host-1", W)
    assert not any(acl.operation is C for acl in exporter)


def test_the_operator_administers_the_namespace_but_not_acls() -> None:
    operator = acls_of(KafkaRole.OPERATOR)
    for topic in (
        f"{NS}.log",
        f"{NS}.commands",
        f"{NS}.jobs.ship",
        export_topic_name(NS, ValueType.JOB),
    ):
        assert allows(operator, T, topic, C)
        assert allows(operator, T, topic, Operation.DESCRIBE_CONFIGS)
    assert allows(operator, T, f"{NS}.log", R) and allows(operator, T, f"{NS}.snapshots", R)
    assert not allows(operator, T, f"{NS}.log", W) and not allows(operator, T, f"{NS}.log", D)
    assert allows(operator, G, engine_group(NS), Operation.DESCRIBE)
    assert not allows(operator, G, engine_group(NS), R)
    assert not allows(operator, T, "other.log", R)
    config = Config(namespace=NS, downstream_groups=("warehouse",))
    assert allows(acls_of(KafkaRole.OPERATOR, config), G, "warehouse", Operation.DESCRIBE)


def test_the_kafka_acls_commands_create_exactly_the_same_bindings() -> None:
    for role, job_types in [*((r, ()) for r in KafkaRole), (KafkaRole.JOB_WORKER, ("a", "b"))]:
        acls = acls_of(role, Config(namespace=NS, downstream_groups=("warehouse",)), job_types)
        commands = kafka_acls_commands(acls, "broker:9094")
        assert len(commands) == len({acl.target for acl in acls})
        assert _parse_kafka_acls(commands) == [
            (a.principal, a.host, a.resource, a.pattern, a.name, a.operation) for a in acls
        ]


def _parse_kafka_acls(commands: Sequence[str]) -> list[tuple[Any, ...]]:
    """The bindings kafka-acls.sh would add for `commands`, in order."""
    found = []
    for command in commands:
        words = shlex.split(command)
        assert words[:2] == ["kafka-acls.sh", "--bootstrap-server"]
        assert words[3:6] == ["--command-config", "admin.properties", "--add"]
        flags: dict[str, list[str]] = {}
        index = 6
        while index < len(words):
            flag = words[index].removeprefix("--")
            takes_value = flag != "cluster"
            flags.setdefault(flag, []).append(words[index + 1] if takes_value else "")
            index += 2 if takes_value else 1
        resources = [f for f in flags if f in {str(r) for r in Resource}]
        assert len(resources) == 1, command
        for operation in flags["operation"]:
            found.append(
                (
                    flags["allow-principal"][0],
                    flags["allow-host"][0],
                    Resource(resources[0]),
                    Pattern(flags["resource-pattern-type"][0]),
                    flags[resources[0]][0],
                    Operation(operation),
                )
            )
    return found


@pytest.mark.parametrize("principal", ["engine", "User:", ":x", "User: x", "User x"])
def test_a_principal_must_be_type_and_name(principal: str) -> None:
    with pytest.raises(AclError, match="User:NAME"):
        role_acls(KafkaRole.ENGINE, CONFIG, principal)


def test_job_types_are_for_job_workers_and_must_name_topics() -> None:
    with pytest.raises(AclError, match="job-worker"):
        role_acls(KafkaRole.CLIENT, CONFIG, "User:x", ["charge-card"])
    with pytest.raises(Exception, match="cannot name a Kafka topic"):
        role_acls(KafkaRole.JOB_WORKER, CONFIG, "User:x", ["charge card"])


# -- --apply --------------------------------------------------------------------------------


def _done(value: Any = None, error: int | None = None) -> Future[Any]:
    future: Future[Any] = Future()
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(KafkaException(KafkaError(error, "refused by the broker")))
    return future


class FakeAdmin:
    """The ACL calls of an AdminClient over an in-memory set of bindings."""

    def __init__(self, *, describe_error: int | None = None, create_error: int | None = None):
        self.bindings: set[AclBinding] = set()
        self.describe_error = describe_error
        self.create_error = create_error
        self.created: list[AclBinding] = []

    def describe_acls(self, wanted: Any, request_timeout: float) -> Future[Any]:
        if self.describe_error is not None:
            return _done(error=self.describe_error)
        return _done([b for b in self.bindings if b.principal == wanted.principal])

    def create_acls(self, bindings: list[AclBinding], request_timeout: float) -> dict[Any, Any]:
        if self.create_error is not None:
            return {b: _done(error=self.create_error) for b in bindings}
        self.created += bindings
        self.bindings |= set(bindings)
        return {b: _done() for b in bindings}


def test_apply_creates_what_is_missing_and_nothing_twice() -> None:
    admin = FakeAdmin()
    client = acls_of(KafkaRole.CLIENT)
    first = apply_acls(admin, client[:1])
    assert first == [(client[0], True)]
    second = apply_acls(admin, client)
    assert second == [(client[0], False), (client[1], True), (client[2], True)]
    assert all(created is False for _, created in apply_acls(admin, client))
    assert len(admin.created) == len(client) == len(admin.bindings)
    names = {(b.name, b.operation.name, b.resource_pattern_type.name) for b in admin.bindings}
    assert (f"{NS}.commands", "WRITE", "LITERAL") in names
    assert (f"{NS}.client", "READ", "PREFIXED") in names
    assert {b.permission_type.name for b in admin.bindings} == {"ALLOW"}


def test_apply_without_the_right_to_manage_acls_says_who_has_it() -> None:
    acls = acls_of(KafkaRole.ENGINE)
    for admin in (
        FakeAdmin(describe_error=KafkaError.CLUSTER_AUTHORIZATION_FAILED),
        FakeAdmin(create_error=KafkaError.CLUSTER_AUTHORIZATION_FAILED),
    ):
        with pytest.raises(AclError, match="Alter") as raised:
            apply_acls(admin, acls)
        assert "administrator" in str(raised.value)
        assert "PARTITA_KAFKA_CONFIG_OPERATOR" in str(raised.value)


def test_apply_on_a_cluster_without_an_authorizer_says_so() -> None:
    with pytest.raises(AclError, match="no authorizer"):
        apply_acls(
            FakeAdmin(describe_error=KafkaError.SECURITY_DISABLED), acls_of(KafkaRole.CLIENT)
        )


# -- the command ------------------------------------------------------------------------------


@pytest.fixture
def plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("PARTITA_") or name == "KAFKA_BOOTSTRAP_SERVERS":
            monkeypatch.delenv(name)


@pytest.mark.usefixtures("plain_env")
def test_the_command_prints_a_table_or_the_kafka_acls_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["acls", "--role", "job-worker", "--principal", "User:billing", "--namespace", NS]
    assert cli.main([*args, "--job-type", "charge-card"]) == 0
    table = capsys.readouterr().out
    assert "6 ACLs for User:billing as job-worker in namespace shop" in table
    assert f"{NS}.jobs.charge-card" in table and f"{NS}.workers.charge-card." in table
    assert cli.main([*args, "--format", "kafka-acls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# ")
    expected = acls_of(KafkaRole.JOB_WORKER)
    parsed = _parse_kafka_acls(lines[1:])
    assert [p[2:] for p in parsed] == [
        (a.resource, a.pattern, a.name, a.operation) for a in expected
    ]
    assert {p[0] for p in parsed} == {"User:billing"}
    assert all("--bootstrap-server 127.0.0.1:9092 " in line for line in lines[1:])


@pytest.mark.usefixtures("plain_env")
def test_the_command_refuses_a_bad_principal(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["acls", "--role", "engine", "--principal", "engine"]) == 1
    assert "User:NAME" in capsys.readouterr().err
