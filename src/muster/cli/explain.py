"""Plain-words account of a group's rebalances, from `__muster_group_events`.

Pure: no broker, no clock. `parse_events` decodes the topic's JSON values
(see muster.coordinator.events for the types and fields), `timeline` folds one
group's events into rebalances, `render` turns each into sentences.

How the coordinator writes a rebalance (in log order):

* `MemberRemoved` (when a member left / expired while the group was Stable or
  CompletingRebalance) immediately followed by `RebalanceStarted` with the same
  member: the cause;
* `RebalanceStarted` again for each later transition back to
  PreparingRebalance before the group is stable again;
* `JoinCompleted` when the join phase ends (with what it waited for and the
  members dropped for not rejoining), `MemberRemoved` for those;
* `RebalanceCompleted` when the group is Stable (or Empty) again, with the
  causes in order, timestamps, duration, generation and member counts.

Events this module does not know are ignored, so newer brokers stay readable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Event = dict[str, Any]


@dataclass
class Rebalance:
    """One rebalance: from leaving a stable (or empty) group to the next one."""

    starts: list[Event] = field(default_factory=list)  # RebalanceStarted, in order
    removals: list[Event] = field(default_factory=list)  # MemberRemoved during it
    joins: list[Event] = field(default_factory=list)  # JoinCompleted
    store_failures: list[Event] = field(default_factory=list)  # GroupStoreFailed
    replacements: list[Event] = field(default_factory=list)  # StaticMemberReplaced
    completed: Event | None = None  # RebalanceCompleted

    @property
    def started_ms(self) -> int | None:
        if self.completed is not None:
            return int(self.completed["started_ms"])
        if self.starts:
            return int(self.starts[0]["at_ms"])
        return None

    @property
    def done(self) -> bool:
        return self.completed is not None


@dataclass(frozen=True)
class Note:
    """Something worth telling that is not a rebalance (e.g. a static member
    replaced without one, the group deleted)."""

    at_ms: int
    text: str


Item = Rebalance | Note


# ---- decoding --------------------------------------------------------------


def parse_event(value: bytes | str | None) -> Event | None:
    """One record value as an event dict, None when it is not one."""
    if value is None:
        return None
    try:
        event = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    return event


def parse_events(values: Iterable[bytes | str | None], group_id: str | None = None) -> list[Event]:
    """Decodes record values, keeping one group's events when `group_id` is given."""
    events = []
    for value in values:
        event = parse_event(value)
        if event is None:
            continue
        if group_id is not None and event.get("group_id") != group_id:
            continue
        events.append(event)
    return events


# ---- folding events into rebalances ----------------------------------------


def timeline(events: Iterable[Event]) -> list[Item]:
    """One group's events (log order) as rebalances and notes, oldest first."""
    items: list[Item] = []
    current: Rebalance | None = None
    removed_before_start: list[Event] = []

    def flush_removals() -> None:
        for removal in removed_before_start:
            items.append(Note(int(removal.get("at_ms", 0)), removal_sentence(removal)))
        removed_before_start.clear()

    for event in events:
        kind = event.get("type")
        if kind == "RebalanceStarted":
            if current is None or current.done:
                current = Rebalance()
                items.append(current)
            current.starts.append(event)
            current.removals.extend(removed_before_start)
            removed_before_start.clear()
            continue
        if kind == "MemberRemoved":
            if current is not None and not current.done:
                current.removals.append(event)
            else:  # the RebalanceStarted it causes follows right after
                removed_before_start.append(event)
            continue
        flush_removals()
        if kind == "JoinCompleted":
            if current is None or current.done:
                current = Rebalance()
                items.append(current)
            current.joins.append(event)
        elif kind == "RebalanceCompleted":
            if current is None or current.done:
                current = Rebalance()
                items.append(current)
            current.completed = event
        elif kind == "GroupStoreFailed":
            if current is not None and not current.done:
                current.store_failures.append(event)
            else:
                items.append(Note(int(event.get("at_ms", 0)), store_failed_sentence(event)))
        elif kind == "StaticMemberReplaced":
            if event.get("rebalance") and current is not None and not current.done:
                current.replacements.append(event)
            else:
                items.append(Note(int(event.get("at_ms", 0)), replaced_sentence(event)))
        elif kind == "GroupStateChanged" and event.get("to_state") == "Dead":
            items.append(Note(int(event.get("at_ms", 0)), dead_sentence(event)))
    flush_removals()
    return items


def last_rebalances(items: list[Item], count: int | None) -> list[Item]:
    """The last `count` rebalances and the notes from the first of them on."""
    if count is None:
        return items
    if count <= 0:
        return []
    indexes = [i for i, item in enumerate(items) if isinstance(item, Rebalance)]
    if len(indexes) <= count:
        return items
    return items[indexes[-count] :]


