"""The consumer's sans-IO core: no sockets, no asyncio, no clock.

`GroupMembership` takes application inputs (subscribe, commit, metadata,
app poll) and responses, and answers `poll(now_ms) -> (requests, wake_at)`
plus a queue of events (revoke/assign/lost callbacks, commit results,
fatal errors) for the I/O loop to act on. The names below resolve on first
use (muster._lazy).
"""

from muster._lazy import lazy_exports

_EXPORTS = {
    name: "muster.client.core.membership"
    for name in ("Event", "GroupMembership", "MemberState", "Request")
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
