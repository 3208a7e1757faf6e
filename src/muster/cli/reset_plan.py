"""`groups reset-offsets`' plan: each partition's new offset under Kafka's
rules (`kafka-consumer-groups.sh --reset-offsets`), clamped to the log. Pure:
the command reads the offsets and commits the plan."""

from __future__ import annotations

from datetime import datetime

import typer

from muster.cli import kafka

Key = tuple[str, int]


def parse_datetime(text: str) -> int:
    """ISO 8601 → epoch milliseconds; without a zone, local time (as Kafka does)."""
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        raise typer.BadParameter(
            f"not an ISO 8601 date-time: {text!r} (e.g. 2026-01-31T12:00:00Z)",
            param_hint="--to-datetime",
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()  # naive: the local time zone
    return int(stamp.timestamp() * 1000)


def clamp(offset: int, offsets: kafka.Offsets) -> int:
    """Kafka's rule: a target outside the log moves to its nearest end."""
    if offsets.log_end is not None and offset > offsets.log_end:
        return offsets.log_end
    if offsets.log_start is not None and offset < offsets.log_start:
        return offsets.log_start
    return offset


def plan_reset(
    keys: list[Key],
    log_offsets: dict[Key, kafka.Offsets],
    committed: dict[Key, int],
    *,
    to_earliest: bool = False,
    to_latest: bool = False,
    to_offset: int | None = None,
    shift_by: int | None = None,
    by_time: dict[Key, int | None] | None = None,
) -> dict[Key, int]:
    """The new offset of each partition, clamped to [log-start, log-end]."""
    plan: dict[Key, int] = {}
    for key in keys:
        offsets = log_offsets[key]
        if offsets.log_start is None or offsets.log_end is None:
            raise kafka.KafkaCliError(
                "LIST_OFFSETS_FAILED",
                f"no log offsets for {key[0]}:{key[1]} ({offsets.error or 'unknown error'})",
            )
        if to_earliest:
            target = offsets.log_start
        elif to_latest:
            target = offsets.log_end
        elif to_offset is not None:
            target = to_offset
        elif shift_by is not None:
            if key not in committed:
                raise kafka.KafkaCliError(
                    "NO_COMMITTED_OFFSET",
                    f"cannot shift {key[0]}:{key[1]}: the group has no committed offset there",
                )
            target = committed[key] + shift_by
        elif by_time is not None:
            found = by_time.get(key)
            target = offsets.log_end if found is None else found  # nothing that late: log end
        else:  # pragma: no cover - the command checks a scenario is given
            raise ValueError("no reset scenario")
        plan[key] = clamp(target, offsets)
    return plan
