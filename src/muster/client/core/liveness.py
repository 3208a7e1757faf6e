"""A consumer group member staying alive in its group: heartbeats, the
`max.poll.interval.ms` check, and LeaveGroup (Kafka's heartbeat thread and
maybeLeaveGroup). A mixin of `GroupMembership`, whose state it reads."""

from __future__ import annotations

from typing import Any

from muster.client.core.member_state import MemberState
from muster.client.core.messages import (
    COORDINATOR_ERRORS,
    HEARTBEAT,
    ILLEGAL_GENERATION,
    LEAVE_GROUP,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    Request,
)
from muster.client.errors import error_for


class Liveness:
    def _check_poll_interval(self, now_ms: int, out: list[Request]) -> None:
        if self.state is MemberState.UNJOINED or self._left_for_poll_timeout:
            return
        if now_ms - self._last_app_poll <= self.max_poll_interval_ms:
            return
        # The app is stuck: leave so the group can move on (Java's
        # maybeLeaveGroup("consumer poll timeout has expired")).
        out.extend(self._leave_requests(now_ms, "consumer poll timeout has expired"))
        self._left_for_poll_timeout = True

    def _heartbeat_step(self, now_ms: int, out: list[Request]) -> None:
        if self.state is not MemberState.STABLE:
            return
        if now_ms - self._last_heartbeat_ok > self.session_timeout_ms:
            # No answer for a whole session: the coordinator is gone for us.
            self._coordinator_dead()
            return
        if "heartbeat" in self._in_flight or now_ms < self._next_heartbeat:
            return
        self._in_flight.add("heartbeat")
        self._next_heartbeat = now_ms + self.heartbeat_interval_ms
        out.append(
            Request(
                "heartbeat",
                HEARTBEAT,
                {
                    "group_id": self.group_id,
                    "generation_id": self.generation,
                    "member_id": self.member_id,
                    "group_instance_id": self.group_instance_id,
                },
                "coordinator",
                self.generation,
            )
        )

    def _leave_requests(self, now_ms: int, reason: str, reset: bool = True) -> list[Request]:
        out = []
        dynamic = self.group_instance_id is None
        if dynamic and self.member_id and self.coordinator is not None:
            out.append(
                Request(
                    "leave",
                    LEAVE_GROUP,
                    {
                        "group_id": self.group_id,
                        "member_id": self.member_id,
                        "members": [
                            {
                                "member_id": self.member_id,
                                "group_instance_id": None,
                                "reason": reason,
                            }
                        ],
                    },
                    "coordinator",
                )
            )
        if reset:
            self._reset_generation(keep_member_id=not dynamic)
        return out

    def _on_heartbeat(self, request: Request, response: Any, now_ms: int) -> None:
        self._in_flight.discard("heartbeat")
        if request.tag != self.generation or self.state is not MemberState.STABLE:
            return
        code = int(response.error_code)
        if code == NONE:
            self._last_heartbeat_ok = now_ms
            return
        if code == REBALANCE_IN_PROGRESS:
            self._last_heartbeat_ok = now_ms
            self.request_rejoin("the group is rebalancing")
            return
        if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._lose_all()
            self._reset_generation(keep_member_id=code != UNKNOWN_MEMBER_ID)
            return
        if code in COORDINATOR_ERRORS:
            self._coordinator_dead()
            return
        self._fail(error_for(code, "Heartbeat"))

    def _on_leave(self, request: Request, response: Any, now_ms: int) -> None:
        pass  # best effort, as Java's: the member is gone either way
