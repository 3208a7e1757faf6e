"""The base of group events and their causes (see `events`): a `Cause`
subclass per reason something happened to a group, and the JSON form every
event shares. Classic-group events and causes are in `events`, consumer
(KIP-848) ones in `events_modern`; both build on this module."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from functools import cache
from typing import Any, ClassVar


def _member(member_id: str | None) -> str:
    return f"member {member_id}" if member_id else "a member"


# What the coordinator records (as Kafka does) when LeaveGroup carried no reason
NO_REASON = "not provided"


def _reason(reason: str | None) -> str:
    if not reason or reason == NO_REASON:
        return " without giving a reason"
    return f', giving the reason "{reason}"'


def _quoted(reason: str | None) -> str:
    return f' (reason "{reason}")' if reason else ""


class Cause:
    """Why something happened to a group. Subclasses set `code` and `words`
    and may say more in `started` (why a rebalance started: one clause),
    `removed` (a member taken out for this cause: one sentence) and `dead`."""

    code: ClassVar[str] = ""
    words: ClassVar[str] = ""  # a few words, for lists of causes
    starts_rebalances: ClassVar[bool] = False  # listed in CAUSES
    registry: ClassVar[dict[str, type[Cause]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.code:
            Cause.registry[cls.code] = cls

    def __init__(self, code: str = "") -> None:
        # an instance of the base class stands for a code this version does not know
        self.unknown_code = code

    @property
    def name(self) -> str:
        return self.code or self.unknown_code

    @property
    def text(self) -> str:
        return self.words or self.name.replace("_", " ")

    def started(self, member: str, reason: str | None) -> str:
        text = self.text if self.name else "no cause was recorded"
        return text + (f" ({_member(member)})" if member else "")

    def removed(self, who: str, reason: str | None) -> str:
        return f"{who} was removed ({self.text or 'unknown'})."

    def dead(self) -> str:
        return f"the group became Dead ({self.text or 'unknown'})."


def cause(code: str | None) -> Cause:
    """The cause with this code (an unknown one keeps its code as its words)."""
    known = Cause.registry.get(code or "")
    return known() if known is not None else Cause(code or "")


_PLAIN = (str, int, float, bool, type(None))


class _Event:
    def to_json(self) -> bytes:
        # Every rebalance writes a few of these: fields of plain values (all
        # events so far) are read as they are, as asdict would copy them, with
        # no deep copy; anything else goes through asdict.
        body: dict[str, Any] = {"type": type(self).__name__}
        for name in _field_names(type(self)):
            value = getattr(self, name)
            if type(value) not in _PLAIN and not (
                type(value) is tuple and all(type(v) in _PLAIN for v in value)
            ):
                body = {"type": type(self).__name__, **asdict(self)}  # type: ignore[call-overload]
                break
            body[name] = value
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))
