"""Plain-words account of a group's rebalances, from `__muster_group_events`.

Pure: no broker, no clock. `parse_events` decodes the topic's JSON values
into the typed events of muster.coordinator.events, `timeline` is the fold
shared with the analytics (`events.fold`), `render` turns each rebalance into
sentences. The words for each cause live with the cause
(`events.Cause.started` / `removed` / `dead`).

Events this module does not know are ignored, so newer brokers stay readable.
Used by `muster groups explain` and the analytics report; imports only
muster.coordinator.events.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from muster.coordinator import events as ev
from muster.coordinator.events import (
    GroupEvent,
    GroupStateChanged,
    GroupStoreFailed,
    MemberRemoved,
    Note,
    Rebalance,
    RebalanceStarted,
    StaticMemberReplaced,
)

Event = GroupEvent
Item = Rebalance | Note

__all__ = ["Event", "Item", "Note", "Rebalance", "explain", "parse_events", "render", "timeline"]


# ---- decoding --------------------------------------------------------------


def parse_event(value: bytes | str | None) -> Event | None:
    """One record value as its event, None when it is not one."""
    return ev.from_json(value)


def parse_events(values: Iterable[bytes | str | None], group_id: str | None = None) -> list[Event]:
    """Decodes record values, keeping one group's events when `group_id` is given."""
    events = []
    for value in values:
        event = ev.from_json(value)
        if event is None:
            continue
        if group_id is not None and event.group_id != group_id:
            continue
        events.append(event)
    return events


def timeline(events: Iterable[Event]) -> list[Item]:
    """One group's events (log order) as rebalances and notes, oldest first."""
    return ev.fold(events)


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


def cause_words(cause: str) -> str:
    """A cause code in a few words (for lists of causes)."""
    return ev.cause(cause).text


def cause_sentence(event: RebalanceStarted) -> str:
    """Why a RebalanceStarted happened, in one clause (no trailing period)."""
    return ev.cause(event.cause).started(event.member_id or "", event.reason)


def waited_sentence(waited_for: str | None) -> str:
    if not waited_for:
        return "an unknown condition"
    return ev.WAITED_WORDS.get(waited_for, waited_for.replace("_", " "))


def removal_sentence(event: MemberRemoved) -> str:
    instance = event.group_instance_id
    who = f"member {event.member_id or '?'}" + (
        f" (static instance {instance})" if instance else ""
    )
    return ev.cause(event.cause).removed(who, event.reason)


def replaced_sentence(event: StaticMemberReplaced) -> str:
    text = (
        f"static member {event.group_instance_id} rejoined under a new member id "
        f"{event.new_member_id} (was {event.old_member_id})"
    )
    if event.rebalance:
        return text + "; this started a rebalance."
    return text + "; it kept its assignment without a rebalance."


def store_failed_sentence(event: GroupStoreFailed) -> str:
    return (
        f"storing generation {event.generation} failed "
        f"(error code {event.error_code}); a new rebalance follows."
    )


def dead_sentence(event: GroupStateChanged) -> str:
    return ev.cause(event.cause).dead()


def note_sentence(event: Event) -> str:
    """A Note's event in one sentence."""
    if isinstance(event, MemberRemoved):
        return removal_sentence(event)
    if isinstance(event, StaticMemberReplaced):
        return replaced_sentence(event)
    if isinstance(event, GroupStoreFailed):
        return store_failed_sentence(event)
    if isinstance(event, GroupStateChanged):
        return dead_sentence(event)
    if hasattr(event, "sentence"):  # consumer-group events say themselves
        return str(event.sentence())
    return type(event).__name__


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
    elif rebalance.completed and rebalance.completed.causes:
        why = cause_words(str(rebalance.completed.causes[0]))
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
            f"The group was {_state_words(first.from_state)} at generation "
            f"{first.generation}; "
            f"{plural((first.member_count or 0), 'member')} after this change."
        )
    for later in rebalance.starts[1:]:
        lines.append(
            f"Rebalance restarted {when(later.at_ms)} "
            f"(from {later.from_state}): {cause_sentence(later)}."
        )
    # members removed by the same action that started (or restarted) the rebalance
    # are already told; the others get their own sentence
    starters = {(s.member_id, s.at_ms) for s in rebalance.starts}
    for removal in rebalance.removals:
        if (removal.member_id, removal.at_ms) in starters:
            continue
        text = removal_sentence(removal)
        lines.append(text[0].upper() + text[1:])
    for replacement in rebalance.replacements:
        text = replaced_sentence(replacement)
        lines.append(text[0].upper() + text[1:])
    for join in rebalance.joins:
        members = join.member_count or 0
        text = (
            f"The join phase ended after {duration(join.join_duration_ms)}, "
            f"when {waited_sentence(join.waited_for)}: generation {join.generation}"
        )
        if members:
            text += (
                f" with {plural(members, 'member')}, leader {join.leader_id}, "
                f"protocol {join.protocol}."
            )
        else:
            text += " with no members."
        lines.append(text)
        dropped = [m for m in join.removed_members or () if m]
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
    members = done.member_count or 0
    statics = done.static_member_count or 0
    if members:
        who = plural(members, "member")
        if statics:
            who += f" ({statics} static)"
        outcome = f"generation {done.generation} is stable with {who}"
        if done.protocol:
            outcome += f", protocol {done.protocol}"
    else:
        outcome = f"generation {done.generation} has no members: the group is empty"
    lines.append(
        f"Completed {when(done.completed_ms)} after {duration(done.duration_ms)}: {outcome}."
    )
    causes = [str(c) for c in done.causes or ()]
    if len(causes) > 1:
        lines.append("Causes, in order: " + "; ".join(cause_words(c) for c in causes) + ".")
    if not rebalance.joins and done.waited_for:
        lines.append(f"The join phase waited until {waited_sentence(done.waited_for)}.")
    return lines


def render_note(note: Note) -> str:
    text = note_sentence(note.event)
    return f"{when(note.at_ms)}: {text[0].upper()}{text[1:]}"


def explain(events: Iterable[Event], last: int | None = None) -> list[list[str]]:
    """The whole account: one list of sentences per rebalance or note, oldest first."""
    blocks = []
    for item in last_rebalances(timeline(events), last):
        blocks.append(render(item) if isinstance(item, Rebalance) else [render_note(item)])
    return blocks
