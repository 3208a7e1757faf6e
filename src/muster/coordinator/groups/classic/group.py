"""A classic group and its members: plain data plus the small rules that only
look at the group itself (admission, protocol voting, static identities)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from muster.coordinator.context import Effects
from muster.coordinator.events import GroupStateChanged
from muster.coordinator.groups.classic.state import GroupState, JoinPhase, check_transition
from muster.coordinator.groups.subscription import subscribed_topics
from muster.records.offsets_topic import GroupMetadataValue, MemberMetadataValue

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: int | None = None  # request id of a parked JoinGroup
    awaiting_sync: int | None = None  # request id of a parked SyncGroup
    is_new: bool = False
    supports_skip_assignment: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)

    def vote(self, candidates: set[str]) -> str:
        for name in self.protocol_names():
            if name in candidates:
                return name
        raise AssertionError("member supports none of the candidate protocols")


@dataclass
class RebalanceTrace:
    """What the analytics want to know about the rebalance in flight."""

    started_ms: int
    causes: list[str] = field(default_factory=list)
    join_completed_ms: int = -1
    waited_for: str = ""


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int | None = None
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None
    # the join phase in progress (PreparingRebalance), else None; while the
    # initial delay runs: its current delay and what is left of the rebalance timeout
    join_phase: JoinPhase | None = None
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    join_deadline_ms: int = 0  # when the join timer fires (told in JoinWaiting events)
    trace: RebalanceTrace | None = None
    # bookkeeping of this group's GroupMetadata writes (transient): stores
    # appended so far and the last one known durable, in append order; the
    # record itself is durable state of the GroupStore (`GroupStore.persisted`)
    storing_generation: int | None = None  # SyncGroup's store in flight
    store_seq: int = 0  # group records appended so far (orders their completions)
    persisted_seq: int = 0
    # this incarnation is described by a durable GroupMetadata record (it was
    # loaded from one, or one of its stores is durable)
    has_record: bool = False

    @classmethod
    def from_record(cls, group_id: str, v: GroupMetadataValue) -> ClassicGroup:
        """The group a GroupMetadata record describes (loading): Stable with its
        members, or Empty."""
        group = cls(group_id)
        group.state = GroupState.STABLE if v.members else GroupState.EMPTY
        cst = v.current_state_timestamp
        group.state_timestamp = cst if cst >= 0 else None
        group.generation = v.generation
        group.protocol_type = v.protocol_type or None
        group.protocol_name = v.protocol
        group.leader_id = v.leader
        for m in v.members:
            group.members[m.member_id] = Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout,
                session_timeout_ms=m.session_timeout,
                protocol_type=group.protocol_type or "",
                protocols=[(v.protocol or "", m.subscription)],
                assignment=m.assignment,
            )
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        group.subscribed_topics = group.compute_subscribed_topics()
        group.has_record = True
        return group

    # ---- state -------------------------------------------------------------

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, new: GroupState, cause: str, fx: Effects) -> None:
        check_transition(self.state, new)
        old = self.state
        self.state = new
        self.state_timestamp = fx.now
        fx.emit(
            GroupStateChanged(self.group_id, old.value, new.value, self.generation, cause, fx.now)
        )

    def can_rebalance(self) -> bool:
        return self.state in (
            GroupState.STABLE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
        )

    # ---- membership --------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        """The rebalance timeout: how long a join phase waits for members to
        rejoin and the sync phase for their SyncGroup (Kafka: the largest
        rebalance.timeout.ms of the members)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            if self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def validate_current_member(self, member_id: str, instance_id: str | None) -> int | None:
        """Kafka's check that a request comes from the current holder of its
        identity: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID (25) or None."""
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return 25  # UNKNOWN_MEMBER_ID
            if current != member_id:
                return 82  # FENCED_INSTANCE_ID
            return None
        return None if member_id in self.members else 25

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for mid, m in self.members.items():
            if m.awaiting_join is not None:
                self.leader_id = mid
                return True
        return False

    # ---- protocols (spec §8) ----------------------------------------------

    def candidate_protocols(self) -> set[str]:
        counts: Counter[str] = Counter()
        for m in self.members.values():
            counts.update(set(m.protocol_names()))
        return {name for name, n in counts.items() if n == len(self.members)}

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        candidates = self.candidate_protocols()
        return any(n in candidates for n in names)

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        # most votes wins; ties go to the protocol named first by the members
        best = max(votes.values())
        for m in self.members.values():
            for name in m.protocol_names():
                if votes.get(name) == best:
                    return name
        raise AssertionError("no protocol selected")

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            sub = subscribed_topics(m.metadata(self.protocol_name))
            if sub is None:
                return None
            topics |= sub
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_topics is not None and topic in self.subscribed_topics

    # ---- persistence -------------------------------------------------------

    def to_record(self, assignment: dict[str, bytes] | None = None) -> GroupMetadataValue:
        members = tuple(
            MemberMetadataValue(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name),
                assignment=(assignment or {}).get(m.member_id, m.assignment)
                if assignment is not None
                else m.assignment,
            )
            for m in self.members.values()
        )
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp=-1 if self.state_timestamp is None else self.state_timestamp,
            members=members,
        )
