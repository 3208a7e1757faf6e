"""`muster produce`: write records from arguments or stdin lines."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn
from rich.table import Table

from muster.cli import kafka
from muster.cli._common import (
    BOOTSTRAP_DEFAULT,
    REQUEST_TIMEOUT_DEFAULT,
    BootstrapOption,
    CommandConfigOption,
    PropertyOption,
    RequestTimeoutOption,
    broker_errors,
    client_props,
    err,
    fail,
    out,
    parse_pairs,
    print_table,
)

# Up to this many records, every record's offset is listed; above it, a
# per-partition summary.
DETAIL_LIMIT = 20


@dataclass
class _Tally:
    sent: int = 0
    keys: list[bytes | None] = field(default_factory=list)
    delivered: dict[int, tuple[int, kafka.Delivery]] = field(default_factory=dict)
    failures: list[tuple[int, kafka.KafkaCliError]] = field(default_factory=list)

    def callback(self, index: int) -> kafka.DeliveryCallback:
        def done(delivery: kafka.Delivery | None, error: kafka.KafkaCliError | None) -> None:
            if delivery is not None:
                self.delivered[index] = (index, delivery)
            elif error is not None:
                self.failures.append((index, error))

        return done


def _stdin_lines() -> Iterator[bytes]:
    """Lines of stdin as bytes (values need not be UTF-8), without line endings."""
    stream = getattr(sys.stdin, "buffer", None)
    lines = stream if stream is not None else (line.encode() for line in sys.stdin)
    for line in lines:
        if line.endswith(b"\n"):
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        yield line


def _arg_bytes(text: str) -> bytes:
    # Arguments arrive decoded with surrogateescape; this restores their bytes.
    return os.fsencode(text)


def produce(
    topic: Annotated[
        str, typer.Argument(metavar="TOPIC", help="Topic to write to.", show_default=False)
    ],
    values: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="VALUE",
            help="Record values; without any, each line of stdin is one record.",
            show_default=False,
        ),
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", "-k", help="Key of every record (default: no key).")
    ] = None,
    key_separator: Annotated[
        str | None,
        typer.Option(
            "--key-separator",
            metavar="SEP",
            help="Split each value at the first SEP into key and value (like "
            "kafka-console-producer's parse.key).",
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition", "-p", min=0, help="Partition to write to (default: the partitioner)."
        ),
    ] = None,
    headers: Annotated[
        list[str] | None,
        typer.Option(
            "--header", "-H", metavar="KEY=VALUE", help="Header on every record; repeatable."
        ),
    ] = None,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Produce records to a topic and show the offsets they were written at."""
    if key is not None and key_separator is not None:
        raise typer.BadParameter("use either --key or --key-separator", param_hint="--key")
    if key_separator == "":
        raise typer.BadParameter("must not be empty", param_hint="--key-separator")
    header_pairs = [(k, _arg_bytes(v)) for k, v in parse_pairs(headers or (), "--header")]
    source = (_arg_bytes(v) for v in values) if values else _stdin_lines()
    key_bytes = None if key is None else _arg_bytes(key)
    separator = None if key_separator is None else _arg_bytes(key_separator)
    total = len(values) if values else None
    tally = _Tally()

    problem: str | None = None
    interrupted = False
    with broker_errors():
        console = err()
        progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        with progress:
            task = progress.add_task(f"producing to {escape(topic)}", total=total)
            producer = kafka.Producer(
                bootstrap, request_timeout, client_props(command_config, properties)
            )
            try:
                for value in source:
                    record_key = key_bytes
                    if separator is not None:
                        record_key, sep, value = value.partition(separator)
                        if not sep:
                            problem = (
                                f"record {tally.sent + 1} has no key separator "
                                f"{key_separator!r}; stopped there"
                            )
                            break
                    tally.keys.append(record_key)
                    producer.send(
                        topic,
                        value,
                        record_key,
                        partition,
                        header_pairs,
                        on_delivery=tally.callback(tally.sent),
                    )
                    tally.sent += 1
                    progress.update(task, completed=len(tally.delivered))
                    if tally.failures:
                        break
            except KeyboardInterrupt:
                interrupted = True  # deliver what was already sent, then stop
            progress.update(task, description=f"waiting for {escape(topic)}")
            undelivered = producer.flush()
            producer.close()
            progress.update(task, completed=len(tally.delivered))

    _report(topic, tally)
    if tally.failures:
        index, first = min(tally.failures, key=lambda f: f[0])
        if first.name.startswith(("UNKNOWN_TOPIC", "_UNKNOWN_TOPIC")):
            fail(
                f"topic {topic!r} does not exist and the broker does not create topics "
                f"on produce; create it first: muster topics create {topic} -b {bootstrap}"
            )
        more = f" ({len(tally.failures)} records failed)" if len(tally.failures) > 1 else ""
        fail(f"{first.name}: record {index + 1} to {topic!r}: {first.message}{more}")
    if undelivered:
        fail(f"REQUEST_TIMED_OUT: {undelivered} records not acknowledged in time")
    if problem:
        fail(problem, code=2)
    if interrupted:
        err().print("interrupted")
        raise typer.Exit(130)


def _shown(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _records(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def _report(topic: str, tally: _Tally) -> None:
    console = out()
    if not tally.delivered:
        if tally.sent == 0:
            err().print("No records to produce.")
        return
    if tally.sent <= DETAIL_LIMIT:
        table = Table(
            title=f"Wrote {_records(len(tally.delivered))} to {escape(topic)}", title_justify="left"
        )
        table.add_column("#", justify="right")
        table.add_column("Partition", justify="right")
        table.add_column("Offset", justify="right")
        table.add_column("Key", overflow="fold")
        for index, delivery in sorted(tally.delivered.values(), key=lambda d: d[0]):
            record_key = tally.keys[index]
            table.add_row(
                str(index + 1),
                str(delivery.partition),
                str(delivery.offset),
                "[dim]null[/]" if record_key is None else escape(_shown(record_key)),
            )
    else:
        ranges: dict[int, list[int]] = {}
        for _, delivery in tally.delivered.values():
            ranges.setdefault(delivery.partition, []).append(delivery.offset)
        table = Table(
            title=f"Wrote {_records(len(tally.delivered))} to {escape(topic)}", title_justify="left"
        )
        table.add_column("Partition", justify="right")
        table.add_column("Records", justify="right")
        table.add_column("First offset", justify="right")
        table.add_column("Last offset", justify="right")
        for part, offsets in sorted(ranges.items()):
            table.add_row(str(part), str(len(offsets)), str(min(offsets)), str(max(offsets)))
    print_table(table, console)


def register(app: typer.Typer) -> None:
    app.command("produce")(produce)
