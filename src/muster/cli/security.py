"""`muster acls add|list|remove` and `muster users add|list|remove`, with
kafka-acls.sh's and kafka-configs.sh's vocabulary.

Both talk to a broker through confluent-kafka's AdminClient; a secured broker
is reached with `--command-config FILE` (client properties, as Kafka's tools
take them: security.protocol, sasl.mechanism, sasl.username, sasl.password,
ssl.ca.location, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from rich.markup import escape
from rich.table import Table

from muster.cli import kafka
from muster.cli._common import (
    BOOTSTRAP_DEFAULT,
    REQUEST_TIMEOUT_DEFAULT,
    BootstrapOption,
    RequestTimeoutOption,
    broker_errors,
    fail,
    out,
)
from muster.cli.kafka import KafkaCliError
from muster.config import parse_properties_file

acls_app = typer.Typer(
    help="Add, list and remove ACLs (kafka-acls.sh).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
users_app = typer.Typer(
    help="Add, list and remove SCRAM users (kafka-configs.sh --entity-type users).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        help="Client properties for a secured broker (security.protocol, sasl.*, ssl.*).",
    ),
]
Principals = Annotated[list[str] | None, typer.Option(metavar="User:NAME")]
Hosts = Annotated[list[str] | None, typer.Option(metavar="HOST")]
Operations = Annotated[
    list[str] | None,
    typer.Option(
        "--operation",
        metavar="OP",
        help="Read, Write, Create, Delete, Alter, "
        "Describe, DescribeConfigs, AlterConfigs, IdempotentWrite, ClusterAction, All",
    ),
]
Names = Annotated[list[str] | None, typer.Option(metavar="NAME")]
PatternOption = Annotated[
    str, typer.Option("--resource-pattern-type", help="literal, prefixed (list/remove: any, match)")
]


def _admin(
    bootstrap: str, timeout: float, command_config: Path | None
) -> tuple[AdminClient, float]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "muster-cli",
        "logger": kafka._LOG,
    }
    try:
        if command_config is not None:
            config.update(parse_properties_file(command_config))
        return AdminClient(config), timeout
    except (ValueError, KafkaException) as exc:  # a bad property in the file
        fail(f"--command-config {command_config}: {KafkaCliError.wrap(exc).message}")


def _enum(kind: Any, text: str, what: str) -> Any:
    key = text.replace("-", "").replace("_", "").upper()
    for member in kind:
        if member.name.replace("_", "") == key:
            return member
    fail(f"unknown {what} {text!r}")


def _resources(
    topic: list[str] | None, group: list[str] | None, txn: list[str] | None, cluster: bool
) -> list[tuple[ResourceType, str | None]]:
    out_: list[tuple[ResourceType, str | None]] = []
    out_ += [(ResourceType.TOPIC, n) for n in topic or ()]
    out_ += [(ResourceType.GROUP, n) for n in group or ()]
    out_ += [(ResourceType.TRANSACTIONAL_ID, n) for n in txn or ()]
    if cluster:
        out_.append((ResourceType.BROKER, "kafka-cluster"))
    return out_


def _bindings(
    resources: list[tuple[ResourceType, str | None]],
    pattern: ResourcePatternType,
    allow: list[str] | None,
    deny: list[str] | None,
    allow_host: list[str] | None,
    deny_host: list[str] | None,
    operations: list[AclOperation],
) -> list[AclBinding]:
    out_ = []
    for perm, principals, hosts in (
        (AclPermissionType.ALLOW, allow or [], allow_host or ["*"]),
        (AclPermissionType.DENY, deny or [], deny_host or ["*"]),
    ):
        for rtype, name in resources:
            for principal in principals:
                for host in hosts:
                    for op in operations:
                        out_.append(AclBinding(rtype, name, pattern, principal, host, op, perm))
    return out_


@acls_app.command("add")
def acls_add(
    allow_principal: Principals = None,
    deny_principal: Principals = None,
    allow_host: Hosts = None,
    deny_host: Hosts = None,
    operation: Operations = None,
    topic: Names = None,
    group: Names = None,
    transactional_id: Names = None,
    cluster: Annotated[bool, typer.Option("--cluster")] = False,
    resource_pattern_type: PatternOption = "literal",
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """Add ACLs: every principal x host x operation x resource given."""
    ops = [_enum(AclOperation, o, "operation") for o in operation or ["All"]]
    pattern = _enum(ResourcePatternType, resource_pattern_type, "pattern type")
    resources = _resources(topic, group, transactional_id, cluster)
    if not resources or not (allow_principal or deny_principal):
        fail("give a resource (--topic, --group, --transactional-id, --cluster) and a principal")
    bindings = _bindings(
        resources, pattern, allow_principal, deny_principal, allow_host, deny_host, ops
    )
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    with broker_errors():
        for binding, future in admin.create_acls(bindings, request_timeout=timeout).items():
            kafka._result(future, timeout, "add ACL")
            out().print(f"added {escape(_describe(binding))}")


def _filter(
    topic: list[str] | None,
    group: list[str] | None,
    txn: list[str] | None,
    cluster: bool,
    pattern: str,
    principal: str | None,
    operation: list[str] | None,
) -> list[AclBindingFilter]:
    resources = _resources(topic, group, txn, cluster) or [(ResourceType.ANY, None)]
    ptype = _enum(ResourcePatternType, pattern, "pattern type")
    ops = [_enum(AclOperation, o, "operation") for o in operation or ["Any"]]
    return [
        AclBindingFilter(rtype, name, ptype, principal, None, op, AclPermissionType.ANY)
        for rtype, name in resources
        for op in ops
    ]


def _describe(b: AclBinding) -> str:
    return (
        f"{b.permission_type.name} {b.principal} from {b.host} {b.operation.name} on "
        f"{b.restype.name} {b.resource_pattern_type.name.lower()} {b.name!r}"
    )


@acls_app.command("list")
def acls_list(
    topic: Names = None,
    group: Names = None,
    transactional_id: Names = None,
    cluster: Annotated[bool, typer.Option("--cluster")] = False,
    principal: Annotated[str | None, typer.Option(metavar="User:NAME")] = None,
    resource_pattern_type: PatternOption = "any",
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """List ACLs (all, or those matching the resources and principal given)."""
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    table = Table("permission", "principal", "host", "operation", "resource", "pattern", "name")
    with broker_errors():
        for f in _filter(
            topic, group, transactional_id, cluster, resource_pattern_type, principal, None
        ):
            for b in kafka._result(
                admin.describe_acls(f, request_timeout=timeout), timeout, "list ACLs"
            ):
                table.add_row(
                    b.permission_type.name,
                    b.principal,
                    b.host,
                    b.operation.name,
                    b.restype.name,
                    b.resource_pattern_type.name.lower(),
                    b.name,
                )
    out().print(table)


@acls_app.command("remove")
def acls_remove(
    topic: Names = None,
    group: Names = None,
    transactional_id: Names = None,
    cluster: Annotated[bool, typer.Option("--cluster")] = False,
    principal: Annotated[str | None, typer.Option(metavar="User:NAME")] = None,
    operation: Operations = None,
    resource_pattern_type: PatternOption = "literal",
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """Remove the ACLs matching the resources, principal and operations given."""
    if not (topic or group or transactional_id or cluster or principal):
        fail("give a resource or --principal (removing every ACL is not done by accident)")
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    filters = _filter(
        topic, group, transactional_id, cluster, resource_pattern_type, principal, operation
    )
    with broker_errors():
        for future in admin.delete_acls(filters, request_timeout=timeout).values():
            for b in kafka._result(future, timeout, "remove ACLs"):
                out().print(f"removed {escape(_describe(b))}")


Mechanism = Annotated[str, typer.Option("--mechanism", help="SCRAM-SHA-256 or SCRAM-SHA-512")]


@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    password: Annotated[str, typer.Option(prompt=True, hide_input=True)],
    mechanism: Mechanism = "SCRAM-SHA-512",
    iterations: Annotated[int, typer.Option(min=4096, max=16384)] = 8192,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """Create or update a SCRAM user (the broker keeps a salted hash only)."""
    mech = _enum(ScramMechanism, mechanism, "mechanism")
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(mech, iterations), password.encode()
    )
    with broker_errors():
        for future in admin.alter_user_scram_credentials([upsert]).values():
            kafka._result(future, timeout, f"add user {name}")
    out().print(f"user {escape(name)}: {mechanism}, {iterations} iterations")


@users_app.command("list")
def users_list(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """List SCRAM users and their mechanisms."""
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    table = Table("user", "mechanism", "iterations")
    with broker_errors():
        described = kafka._result(admin.describe_user_scram_credentials(), timeout, "list users")
        for user, desc in sorted(described.items()):
            for info in desc.scram_credential_infos:
                table.add_row(user, info.mechanism.name.replace("_", "-"), str(info.iterations))
    out().print(table)


@users_app.command("remove")
def users_remove(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    mechanism: Mechanism = "SCRAM-SHA-512",
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    command_config: CommandConfig = None,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
) -> None:
    """Remove a user's SCRAM credential for one mechanism."""
    mech = _enum(ScramMechanism, mechanism, "mechanism")
    admin, timeout = _admin(bootstrap, request_timeout, command_config)
    deletion = UserScramCredentialDeletion(name, mech)
    with broker_errors():
        for future in admin.alter_user_scram_credentials([deletion]).values():
            kafka._result(future, timeout, f"remove user {name}")
    out().print(f"removed {escape(name)} ({mechanism})")
