"""Every group event's JSON (what `__muster_group_events` holds and the
console, the CLI and `from_json` read) is what the dataclass's `asdict` gives,
for every field type the events use; `to_json` only skips asdict's deep copy."""

from __future__ import annotations

import json
from dataclasses import asdict, fields, is_dataclass
from typing import Any

import pytest

import muster.coordinator.events as ev
import muster.coordinator.events_modern as em
from muster.coordinator.event_base import _Event

EVENTS = sorted(
    (
        c
        for m in (ev, em)
        for c in vars(m).values()
        if isinstance(c, type) and issubclass(c, _Event) and is_dataclass(c)
    ),
    key=lambda c: c.__name__,
)
SAMPLES: dict[str, tuple[Any, ...]] = {
    "int": (0, -1, 2**40),
    "str": ("", "g1", 'quote " and \u00e9'),
    "str | None": (None, "a reason"),
    "bool": (True, False),
    "tuple[str, ...]": ((), ("m1", "m2")),
}


def _asdict_json(event: Any) -> bytes:
    body = {"type": type(event).__name__, **asdict(event)}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


@pytest.mark.parametrize("cls", EVENTS, ids=lambda c: c.__name__)
def test_to_json_is_asdicts(cls: type) -> None:
    assert EVENTS, "no event classes found"
    for i in range(3):
        values = {}
        for f in fields(cls):
            choices = SAMPLES[str(f.type)]  # a new field type needs a sample here
            values[f.name] = choices[i % len(choices)]
        event = cls(**values)
        assert event.to_json() == _asdict_json(event)
