"""Shared pieces of the `muster` commands: consoles, options, error reporting."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from muster.cli.kafka import DEFAULT_BOOTSTRAP, DEFAULT_TIMEOUT, KafkaCliError

BootstrapOption = Annotated[
    str,
    typer.Option(
        "--bootstrap-server",
        "-b",
        envvar="MUSTER_BOOTSTRAP_SERVER",
        metavar="HOST:PORT",
        help="Broker to talk to.",
    ),
]
BOOTSTRAP_DEFAULT = DEFAULT_BOOTSTRAP

RequestTimeoutOption = Annotated[
    float,
    typer.Option(
        "--request-timeout", min=0.1, metavar="SECONDS", help="How long to wait for the broker."
    ),
]
REQUEST_TIMEOUT_DEFAULT = DEFAULT_TIMEOUT

# Every command that talks to a broker takes the client properties of Kafka's
# tools (--command-config FILE) and of librdkafka's (-X key=value): the
# security ones (security.protocol, sasl.*, ssl.*) reach a secured broker.
CommandConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        help="Client properties file for a secured broker (security.protocol, sasl.*, ssl.*).",
    ),
]
PropertyOption = Annotated[
    list[str] | None,
    typer.Option(
        "-X",
        "--property",
        metavar="KEY=VALUE",
        help="One client property (repeatable; over --command-config), e.g. "
        "-X security.protocol=SASL_SSL.",
    ),
]


def client_props(command_config: Path | None, properties: list[str] | None) -> dict[str, str]:
    """The client properties of --command-config, then -X (later wins).
    Unknown names are treated as librdkafka and Kafka's tools do: an unknown
    -X name is refused (as kcat's), one in a file is warned about and skipped
    (as Kafka's tools log it); both name the closest known client property."""
    from muster.client.property_names import CLIENT_PROPERTIES
    from muster.config import did_you_mean, parse_properties_file

    props: dict[str, str] = {}
    if command_config is not None:
        try:
            from_file = parse_properties_file(command_config)
        except (OSError, ValueError) as exc:
            fail(f"--command-config {command_config}: {exc}")
        for name in [n for n in from_file if n not in CLIENT_PROPERTIES]:
            err().print(
                f"[yellow]warning:[/] --command-config {escape(str(command_config))}: "
                f"unknown client property {escape(repr(name))}"
                f"{escape(did_you_mean(name, CLIENT_PROPERTIES))}, ignored",
                soft_wrap=True,
            )
            del from_file[name]
        props.update(from_file)
    for name, value in parse_pairs(properties or [], "-X"):
        if name not in CLIENT_PROPERTIES:
            fail(
                f"-X {name}: unknown client property{did_you_mean(name, CLIENT_PROPERTIES)} "
                "(librdkafka's and Kafka's client property names)"
            )
        props[name] = value
    return props


JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON (one document) instead of tables.")
]


def print_json(data: Any) -> None:
    """One JSON document on stdout; dataclasses become objects."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    typer.echo(json.dumps(plain(data), indent=2))


# Piped output is not cut at 80 columns: a table takes the width it needs
# (rich would otherwise assume 80 when stdout is not a terminal).
PIPED_WIDTH = 10_000


def out() -> Console:
    """Console on stdout (created per call so test runners can swap streams):
    the terminal's width, or unclipped when piped."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPED_WIDTH
    return console


def print_table(table: Table, console: Console | None = None) -> None:
    """Prints TABLE with its title on a line of its own. A title names a topic or
    group, and rich wraps a title at the table's width (a 140-character topic
    name over two lines even when piped); on its own line it is never cut."""
    console = console or out()
    if table.title is not None:
        console.print(table.title, style="table.title", soft_wrap=True)
        table.title = None
    console.print(table)


def err() -> Console:
    return Console(stderr=True, highlight=False)


def fail(message: str, code: int = 1) -> NoReturn:
    err().print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def require_spark(command: str) -> None:
    """One line naming the extra when a Spark command runs in an install without it."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        fail(
            f"`muster {command}` needs Spark, which this installation lacks: "
            "pip install 'muster[spark]'"
        )


@contextmanager
def broker_errors() -> Iterator[None]:
    """Turns client/broker errors into one line on stderr and exit status 1."""
    try:
        yield
    except KafkaCliError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        err().print("interrupted")
        raise typer.Exit(130) from None


@contextmanager
def events_topic_errors() -> Iterator[None]:
    """Names the likely cause when the broker has no rebalance-events topic."""
    from muster.coordinator.topics import EVENTS_TOPIC

    try:
        yield
    except KafkaCliError as exc:
        if exc.name.startswith("UNKNOWN_TOPIC"):
            fail(
                f"the broker has no {EVENTS_TOPIC} topic: it does not record rebalance "
                "events (is it muster?)"
            )
        raise


def parse_pairs(items: Iterable[str], option: str) -> list[tuple[str, str]]:
    """Parses repeated `key=value` options, keeping order and duplicates."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint=option)
        pairs.append((key.strip(), value))
    return pairs
