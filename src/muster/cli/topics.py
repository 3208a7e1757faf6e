"""`muster topics create|list|describe|delete`."""

from __future__ import annotations

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
    err,
    out,
    parse_pairs,
    print_json,
    print_table,
)

app = typer.Typer(
    help="Create, list, describe and delete topics.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

TopicArg = Annotated[str, typer.Argument(metavar="NAME", help="Topic name.", show_default=False)]


@app.command("create")
def create(
    name: TopicArg,
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", min=1, help="Number of partitions.")
    ] = 1,
    replication_factor: Annotated[
        int, typer.Option("--replication-factor", min=1, help="Copies of each partition.")
    ] = 1,
    configs: Annotated[
        list[str] | None,
        typer.Option(
            "--config",
            "-c",
            metavar="KEY=VALUE",
            help="Topic config, repeatable (e.g. cleanup.policy=compact).",
        ),
    ] = None,
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="Succeed if the topic already exists.")
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Create a topic."""
    settings = dict(parse_pairs(configs or (), "--config"))
    with broker_errors():
        admin = kafka.Admin(bootstrap, request_timeout, client_props(command_config, properties))
        try:
            admin.create_topic(name, partitions, replication_factor, settings)
        except kafka.KafkaCliError as exc:
            if if_not_exists and exc.name == "TOPIC_ALREADY_EXISTS":
                err().print(f"Topic [bold]{escape(name)}[/] already exists.")
                return
            raise
    noun = "partition" if partitions == 1 else "partitions"
    out().print(f"Created topic [bold]{escape(name)}[/] with {partitions} {noun}.")


@app.command("list")
def list_(
    exclude_internal: Annotated[
        bool,
        typer.Option("--exclude-internal", help="Hide internal topics (names starting __)."),
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """List topics and their partition counts."""
    with broker_errors():
        topics = kafka.Admin(
            bootstrap, request_timeout, client_props(command_config, properties)
        ).list_topics()
    if exclude_internal:
        topics = [t for t in topics if not t.internal]
    if as_json:
        print_json(topics)
        return
    if not topics:
        err().print("No topics.")
        return
    table = Table(title=f"Topics on {bootstrap}", title_justify="left")
    table.add_column("Topic", style="bold", overflow="fold")
    table.add_column("Partitions", justify="right")
    table.add_column("Status")
    for topic in topics:
        table.add_row(escape(topic.name), str(len(topic.partitions)), topic.error or "ok")
    print_table(table)


def _ids(nodes: tuple[int, ...]) -> str:
    return ",".join(str(n) for n in nodes) or "-"


def _num(value: int | None) -> str:
    return "?" if value is None else str(value)


@app.command("describe")
def describe(
    name: TopicArg,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a topic's partitions (leader, replicas, log-start/end offsets) and configs."""
    with broker_errors():
        desc = kafka.Admin(
            bootstrap, request_timeout, client_props(command_config, properties)
        ).describe_topic(name)
    if as_json:
        print_json(desc)
        return
    console = out()
    parts = Table(title=f"Topic {escape(name)}", title_justify="left")
    for column in ("Partition", "Leader", "Replicas", "ISR", "Log start", "Log end", "Messages"):
        parts.add_column(column, justify="right")
    rows = []
    for p in desc.topic.partitions:
        offsets = desc.offsets.get(p.partition, kafka.Offsets(None, None))
        count = (
            offsets.log_end - offsets.log_start
            if offsets.log_start is not None and offsets.log_end is not None
            else None
        )
        row = [
            str(p.partition),
            str(p.leader),
            _ids(p.replicas),
            _ids(p.isr),
            _num(offsets.log_start),
            _num(offsets.log_end),
            _num(count),
        ]
        rows.append((row, p.error or offsets.error))
    if any(status for _, status in rows):  # a status column only when something is wrong
        parts.add_column("Status", overflow="fold")
        for row, status in rows:
            parts.add_row(*row, escape(status or "ok"))
    else:
        for row, _ in rows:
            parts.add_row(*row)
    print_table(parts, console)

    if desc.configs is not None:
        if desc.configs:
            configs = Table(title="Configs", title_justify="left")
            configs.add_column("Name", style="bold")
            configs.add_column("Value", overflow="fold")
            configs.add_column("Source")
            for entry in desc.configs:
                value = "(sensitive)" if entry.sensitive else entry.value
                configs.add_row(
                    escape(entry.name),
                    escape("" if value is None else value),
                    entry.source + (" (default)" if entry.is_default else ""),
                    style="dim" if entry.is_default else None,
                )
            print_table(configs, console)
        else:
            console.print("Configs: none reported by the broker.")
    for note in desc.notes:
        err().print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)


@app.command("delete")
def delete(
    name: TopicArg,
    if_exists: Annotated[
        bool, typer.Option("--if-exists", help="Succeed if the topic does not exist.")
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Delete a topic and all its data."""
    with broker_errors():
        try:
            kafka.Admin(
                bootstrap, request_timeout, client_props(command_config, properties)
            ).delete_topic(name)
        except kafka.KafkaCliError as exc:
            if if_exists and exc.name.startswith("UNKNOWN_TOPIC"):
                err().print(f"Topic [bold]{escape(name)}[/] does not exist.")
                return
            raise
    out().print(f"Deleted topic [bold]{escape(name)}[/].")
