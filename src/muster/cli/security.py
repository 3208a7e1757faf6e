"""`muster acls add|list|remove` and `muster users add|list|remove`, with
kafka-acls.sh's and kafka-configs.sh's vocabulary.

Both talk to a broker through muster's own admin client; a secured broker
is reached with `--command-config FILE` and `-X key=value` (client properties,
as Kafka's tools take them: security.protocol, sasl.mechanism, sasl.username,
sasl.password, ssl.ca.location, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from muster.cli import kafka
from muster.cli._common import (
    BOOTSTRAP_DEFAULT,
    REQUEST_TIMEOUT_DEFAULT,
    BootstrapOption,
    CommandConfigOption,
    JsonOption,
    PropertyOption,
    RequestTimeoutOption,
    broker_errors,
    client_props,
    fail,
    out,
    print_json,
)
from muster.cli.kafka import _call
from muster.client import admin as mc_admin
from muster.client.admin_security import (
    OPERATIONS,
    PATTERN_TYPES,
    SCRAM_MECHANISMS,
    AclBinding,
    enum_id,
    enum_name,
)

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
    bootstrap: str,
    timeout: float,
    command_config: Path | None,
    properties: list[str] | None,
) -> mc_admin.Admin:
    with broker_errors():
        return kafka.Admin(bootstrap, timeout, client_props(command_config, properties)).client


def _enum(table: dict[str, int], text: str, what: str) -> str:
    try:
        return enum_name(table, enum_id(table, text, what))
    except ValueError as exc:
        fail(str(exc))


def _resources(
    topic: list[str] | None, group: list[str] | None, txn: list[str] | None, cluster: bool
) -> list[tuple[str, str | None]]:
    out_: list[tuple[str, str | None]] = []
    out_ += [("TOPIC", n) for n in topic or ()]
    out_ += [("GROUP", n) for n in group or ()]
    out_ += [("TRANSACTIONAL_ID", n) for n in txn or ()]
    if cluster:
        out_.append(("CLUSTER", "kafka-cluster"))
    return out_


def _bindings(
    resources: list[tuple[str, str | None]],
    pattern: str,
    allow: list[str] | None,
    deny: list[str] | None,
    allow_host: list[str] | None,
    deny_host: list[str] | None,
    operations: list[str],
) -> list[AclBinding]:
    out_ = []
    for perm, principals, hosts in (
        ("ALLOW", allow or [], allow_host or ["*"]),
        ("DENY", deny or [], deny_host or ["*"]),
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
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Add ACLs: every principal x host x operation x resource given."""
    ops = [_enum(OPERATIONS, o, "operation") for o in operation or ["All"]]
    pattern = _enum(PATTERN_TYPES, resource_pattern_type, "pattern type")
    resources = _resources(topic, group, transactional_id, cluster)
    if not resources or not (allow_principal or deny_principal):
        fail("give a resource (--topic, --group, --transactional-id, --cluster) and a principal")
    bindings = _bindings(
        resources, pattern, allow_principal, deny_principal, allow_host, deny_host, ops
    )
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    with broker_errors():
        _call("add ACL", admin.create_acls, bindings)
        for binding in bindings:
            out().print(f"added {escape(_describe(binding))}")


def _filter(
    topic: list[str] | None,
    group: list[str] | None,
    txn: list[str] | None,
    cluster: bool,
    pattern: str,
    principal: str | None,
    operation: list[str] | None,
) -> list[AclBinding]:
    resources = _resources(topic, group, txn, cluster) or [("ANY", None)]
    ptype = _enum(PATTERN_TYPES, pattern, "pattern type")
    ops = [_enum(OPERATIONS, o, "operation") for o in operation or ["Any"]]
    return [
        AclBinding(rtype, name, ptype, principal, None, op, "ANY")
        for rtype, name in resources
        for op in ops
    ]


def _describe(b: AclBinding) -> str:
    return (
        f"{b.permission} {b.principal} from {b.host} {b.operation} on "
        f"{b.resource_type} {b.pattern_type.lower()} {b.name!r}"
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
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """List ACLs (all, or those matching the resources and principal given)."""
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    table = Table("permission", "principal", "host", "operation", "resource", "pattern", "name")
    found: list[AclBinding] = []
    with broker_errors():
        for f in _filter(
            topic, group, transactional_id, cluster, resource_pattern_type, principal, None
        ):
            for b in _call("list ACLs", admin.describe_acls, f):
                found.append(b)
                table.add_row(
                    b.permission,
                    b.principal,
                    b.host,
                    b.operation,
                    b.resource_type,
                    b.pattern_type.lower(),
                    b.name,
                )
    if as_json:
        print_json(found)
        return
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
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Remove the ACLs matching the resources, principal and operations given."""
    if not (topic or group or transactional_id or cluster or principal):
        fail("give a resource or --principal (removing every ACL is not done by accident)")
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    filters = _filter(
        topic, group, transactional_id, cluster, resource_pattern_type, principal, operation
    )
    with broker_errors():
        for b in _call("remove ACLs", admin.delete_acls, filters):
            out().print(f"removed {escape(_describe(b))}")


Mechanism = Annotated[str, typer.Option("--mechanism", help="SCRAM-SHA-256 or SCRAM-SHA-512")]


@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    password: Annotated[str, typer.Option(prompt=True, hide_input=True)],
    mechanism: Mechanism = "SCRAM-SHA-512",
    iterations: Annotated[int, typer.Option(min=4096, max=16384)] = 8192,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Create or update a SCRAM user (the broker keeps a salted hash only)."""
    mech = _enum(SCRAM_MECHANISMS, mechanism, "mechanism")
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    with broker_errors():
        _call(f"add user {name}", admin.upsert_scram_user, name, mech, password, iterations)
    out().print(f"user {escape(name)}: {mechanism}, {iterations} iterations")


@users_app.command("list")
def users_list(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """List SCRAM users and their mechanisms."""
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    table = Table("user", "mechanism", "iterations")
    with broker_errors():
        described = _call("list users", admin.describe_scram_users)
        if as_json:
            print_json(
                [
                    {"user": u, "mechanism": m, "iterations": i}
                    for u, creds in sorted(described.items())
                    for m, i in creds
                ]
            )
            return
        for user, credentials in sorted(described.items()):
            for mech, iterations in credentials:
                table.add_row(user, mech, str(iterations))
    out().print(table)


@users_app.command("remove")
def users_remove(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    mechanism: Mechanism = "SCRAM-SHA-512",
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Remove a user's SCRAM credential for one mechanism."""
    mech = _enum(SCRAM_MECHANISMS, mechanism, "mechanism")
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    with broker_errors():
        _call(f"remove user {name}", admin.delete_scram_user, name, mech)
    out().print(f"removed {escape(name)} ({mechanism})")
