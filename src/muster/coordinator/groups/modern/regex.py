"""Regular-expression subscriptions (KIP-848 `SubscribedTopicRegex`).

Kafka resolves a group's regular expressions off the heartbeat path, with
RE2/J, against every topic in its metadata image, and stores each resolution as a
ConsumerGroupRegularExpression record; a new resolution bumps the group
epoch, so the matched topics reach the target assignment on a later
heartbeat than the one that brought the regex (librdkafka's test 0045
expects exactly that: literal topics first, matched ones after).

Here the resolution runs at the end of the heartbeat that needs it (a
regex no resolution exists for, or one older than REFRESH_INTERVAL_MS),
after that heartbeat's target and reconciliation, with the same effect.
Matching is Python's `re.fullmatch` (RE2/J's `matches()`): the same for the
syntax RE2/J accepts except that Python also accepts backreferences and
lookarounds, which RE2/J refuses (those give INVALID_REGULAR_EXPRESSION on
Kafka and a working subscription here). Internal topics match too: Kafka 4.4
assigns `__consumer_offsets` to a `^.*` or `^__consumer_offsets` subscriber
(asked of it; franz-go's Test848RegexBrokerResolves relies on it). Clients
that resolve regexes themselves skip internal topics; the broker does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from muster.coordinator.context import Effects
from muster.coordinator.groups.modern.group import ConsumerGroup, regex_record

# Kafka re-resolves a group's regexes at most this often (it also waits for
# a new metadata image; here a stale resolution is simply redone)
REFRESH_INTERVAL_MS = 10_000


def resolve(pattern: str, names: Iterable[str]) -> frozenset[str]:
    compiled = re.compile(pattern)
    return frozenset(n for n in names if compiled.fullmatch(n))


def used(group: ConsumerGroup) -> set[str]:
    return {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}


Write = Callable[[object, object | None], None]  # appends and applies one record


def refresh(write: Write, fx: Effects, group: ConsumerGroup, image: object | None) -> bool:
    """Write the resolutions that changed and tombstone the regexes no member
    uses; True when a resolution changed (the caller bumps the group epoch)."""
    gid = group.group_id
    wanted = used(group)
    for regex in sorted(set(group.regexes) - wanted):
        write(*regex_record(gid, regex, None, fx.now))
    if image is None:
        return False
    changed = False
    for regex in sorted(wanted):
        known = group.regexes.get(regex)
        if known is not None and fx.now - known[1] < REFRESH_INTERVAL_MS:
            continue
        topics = resolve(regex, image)  # type: ignore[arg-type]
        if known is None or topics != known[0]:
            write(*regex_record(gid, regex, topics, fx.now))
            changed = True
    return changed
