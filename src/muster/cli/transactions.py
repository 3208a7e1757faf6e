"""`muster transactions list|describe`, as kafka-transactions.sh lists and
describes them (same columns), through muster's own admin client."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from muster.cli._common import (
    BOOTSTRAP_DEFAULT,
    REQUEST_TIMEOUT_DEFAULT,
    BootstrapOption,
    CommandConfigOption,
    JsonOption,
    PropertyOption,
    RequestTimeoutOption,
    broker_errors,
    out,
    print_json,
)
from muster.cli.kafka import _call
from muster.cli.security import _admin

app = typer.Typer(
    help="List and describe transactions (kafka-transactions.sh list|describe).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)


@app.command("list")
def list_(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every transactional id the brokers coordinate, with its producer and state."""
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    with broker_errors():
        listed = _call("list transactions", admin.list_transactions)
    if as_json:
        print_json([t.__dict__ for t in listed])
        return
    table = Table("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
    for t in listed:
        table.add_row(t.transactional_id, str(t.coordinator), str(t.producer_id), t.state)
    out().print(table)


@app.command("describe")
def describe(
    transactional_id: Annotated[str, typer.Option("--transactional-id", metavar="ID")],
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """One transaction as its coordinator tells it: producer, state, timeout,
    when it started and the partitions in it."""
    admin = _admin(bootstrap, request_timeout, command_config, properties)
    with broker_errors():
        d = _call(
            f"describe transaction {transactional_id}", admin.describe_transaction, transactional_id
        )
    if as_json:
        print_json({**d.__dict__, "partitions": [f"{t}-{p}" for t, p in d.partitions]})
        return
    table = Table(
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "CurrentTransactionTimeoutMs",
        "TransactionStartTimeMs",
        "TopicPartitions",
    )
    table.add_row(
        str(d.coordinator),
        d.transactional_id,
        str(d.producer_id),
        str(d.producer_epoch),
        d.state,
        str(d.timeout_ms),
        "None" if d.start_ms < 0 else str(d.start_ms),
        ",".join(f"{t}-{p}" for t, p in d.partitions),
    )
    out().print(table)
