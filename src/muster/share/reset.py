"""`share.auto.offset.reset` (KIP-932, KIP-1106): where a share partition
starts the first time a group reads it. `latest` (the default): the end;
`earliest`: the log start; `by_duration:<ISO-8601 duration>`: the first
record no older than the duration, else the end. The duration is Java's
`Duration.parse` format (`PnDTnHnMn.nS`, case-insensitive), never
negative, as Kafka 4.4 accepts it (kafka-diff share_groups.reset_configs)."""

from __future__ import annotations

import re

BY_DURATION = "by_duration:"

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def duration_ms(text: str) -> int | None:
    """The milliseconds of an ISO-8601 duration as Java's Duration.parse
    reads it (None: not one)."""
    m = _DURATION.fullmatch(text)
    if m is None:
        return None
    sign, days, time_part, hours, minutes, seconds, fraction = m.groups()
    if days is None and time_part is None:
        return None  # "P" alone
    if time_part is not None and hours is None and minutes is None and seconds is None:
        return None  # "T" with nothing after it
    ms = int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000
    ms += int(minutes or 0) * 60_000
    whole = int(seconds or 0)
    frac = int((fraction or "").ljust(3, "0")[:3] or 0)
    ms += whole * 1000 + (-frac if seconds and seconds.startswith("-") else frac)
    return -ms if sign == "-" else ms


def check_reset(value: str) -> bool:
    """Whether `share.auto.offset.reset` may take this value."""
    if value in ("latest", "earliest"):
        return True
    if not value.startswith(BY_DURATION):
        return False
    ms = duration_ms(value[len(BY_DURATION) :])
    return ms is not None and ms >= 0


def since_ms(value: str, now_ms: int) -> int | None:
    """For a `by_duration:` value, the oldest timestamp a first record may
    have (None: the value is latest or earliest)."""
    if not value.startswith(BY_DURATION):
        return None
    ms = duration_ms(value[len(BY_DURATION) :])
    return None if ms is None else now_ms - ms
