"""FindCoordinator v0-6: group and transaction keys, batched keys (v4+), errors."""

from __future__ import annotations

from conformance.kafka_diff.registry import register
from conformance.kafka_diff.session import Session

FIND = 10


def _group(v: int):
    def run(s: Session) -> None:
        g = s.name("g")
        body = {"key": g, "key_type": 0, "coordinator_keys": [g]}
        s.call(FIND, v, body, "find_group")

    return run


def _txn(v: int):
    def run(s: Session) -> None:
        t = s.name("t")
        body = {"key": t, "key_type": 1, "coordinator_keys": [t]}
        # Kafka creates __transaction_state on first use; retry until it is ready
        s.wait(lambda: _ok(s.call(FIND, v, body, record=False)), 30)
        s.call(FIND, v, body, "find_txn")

    return run


def _ok(answer: object) -> bool:
    if not isinstance(answer, dict):
        return False
    if answer.get("coordinators"):
        return all(c["error_code"] == 0 for c in answer["coordinators"])
    return answer.get("error_code") == 0


def _bad_type(v: int):
    def run(s: Session) -> None:
        body = {"key": s.name("x"), "key_type": 7, "coordinator_keys": [s.name("x")]}
        s.call(FIND, v, body, "find_bad_type")

    return run


def batched(s: Session) -> None:
    keys = [s.name("a"), s.name("b"), s.name("c")]
    s.call(FIND, 4, {"key_type": 0, "coordinator_keys": keys}, "batch3")
    s.call(FIND, 6, {"key_type": 0, "coordinator_keys": []}, "batch_empty")


def empty_group_key(s: Session) -> None:
    for v in (0, 3, 4):
        s.call(FIND, v, {"key": "", "key_type": 0, "coordinator_keys": [""]}, f"empty_v{v}")


def share_key(s: Session) -> None:
    # key type 2 (share: group:topic:partition) is v6 only
    s.call(FIND, 6, {"key_type": 2, "coordinator_keys": [f"{s.name('g')}:t:0"]}, "share")


for _v in range(7):
    register("find_coordinator", f"group_v{_v}", _group(_v))
for _v in range(1, 7):
    register("find_coordinator", f"txn_v{_v}", _txn(_v))
for _v in (1, 3, 4, 6):
    register("find_coordinator", f"bad_key_type_v{_v}", _bad_type(_v))
register("find_coordinator", "batched", batched)
register("find_coordinator", "empty_group_key", empty_group_key)
register("find_coordinator", "share_key", share_key)
