"""The consumer's sans-IO core: no sockets, no asyncio, no clock.

`GroupMembership` takes application inputs (subscribe, commit, metadata,
app poll) and responses, and answers `poll(now_ms) -> (requests, wake_at)`
plus a queue of events (revoke/assign/lost callbacks, commit results,
fatal errors) for the I/O loop to act on.
"""

from muster.client.core.membership import (
    Event,
    GroupMembership,
    MemberState,
    Request,
)

__all__ = ["Event", "GroupMembership", "MemberState", "Request"]