# ---- words -----------------------------------------------------------------


def when(ms: int | None) -> str:
    if ms is None:
        return "at an unknown time"
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def duration(ms: int | None) -> str:
    if ms is None:
        return "an unknown time"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, rest = divmod(ms, 60_000)
    return f"{minutes} min {rest // 1000} s"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _member(member_id: str | None) -> str:
    return f"member {member_id}" if member_id else "a member"


# What the coordinator records (as Kafka does) when LeaveGroup carried no reason
NO_REASON = "not provided"


def _reason(reason: str | None) -> str:
    if not reason or reason == NO_REASON:
        return " without giving a reason"
    return f', giving the reason "{reason}"'


CAUSE_WORDS = {
    "member_joined": "a new member joined",
    "member_left": "a member left",
    "session_expired": "a member's session expired",
    "new_member_join_timeout": "a new member did not rejoin in time",
    "pending_member_expired": "a pending member never completed its join",
    "rebalance_timeout": "a member did not rejoin before the rebalance timeout",
    "sync_timeout": "members did not send SyncGroup before the rebalance timeout",
    "leader_rejoined": "the leader rejoined",
    "member_metadata_changed": "a member rejoined with changed subscription metadata",
    "static_member_replaced": "a static member was replaced by a new instance",
    "group_store_failed": "the group's assignment could not be stored",
    "group_max_size": "the group was over group.max.size",
}


def cause_words(cause: str) -> str:
    """A cause code in a few words (for lists of causes)."""
    return CAUSE_WORDS.get(cause, cause.replace("_", " "))


def cause_sentence(event: Event) -> str:
    """Why a RebalanceStarted happened, in one clause (no trailing period)."""
    cause = str(event.get("cause", ""))
    member = event.get("member_id") or ""
    reason = event.get("reason")
    if cause == "member_joined":
        text = f"{_member(member)} joined the group"
        if reason:
            text += f' (reason "{reason}")'
    elif cause == "member_left":
        text = f"{_member(member)} left the group (LeaveGroup){_reason(reason)}"
    elif cause == "session_expired":
        text = f"{_member(member)} stopped heartbeating and its session timed out"
    elif cause == "new_member_join_timeout":
        text = f"new {_member(member)} did not rejoin before the new-member join timeout"
    elif cause == "sync_timeout":
        text = "some members did not send SyncGroup before the rebalance timeout"
    elif cause == "leader_rejoined":
        text = f"the group leader ({member or 'unknown'}) rejoined, so a new assignment is needed"
        if reason:
            text += f' (reason "{reason}")'
    elif cause == "member_metadata_changed":
        text = f"{_member(member)} rejoined with a changed subscription or protocol metadata"
        if reason:
            text += f' (reason "{reason}")'
    elif cause == "static_member_replaced":
        text = f"a static member was replaced by a new instance ({member or 'unknown id'})"
    elif cause == "group_store_failed":
        text = "the group's new assignment could not be stored durably"
    else:
        text = cause_words(cause) if cause else "no cause was recorded"
        if member:
            text += f" ({_member(member)})"
    return text


WAITED_WORDS = {
    "all_members_joined": "every member had joined",
    "rebalance_timeout_expired": "the rebalance timeout expired before every member had rejoined",
    "initial_delay_elapsed": (
        "the initial rebalance delay (group.initial.rebalance.delay.ms) had elapsed"
    ),
}


def waited_sentence(waited_for: str | None) -> str:
    if not waited_for:
        return "an unknown condition"
    return WAITED_WORDS.get(waited_for, waited_for.replace("_", " "))


def removal_sentence(event: Event) -> str:
    member = event.get("member_id") or "?"
    instance = event.get("group_instance_id")
    who = f"member {member}" + (f" (static instance {instance})" if instance else "")
    cause = event.get("cause")
    reason = event.get("reason")
    if cause == "member_left":
        return f"{who} left the group{_reason(reason)}."
    if cause == "session_expired":
        return f"{who} was removed: its session timed out."
    if cause == "rebalance_timeout":
        return f"{who} was removed: it did not rejoin before the rebalance timeout."
    if cause == "sync_timeout":
        return f"{who} was removed: it did not send SyncGroup in time."
    if cause == "new_member_join_timeout":
        return f"{who} was removed: as a new member it did not rejoin in time."
    if cause == "pending_member_expired":
        return f"{who} was removed: it never completed its join (pending member expired)."
    return f"{who} was removed ({cause_words(str(cause or 'unknown'))})."


def replaced_sentence(event: Event) -> str:
    text = (
        f"static member {event.get('group_instance_id')} rejoined under a new member id "
        f"{event.get('new_member_id')} (was {event.get('old_member_id')})"
    )
    if event.get("rebalance"):
        return text + "; this started a rebalance."
    return text + "; it kept its assignment without a rebalance."


