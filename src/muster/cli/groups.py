"""`muster groups list|describe|reset-offsets|delete|delete-offsets|explain`.

Parity with Kafka's `kafka-consumer-groups.sh` (same figures, same rules:
offsets reset only while the group is inactive, targets clamped to the log),
plus `explain`, which reads `__muster_group_events` and tells a group's recent
rebalances and their causes in plain words (see muster.explain).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from muster import explain as explain_words
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
    events_topic_errors,
    fail,
    out,
    print_json,
    print_table,
)
from muster.cli.reset_plan import Key, parse_datetime, plan_reset

INACTIVE_STATES = ("Empty", "Dead")

app = typer.Typer(
    help="List, describe and delete consumer groups; reset their offsets; explain rebalances.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

GroupArg = Annotated[str, typer.Argument(metavar="GROUP", help="Group id.", show_default=False)]
TopicSpecOption = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        "-t",
        metavar="TOPIC[:P,P...]",
        help="Topic, optionally with partitions (orders:0,2); repeatable.",
        show_default=False,
    ),
]



def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def parse_topic_specs(
    items: list[str] | None, option: str = "--topic"
) -> list[tuple[str, list[int] | None]]:
    """`orders` → all partitions of orders; `orders:0,2` → partitions 0 and 2."""
    specs: list[tuple[str, list[int] | None]] = []
    for item in items or ():
        topic, sep, rest = item.partition(":")
        topic = topic.strip()
        if not topic:
            raise typer.BadParameter(f"no topic name in {item!r}", param_hint=option)
        if not sep:
            specs.append((topic, None))
            continue
        try:
            parts = sorted({int(p) for p in rest.split(",") if p.strip()})
        except ValueError:
            raise typer.BadParameter(
                f"partitions must be numbers, as in {topic}:0,1 (got {item!r})", param_hint=option
            ) from None
        if not parts or any(p < 0 for p in parts):
            raise typer.BadParameter(f"no valid partitions in {item!r}", param_hint=option)
        specs.append((topic, parts))
    return specs


def _resolve(admin: kafka.GroupAdmin, specs: list[tuple[str, list[int] | None]]) -> list[Key]:
    """Topic specs as (topic, partition) pairs; unknown topics/partitions fail."""
    keys: list[Key] = []
    for topic, parts in specs:
        info = admin.topic(topic)
        existing = {p.partition for p in info.partitions}
        if parts is None:
            keys.extend((topic, p) for p in sorted(existing))
            continue
        missing = [p for p in parts if p not in existing]
        if missing:
            raise kafka.KafkaCliError(
                "UNKNOWN_TOPIC_OR_PART",
                f"topic {topic!r} has no partition {', '.join(map(str, missing))}",
            )
        keys.extend((topic, p) for p in parts)
    return sorted(set(keys))


# ---- list ------------------------------------------------------------------


@app.command("list")
def list_(
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """List consumer groups with their state and protocol type (ListGroups)."""
    with broker_errors():
        groups = kafka.GroupAdmin(
            bootstrap, request_timeout, client_props(command_config, properties)
        ).list_groups()
    if as_json:
        print_json(groups)
        return
    if not groups:
        err().print("No groups.")
        return
    table = Table(title=f"Groups on {bootstrap}", title_justify="left")
    table.add_column("Group", style="bold", overflow="fold")
    table.add_column("State")
    table.add_column("Protocol type")
    table.add_column("Type")
    for g in groups:
        ptype = "?" if g.protocol_type is None else (g.protocol_type or "(none)")
        table.add_row(escape(g.group_id), g.state, escape(ptype), g.type)
    print_table(table)


# ---- describe --------------------------------------------------------------


@dataclass(frozen=True)
class OffsetRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    member: kafka.GroupMember | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)


def offset_rows(
    desc: kafka.GroupDescription,
    committed: dict[Key, int],
    log_offsets: dict[Key, kafka.Offsets],
) -> list[OffsetRow]:
    """One row per partition with a committed offset or an assigned member."""
    owners: dict[Key, kafka.GroupMember] = {}
    for member in desc.members:
        for key in member.assignment:
            owners[key] = member
    rows = []
    for key in sorted(set(committed) | set(owners)):
        end = log_offsets.get(key)
        rows.append(
            OffsetRow(
                key[0],
                key[1],
                committed.get(key),
                end.log_end if end is not None else None,
                owners.get(key),
            )
        )
    return rows


def _header(desc: kafka.GroupDescription) -> None:
    console = out()
    console.print(f"Group: [bold]{escape(desc.group_id)}[/]", soft_wrap=True)
    console.print(f"State: {desc.state}")
    if desc.is_simple:
        protocol = "(none: offsets committed without group membership)"
    else:
        protocol = desc.protocol or "(none)"
    console.print(f"Protocol: {escape(protocol)}", soft_wrap=True)
    console.print(f"Members: {len(desc.members)}")
    if desc.type:
        console.print(f"Type: {desc.type}")
    if desc.coordinator is not None:
        console.print(f"Coordinator: {desc.coordinator}")


def _members_table(desc: kafka.GroupDescription) -> Table:
    table = Table(title="Members", title_justify="left")
    table.add_column("Member id", overflow="fold")
    table.add_column("Instance id", overflow="fold")
    table.add_column("Client id", overflow="fold")
    table.add_column("Host")
    table.add_column("#Partitions", justify="right")
    table.add_column("Assignment", overflow="fold")
    targets = any(m.target is not None for m in desc.members)
    if targets:  # consumer groups: where each member is heading
        table.add_column("Target", overflow="fold")
    for m in desc.members:
        row = [
            escape(m.member_id),
            escape(m.group_instance_id or "-"),
            escape(m.client_id),
            escape(m.host),
            str(len(m.assignment)),
            escape(_partitions_text(m.assignment) or "-"),
        ]
        if targets:
            row.append(escape(_partitions_text(m.target or ()) or "-"))
        table.add_row(*row)
    return table


def _partitions_text(pairs: tuple[Key, ...]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return " ".join(
        f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items())
    )


@app.command("describe")
def describe(
    group: GroupArg,
    members: Annotated[
        bool,
        typer.Option("--members", help="List the members and their assignments instead."),
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a group: state, members, and per partition the committed offset,
    log-end offset, lag and owning member (like kafka-consumer-groups.sh --describe)."""
    with broker_errors():
        admin = kafka.GroupAdmin(
            bootstrap, request_timeout, client_props(command_config, properties)
        )
        desc = admin.describe_group(group)
        committed = {} if members else admin.committed_offsets(group)
        if desc.state == "Dead" and not desc.members and not committed:
            fail(f"consumer group {group!r} does not exist")
        rows = offset_rows(desc, committed, {})
        log_offsets = admin.log_offsets([(r.topic, r.partition) for r in rows]) if rows else {}
    if as_json:
        offsets = [] if members else offset_rows(desc, committed, log_offsets)
        print_json(
            {
                "group": desc,
                "offsets": [{**asdict(r), "lag": r.lag} for r in offsets],
            }
        )
        return
    _header(desc)
    console = out()
    if members:
        if desc.members:
            console.print(_members_table(desc))
        else:
            err().print(f"Consumer group {escape(group)} has no active members.")
        return
    if not desc.members:
        err().print(f"Consumer group {escape(group)} has no active members.")
    rows = offset_rows(desc, committed, log_offsets)
    if not rows:
        err().print("No committed offsets and no assigned partitions.")
        return
    table = Table(title="Offsets", title_justify="left")
    for column in ("Topic", "Partition", "Current offset", "Log-end offset", "Lag"):
        table.add_column(column, justify="left" if column == "Topic" else "right")
    table.add_column("Member id", overflow="fold")
    table.add_column("Host")
    table.add_column("Client id", overflow="fold")
    for row in rows:
        m = row.member
        table.add_row(
            escape(row.topic),
            str(row.partition),
            _num(row.committed),
            _num(row.log_end),
            _num(row.lag),
            escape(m.member_id) if m else "-",
            escape(m.host) if m else "-",
            escape(m.client_id) if m else "-",
        )
    console.print(table)
    problems = sorted({o.error for o in log_offsets.values() if o.error})
    for problem in problems:
        err().print(
            f"[yellow]note:[/] log-end offset unavailable: {escape(problem)}", soft_wrap=True
        )


