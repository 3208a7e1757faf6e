"""One exception hierarchy for muster's client.

Every error a user sees is a `KafkaError` with `.code` (Kafka's error code,
or -1 for client-side conditions such as a lost connection) and
`.retriable`. Subclasses name the family, so callers can catch what they can
act on:

- `RetriableError` families (the client retries these itself where it can and
  surfaces them only once its timeouts are spent): `KafkaConnectionError`,
  `KafkaTimeoutError`, `CoordinatorError` (NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS),
  `LeadershipError` (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, ...),
  `RebalanceError` (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID: the consumer rejoins).
- Fatal families (retrying the same call will not help): `ConfigError`,
  `AuthorizationError`, `TopicError` (unknown or invalid topic),
  `OffsetError` (OFFSET_OUT_OF_RANGE with no reset policy), `ProducerFencedError`
  and `SequenceError` (idempotent producer state is broken), `FencedInstanceError`
  (another consumer took this group.instance.id), `UnsupportedError` (the broker
  lacks an API or version), `ProtocolError` (undecodable or unexpected answers).
  `KafkaError` itself is used for codes without a family.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class KafkaError(Exception):
    code: int = -1
    retriable: bool = False

    def __init__(self, message: str = "", code: int | None = None, retriable: bool | None = None):
        if code is not None:
            self.code = code
        if retriable is not None:
            self.retriable = retriable
        self.message = message or _code_name(self.code)
        super().__init__(self.message)

    @property
    def name(self) -> str:
        return _code_name(self.code)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, {self.message!r})"


class RetriableError(KafkaError):
    retriable = True


class KafkaConnectionError(RetriableError):
    """The connection to a broker failed or closed with requests in flight."""


class KafkaTimeoutError(RetriableError):
    """An operation did not finish in time."""

    code = ErrorCode.request_timed_out.value


class CoordinatorError(RetriableError):
    """The group coordinator moved or is not ready: rediscover it."""


class LeadershipError(RetriableError):
    """The partition leader moved or is not known: refresh metadata."""


class RebalanceError(RetriableError):
    """The group is rebalancing or this member's generation is stale: rejoin."""


class CommitFailedError(KafkaError):
    """A commit failed because the group rebalanced; the partitions may have
    moved, so the commit cannot simply be retried (as Java's)."""


class ConfigError(KafkaError):
    """Invalid client configuration or arguments."""


class AuthorizationError(KafkaError):
    """Not authorized."""


class TopicError(KafkaError):
    """An unknown, invalid or already existing topic."""


class OffsetError(KafkaError):
    """An offset outside the log with no auto.offset.reset to fall back on."""


class ProducerFencedError(KafkaError):
    """Another producer with the same id fenced this one."""


class SequenceError(KafkaError):
    """Idempotent produce sequence broken (OUT_OF_ORDER_SEQUENCE_NUMBER...)."""


class FencedInstanceError(KafkaError):
    """Another consumer with this group.instance.id took over."""


class UnsupportedError(KafkaError):
    """The broker does not support an API or version the client needs."""


class ProtocolError(KafkaError):
    """An answer the client could not decode or did not expect."""


class GroupError(KafkaError):
    """A group-level failure (invalid group id, group not empty, ...)."""


_E = ErrorCode
_FAMILIES: dict[int, type[KafkaError]] = {}
for _cls, _codes in (
    (
        CoordinatorError,
        (_E.not_coordinator, _E.coordinator_not_available, _E.coordinator_load_in_progress),
    ),
    (
        LeadershipError,
        (
            _E.not_leader_or_follower,
            _E.leader_not_available,
            _E.fenced_leader_epoch,
            _E.unknown_leader_epoch,
            _E.not_enough_replicas,
            _E.not_enough_replicas_after_append,
        ),
    ),
    (
        RebalanceError,
        (
            _E.rebalance_in_progress,
            _E.illegal_generation,
            _E.unknown_member_id,
            _E.member_id_required,
        ),
    ),
    (
        AuthorizationError,
        (
            _E.topic_authorization_failed,
            _E.group_authorization_failed,
            _E.cluster_authorization_failed,
        ),
    ),
    (
        TopicError,
        (
            _E.unknown_topic_or_partition,
            _E.invalid_topic_exception,
            _E.topic_already_exists,
            _E.invalid_partitions,
            _E.invalid_replication_factor,
            _E.unknown_topic_id,
        ),
    ),
    (OffsetError, (_E.offset_out_of_range,)),
    (ProducerFencedError, (_E.producer_fenced, _E.invalid_producer_epoch)),
    (
        SequenceError,
        (_E.out_of_order_sequence_number, _E.unknown_producer_id, _E.invalid_producer_id_mapping),
    ),
    (FencedInstanceError, (_E.fenced_instance_id,)),
    (UnsupportedError, (_E.unsupported_version, _E.unsupported_for_message_format)),
    (
        GroupError,
        (
            _E.invalid_group_id,
            _E.non_empty_group,
            _E.group_id_not_found,
            _E.group_max_size_reached,
            _E.inconsistent_group_protocol,
            _E.invalid_session_timeout,
            _E.group_subscribed_to_topic,
        ),
    ),
):
    for _code in _codes:
        _FAMILIES[_code.value] = _cls


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return "CLIENT_ERROR" if code == -1 else f"ERROR_{code}"


def is_retriable(code: int) -> bool:
    try:
        return bool(ErrorCode(code).retriable)
    except ValueError:
        return False


def error_for(code: int, message: str | None = None) -> KafkaError:
    """The exception for a Kafka error code (code 0 is not an error)."""
    code = int(code)
    cls = _FAMILIES.get(code, KafkaError)
    retriable = cls.retriable or is_retriable(code)
    text = _code_name(code) + (f": {message}" if message else "")
    return cls(text, code=code, retriable=retriable)


def raise_for(code: int, message: str | None = None) -> None:
    if int(code) != 0:
        raise error_for(code, message)
