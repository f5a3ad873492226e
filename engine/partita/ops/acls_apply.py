"""Creating the ACLs of `partita.ops.acls` through Kafka's admin API (`partita acls --apply`).

Idempotent: bindings that exist are left alone and reported as such. It takes a cluster
administrator's principal (Describe and Alter on the cluster); any other gets an AclError that
says whom to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from partita.ops.acls import Acl, AclError, Resource


def apply_acls(
    admin: AdminClient, acls: Sequence[Acl], timeout: float = 30.0
) -> list[tuple[Acl, bool]]:
    """Create the bindings of `acls` that do not exist yet through `admin` (an AdminClient);
    each binding with True when it was created, False when it was there already. Idempotent.
    AclError when the cluster has no authorizer or the admin's principal may not list or
    create ACLs (that takes Describe and Alter on the cluster)."""
    any_name: Any = None  # a filter's None matches every name and host (the stubs say str)
    existing: set[tuple[Any, ...]] = set()
    for principal in sorted({acl.principal for acl in acls}):
        wanted = AclBindingFilter(
            ResourceType.ANY,
            any_name,
            ResourcePatternType.ANY,
            principal,
            any_name,
            AclOperation.ANY,
            AclPermissionType.ALLOW,
        )
        try:
            found = admin.describe_acls(wanted, request_timeout=timeout).result()
        except KafkaException as exc:
            raise _acl_error(exc.args[0], "list the ACLs of " + principal) from None
        existing |= {_key(binding) for binding in found}
    missing = [acl for acl in acls if _key(_binding(acl)) not in existing]
    if missing:
        futures = admin.create_acls([_binding(acl) for acl in missing], request_timeout=timeout)
        for future in futures.values():
            try:
                future.result()
            except KafkaException as exc:
                raise _acl_error(exc.args[0], "create ACLs") from None
    created = set(missing)
    return [(acl, acl in created) for acl in acls]


def _binding(acl: Acl) -> Any:
    kind = {
        Resource.TOPIC: ResourceType.TOPIC,
        Resource.GROUP: ResourceType.GROUP,
        Resource.TRANSACTIONAL_ID: ResourceType.TRANSACTIONAL_ID,
        Resource.CLUSTER: ResourceType.BROKER,
    }[acl.resource]
    return AclBinding(
        kind,
        "kafka-cluster" if acl.resource is Resource.CLUSTER else acl.name,
        ResourcePatternType[acl.pattern.name],
        acl.principal,
        acl.host,
        AclOperation[acl.operation.name],
        AclPermissionType.ALLOW,
    )


def _key(binding: Any) -> tuple[Any, ...]:
    return (
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def _acl_error(error: Any, what: str) -> AclError:
    code = error.code() if isinstance(error, KafkaError) else None
    if code == KafkaError.SECURITY_DISABLED:
        return AclError(
            f"the cluster has no authorizer, so it keeps no ACLs and enforces none ({what}:"
            f" {error.str()}); set authorizer.class.name on the brokers first"
        )
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
        return AclError(
            f"Kafka refused to {what}: the principal of the operator's Kafka config may not"
            " manage ACLs (that takes Alter and Describe on the cluster, a cluster"
            " administrator's right). Point PARTITA_KAFKA_CONFIG_OPERATOR (or --kafka-config)"
            " at an administrator's properties file, or give the `--format kafka-acls` commands"
            " to the cluster's administrator"
        )
    reason = error.str() if isinstance(error, KafkaError) else str(error)
    return AclError(f"could not {what}: {reason}")