# ---- reset-offsets -----------------------------------------------------------


@app.command("reset-offsets")
def reset_offsets(
    group: GroupArg,
    topics: TopicSpecOption = None,
    all_topics: Annotated[
        bool, typer.Option("--all-topics", help="Every topic the group has offsets for.")
    ] = False,
    to_earliest: Annotated[
        bool, typer.Option("--to-earliest", help="Reset to the log-start offset.")
    ] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="Reset to the log-end offset.")
    ] = False,
    to_offset: Annotated[
        int | None,
        typer.Option("--to-offset", metavar="N", help="Reset to offset N.", show_default=False),
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="ISO8601",
            help="Reset to the first record at or after this time (no zone: local time).",
            show_default=False,
        ),
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option(
            "--shift-by",
            metavar="N",
            help="Move the committed offset by N (may be negative).",
            show_default=False,
        ),
    ] = None,
    execute: Annotated[
        bool, typer.Option("--execute", help="Commit the new offsets (default: dry run).")
    ] = False,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Plan (and with --execute commit) new committed offsets for a group.

    Offsets can only be committed while the group is inactive (Empty or Dead),
    and targets outside the log move to its nearest end, as with Kafka."""
    chosen = [
        name
        for name, given in (
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--to-offset", to_offset is not None),
            ("--to-datetime", to_datetime is not None),
            ("--shift-by", shift_by is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise typer.BadParameter(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, "
            f"--shift-by (got {', '.join(chosen) or 'none'})"
        )
    specs = parse_topic_specs(topics)
    if bool(specs) == all_topics:
        raise typer.BadParameter("give --topic (one or more) or --all-topics, not both")
    timestamp = parse_datetime(to_datetime) if to_datetime is not None else None
    with broker_errors():
        admin = kafka.GroupAdmin(
            bootstrap, request_timeout, client_props(command_config, properties)
        )
        desc = admin.describe_group(group)
        if execute and desc.state not in INACTIVE_STATES:
            fail(
                f"offsets of group {group!r} can only be reset while it is inactive "
                f"(Empty or Dead), but its state is {desc.state}: stop its consumers first"
            )
        committed = admin.committed_offsets(group)
        if all_topics:
            keys = sorted(committed)
            if not keys:
                fail(f"group {group!r} has no committed offsets (use --topic)")
        else:
            keys = _resolve(admin, specs)
        log_offsets = admin.log_offsets(keys)
        by_time = admin.offsets_for_time(keys, timestamp) if timestamp is not None else None
        plan = plan_reset(
            keys,
            log_offsets,
            committed,
            to_earliest=to_earliest,
            to_latest=to_latest,
            to_offset=to_offset,
            shift_by=shift_by,
            by_time=by_time,
        )
        if execute:
            admin.alter_group_offsets(group, plan)
    if execute:
        title = f"New offsets committed for group {escape(group)}"
    else:
        title = f"Planned offsets for group {escape(group)} (dry run)"
    table = Table(title=title, title_justify="left")
    table.add_column("Topic")
    for column in ("Partition", "Current offset", "New offset", "Log start", "Log end"):
        table.add_column(column, justify="right")
    for key in keys:
        offsets = log_offsets[key]
        table.add_row(
            escape(key[0]),
            str(key[1]),
            _num(committed.get(key)),
            str(plan[key]),
            _num(offsets.log_start),
            _num(offsets.log_end),
        )
    print_table(table)
    if not execute:
        note = "Dry run: nothing committed; add --execute to commit these offsets."
        if desc.state not in INACTIVE_STATES:
            note += f" (The group is {desc.state}: --execute needs it Empty or Dead.)"
        err().print(note, soft_wrap=True)


# ---- delete / delete-offsets ---------------------------------------------------


@app.command("delete")
def delete(
    group: GroupArg,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Delete an inactive group and its committed offsets (DeleteGroups)."""
    with broker_errors():
        try:
            kafka.GroupAdmin(
                bootstrap, request_timeout, client_props(command_config, properties)
            ).delete_group(group)
        except kafka.KafkaCliError as exc:
            if exc.name == "NON_EMPTY_GROUP":
                fail(f"group {group!r} still has members: stop its consumers first ({exc})")
            if exc.name == "GROUP_ID_NOT_FOUND":
                fail(f"consumer group {group!r} does not exist")
            raise
    out().print(f"Deleted group [bold]{escape(group)}[/].")


