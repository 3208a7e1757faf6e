"""Shared pieces of the `muster` commands: consoles, options, error reporting."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

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


def out() -> Console:
    """Console on stdout (created per call so test runners can swap streams)."""
    return Console(highlight=False)


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