def store_failed_sentence(event: Event) -> str:
    return (
        f"storing generation {event.get('generation')} failed "
        f"(error code {event.get('error_code')}); a new rebalance follows."
    )


def dead_sentence(event: Event) -> str:
    cause = event.get("cause")
    if cause == "group_deleted":
        return "the group was deleted."
    if cause == "offsets_expired":
        return "the group was removed: it stayed empty and its offsets expired."
    return f"the group became Dead ({cause_words(str(cause or 'unknown'))})."


def _state_words(state: str | None) -> str:
    return {
        "Empty": "empty",
        "Stable": "stable",
        "CompletingRebalance": "waiting for the leader's assignment (CompletingRebalance)",
        "PreparingRebalance": "already rebalancing",
    }.get(state or "", state or "in an unknown state")


def headline(rebalance: Rebalance) -> str:
    """`Rebalance started <time>: <main cause>`."""
    first = rebalance.starts[0] if rebalance.starts else None
    if first is not None:
        why = cause_sentence(first)
    elif rebalance.completed and rebalance.completed.get("causes"):
        why = cause_words(str(rebalance.completed["causes"][0]))
    else:
        why = "cause not recorded"
    return f"Rebalance started {when(rebalance.started_ms)}: {why}."


def render(rebalance: Rebalance) -> list[str]:
    """Sentences describing one rebalance; the first is the headline."""
    lines = [headline(rebalance)]
    first = rebalance.starts[0] if rebalance.starts else None
    if first is not None:
        # member_count is taken after the join/leave that caused the rebalance
        lines.append(
            f"The group was {_state_words(first.get('from_state'))} at generation "
            f"{first.get('generation')}; "
            f"{plural(int(first.get('member_count', 0)), 'member')} after this change."
        )
    for later in rebalance.starts[1:]:
        lines.append(
            f"Rebalance restarted {when(later.get('at_ms'))} "
            f"(from {later.get('from_state')}): {cause_sentence(later)}."
        )
    # members removed by the same action that started (or restarted) the rebalance
    # are already told; the others get their own sentence
    starters = {(s.get("member_id"), s.get("at_ms")) for s in rebalance.starts}
    for removal in rebalance.removals:
        if (removal.get("member_id"), removal.get("at_ms")) in starters:
            continue
        text = removal_sentence(removal)
        lines.append(text[0].upper() + text[1:])
    for replacement in rebalance.replacements:
        text = replaced_sentence(replacement)
        lines.append(text[0].upper() + text[1:])
    for join in rebalance.joins:
        members = int(join.get("member_count", 0))
        text = (
            f"The join phase ended after {duration(join.get('join_duration_ms'))}, "
            f"when {waited_sentence(join.get('waited_for'))}: generation {join.get('generation')}"
        )
        if members:
            text += (
                f" with {plural(members, 'member')}, leader {join.get('leader_id')}, "
                f"protocol {join.get('protocol')}."
            )
        else:
            text += " with no members."
        lines.append(text)
        dropped = [m for m in join.get("removed_members") or () if m]
        if dropped:
            lines.append(
                "Dropped for not rejoining in time: " + ", ".join(str(m) for m in dropped) + "."
            )
    for failure in rebalance.store_failures:
        text = store_failed_sentence(failure)
        lines.append(text[0].upper() + text[1:])
    done = rebalance.completed
    if done is None:
        lines.append("Not completed yet (or its completion was not recorded).")
        return lines
    members = int(done.get("member_count", 0))
    statics = int(done.get("static_member_count", 0))
    if members:
        who = plural(members, "member")
        if statics:
            who += f" ({statics} static)"
        outcome = f"generation {done.get('generation')} is stable with {who}"
        if done.get("protocol"):
            outcome += f", protocol {done.get('protocol')}"
    else:
        outcome = f"generation {done.get('generation')} has no members: the group is empty"
    lines.append(
        f"Completed {when(done.get('completed_ms'))} after {duration(done.get('duration_ms'))}: "
        f"{outcome}."
    )
    causes = [str(c) for c in done.get("causes") or ()]
    if len(causes) > 1:
        lines.append("Causes, in order: " + "; ".join(cause_words(c) for c in causes) + ".")
    if not rebalance.joins and done.get("waited_for"):
        lines.append(f"The join phase waited until {waited_sentence(done.get('waited_for'))}.")
    return lines


def render_note(note: Note) -> str:
    return f"{when(note.at_ms)}: {note.text[0].upper()}{note.text[1:]}"


def explain(events: Iterable[Event], last: int | None = None) -> list[list[str]]:
    """The whole account: one list of sentences per rebalance or note, oldest first."""
    blocks = []
    for item in last_rebalances(timeline(events), last):
        blocks.append(render(item) if isinstance(item, Rebalance) else [render_note(item)])
    return blocks
