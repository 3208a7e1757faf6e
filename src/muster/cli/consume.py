"""`muster consume`: read records in assign mode (no consumer group)."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
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
    print_table,
)


def parse_offset(value: str) -> kafka.StartOffset:
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return text  # type: ignore[return-value]
    if text.isdigit():
        return int(text)
    raise typer.BadParameter(f"expected earliest, latest or an offset >= 0, got {value!r}")


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def record_json(record: kafka.Record) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": [[name, _text(value)] for name, value in record.headers],
    }


def _when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _shown(data: bytes | None) -> str:
    text = _text(data)
    return "[dim]null[/]" if text is None else escape(text)


def consume(
    topic: Annotated[
        str, typer.Argument(metavar="TOPIC", help="Topic to read.", show_default=False)
    ],
    partition: Annotated[
        int | None,
        typer.Option("--partition", "-p", min=0, help="Read one partition (default: all)."),
    ] = None,
    offset: Annotated[
        str,
        typer.Option(
            "--offset",
            "-o",
            metavar="earliest|latest|N",
            help="Where to start in each partition.",
        ),
    ] = "earliest",
    max_messages: Annotated[
        int | None,
        typer.Option("--max-messages", "-n", min=1, help="Stop after this many records."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            "-t",
            min=0,
            metavar="SECONDS",
            help="Stop when no record arrived for this long (default: wait until Ctrl-C).",
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per line (topic, partition, offset, timestamp, key, value, "
            "headers) instead of a table. Keys, values and headers are decoded as UTF-8; "
            "other bytes appear as \\xNN escapes.",
        ),
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Read records from a topic, without a consumer group (assign mode)."""
    start = parse_offset(offset)
    records: list[kafka.Record] = []
    count = 0
    with broker_errors():
        consumer = kafka.Consumer(
            bootstrap, request_timeout, client_props(command_config, properties)
        )
        try:
            info = consumer.topic(topic)
            partitions = [p.partition for p in info.partitions]
            if partition is not None:
                if partition not in partitions:
                    fail(
                        f"UNKNOWN_TOPIC_OR_PART: topic {topic!r} has no partition {partition} "
                        f"(it has {len(partitions)})"
                    )
                partitions = [partition]
            consumer.assign(topic, partitions, start)
            idle_since = time.monotonic()
            try:
                while max_messages is None or count < max_messages:
                    record = consumer.poll(0.2)
                    if record is None:
                        if timeout is not None and time.monotonic() - idle_since >= timeout:
                            break
                        continue
                    idle_since = time.monotonic()
                    count += 1
                    if as_json:
                        sys.stdout.write(json.dumps(record_json(record)) + "\n")
                        sys.stdout.flush()
                    else:
                        records.append(record)
            except KeyboardInterrupt:
                pass  # Ctrl-C is the normal way to stop an open-ended consume
        finally:
            consumer.close()

    if not as_json:
        _print_table(topic, records)
    err().print(f"Consumed {count} record{'' if count == 1 else 's'} from {escape(topic)}.")


def _print_table(topic: str, records: list[kafka.Record]) -> None:
    if not records:
        return
    table = Table(title=f"Topic {escape(topic)}", title_justify="left")
    table.add_column("Partition", justify="right")
    table.add_column("Offset", justify="right")
    table.add_column("Timestamp (UTC)", no_wrap=True)
    table.add_column("Key", overflow="fold")
    table.add_column("Value", overflow="fold")
    table.add_column("Headers", overflow="fold")
    for r in records:
        headers = ", ".join(f"{escape(k)}={_shown(v)}" for k, v in r.headers)
        table.add_row(
            str(r.partition),
            str(r.offset),
            _when(r.timestamp),
            _shown(r.key),
            _shown(r.value),
            headers,
        )
    print_table(table)


def register(app: typer.Typer) -> None:
    app.command("consume")(consume)