@app.command("delete-offsets")
def delete_offsets(
    group: GroupArg,
    topics: TopicSpecOption = None,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Delete a group's committed offsets for topics or partitions (OffsetDelete).

    Refused per partition (GROUP_SUBSCRIBED_TO_TOPIC) while members consume the topic."""
    specs = parse_topic_specs(topics)
    if not specs:
        raise typer.BadParameter("give at least one --topic", param_hint="--topic")
    with broker_errors():
        admin = kafka.GroupAdmin(
            bootstrap, request_timeout, client_props(command_config, properties)
        )
        keys = _resolve(admin, specs)
        try:
            results = admin.delete_group_offsets(group, keys)
        except kafka.KafkaCliError as exc:
            if exc.name == "GROUP_ID_NOT_FOUND":
                fail(f"consumer group {group!r} does not exist")
            raise
    table = Table(title=f"Offset deletion for group {escape(group)}", title_justify="left")
    table.add_column("Topic")
    table.add_column("Partition", justify="right")
    table.add_column("Status")
    failed = 0
    for key in sorted(results):
        error = results[key]
        failed += error is not None
        table.add_row(escape(key[0]), str(key[1]), "deleted" if error is None else error)
    print_table(table)
    if failed:
        fail(f"{failed} of {len(results)} partitions kept their offsets")


# ---- explain -------------------------------------------------------------------


@app.command("explain")
def explain(
    group: GroupArg,
    last: Annotated[
        int, typer.Option("--last", "-n", min=1, help="How many recent rebalances to tell.")
    ] = 5,
    bootstrap: BootstrapOption = BOOTSTRAP_DEFAULT,
    request_timeout: RequestTimeoutOption = REQUEST_TIMEOUT_DEFAULT,
    command_config: CommandConfigOption = None,
    properties: PropertyOption = None,
) -> None:
    """Tell a group's recent rebalances in plain words: when, why, how long,
    what the join waited for (from the broker's __muster_group_events topic)."""
    with broker_errors(), events_topic_errors():
        from muster.coordinator.topics import EVENTS_TOPIC

        records = kafka.read_partition(
            bootstrap, EVENTS_TOPIC, 0, request_timeout, client_props(command_config, properties)
        )
    wanted = group.encode()
    values = [r.value for r in records if r.key is None or r.key == wanted]
    events = explain_words.parse_events(values, group_id=group)
    blocks = explain_words.explain(events, last)
    if not blocks:
        with broker_errors():
            admin = kafka.GroupAdmin(
                bootstrap, request_timeout, client_props(command_config, properties)
            )
            desc = admin.describe_group(group)
            exists = desc.state != "Dead" or bool(desc.members or admin.committed_offsets(group))
        if not exists:  # as `groups describe` says it, with the same exit status
            fail(f"consumer group {group!r} does not exist")
        err().print(f"No rebalance events recorded for group {escape(group)}.")
        return
    console = out()
    total = sum(isinstance(i, explain_words.Rebalance) for i in explain_words.timeline(events))
    shown = min(total, last)
    console.print(
        f"Group [bold]{escape(group)}[/]: {explain_words.plural(total, 'rebalance')} recorded"
        + (f", the last {shown} shown" if shown < total else "")
        + ".",
        soft_wrap=True,
    )
    for block in blocks:
        console.print()
        console.print(f"[bold]{escape(block[0])}[/]", soft_wrap=True)
        for line in block[1:]:
            console.print(f"  {escape(line)}", soft_wrap=True)
