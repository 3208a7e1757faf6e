"""CreateTopics, DeleteTopics, CreatePartitions."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from muster.coordinator.topics import EVENTS_TOPIC
from muster.log.config import TOPIC_CONFIGS, InvalidConfigError, LogConfig
from muster.log.manager import valid_topic_name
from muster.log.port import LogError
from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.common import shown
from muster.server.state import RequestContext

# Kafka's controller refuses an operation of more than 10,000 records
# (QuorumController.MAX_RECORDS_PER_USER_OP: a topic and each of its partitions
# is one) with POLICY_VIOLATION; here a partition is a directory and an open
# file, so one request cannot ask for 100,000 of them either.
MAX_PARTITIONS_PER_REQUEST = 10_000
TOO_LARGE = "Unable to perform excessively large batch operation."

log = logging.getLogger(__name__)

PROTECTED = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state", EVENTS_TOPIC}
)
# Kafka topic configs accepted and kept, though one broker gives them no effect.
ACCEPTED_WITHOUT_EFFECT = frozenset(
    {
        "min.insync.replicas",
        "message.format.version",
        "compression.type",
        "unclean.leader.election.enable",
        "flush.messages",
        "flush.ms",
        "file.delete.delay.ms",
        "preallocate",
        "message.downconversion.enable",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "segment.index.bytes",
        "segment.jitter.ms",
        "message.timestamp.difference.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.storage.enable",
    }
)


def check_topic_configs(broker: Mapping[str, Any], configs: dict[str, str]) -> str | None:
    """None if Kafka would accept these topic configs, else why not."""
    for name in configs:
        if name not in TOPIC_CONFIGS and name not in ACCEPTED_WITHOUT_EFFECT:
            return f"unknown topic config {name!r}"
    try:
        LogConfig.resolve(broker, configs)
    except InvalidConfigError as exc:
        return str(exc)
    return None


def _create_one(ctx: RequestContext, t: Any, validate_only: bool) -> dict[str, Any]:
    state = ctx.state
    name = t.name
    result: dict[str, Any] = {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": ErrorCode.none,
        "error_message": None,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }

    def fail(code: ErrorCode, message: str) -> dict[str, Any]:
        result.update(error_code=code, error_message=message)
        return result

    if not authz.may_create_topic(ctx, name):
        return fail(ErrorCode.topic_authorization_failed, "Authorization failed.")
    if not valid_topic_name(name):
        return fail(ErrorCode.invalid_topic_exception, f"invalid topic name {shown(name)}")
    if name in state.logs.topics():
        return fail(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
    partitions = t.num_partitions if t.num_partitions != -1 else int(state.config["num.partitions"])
    if getattr(t, "assignments", ()):
        partitions = len(t.assignments)
    if partitions <= 0:
        return fail(ErrorCode.invalid_partitions, "number of partitions must be larger than 0")
    if t.replication_factor not in (-1, 1) and not t.assignments:
        return fail(
            ErrorCode.invalid_replication_factor,
            f"replication factor {t.replication_factor} is larger than the 1 available broker",
        )
    configs = {c.name: c.value for c in t.configs}
    problem = check_topic_configs(state.config, configs)
    if problem is not None:
        return fail(ErrorCode.invalid_config, problem)
    result.update(num_partitions=partitions, replication_factor=1)
    if validate_only:
        return result
    try:
        info = state.logs.create_topic(name, partitions, configs)
    except LogError as exc:  # e.g. 'a.b' when 'a_b' exists (Kafka: INVALID_TOPIC_EXCEPTION)
        return fail(ErrorCode(exc.error_code), str(exc)[:300])
    result["topic_id"] = info.topic_id
    if ctx.api_version >= 5:  # Kafka (KIP-525): the new topic's configs, as described
        from muster.server.handlers.configs import created_topic_configs

        result["configs"] = created_topic_configs(ctx, name)
    return result


async def handle_create_topics(ctx: RequestContext, req: Any) -> dict[str, Any]:
    validate_only = bool(getattr(req, "validate_only", False))
    default = int(ctx.state.config["num.partitions"])
    wanted = sum(
        len(t.assignments) or (t.num_partitions if t.num_partitions != -1 else default)
        for t in req.topics
    )
    if wanted > MAX_PARTITIONS_PER_REQUEST:
        log.warning("CreateTopics for %d partitions refused: %s", wanted, TOO_LARGE)
        return {"throttle_time": 0, "topics": [_too_large(t.name) for t in req.topics]}
    # Like Kafka: a name given twice is answered once, INVALID_REQUEST, and not created
    names = [t.name for t in req.topics]
    twice = {n for n in names if names.count(n) > 1}
    topics = [_create_one(ctx, t, validate_only) for t in req.topics if t.name not in twice]
    for name in sorted(twice):
        topics.append(
            {
                **_too_large(name),
                "error_code": ErrorCode.invalid_request,
                "error_message": f"Create topics request from client contains a duplicate "
                f"topic: {name}.",
            }
        )
    return {"throttle_time": 0, "topics": topics}


def _too_large(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": ErrorCode.policy_violation,
        "error_message": TOO_LARGE,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


async def handle_delete_topics(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(n, None) for n in req.topic_names]
    by_id = {info.topic_id: n for n, info in state.logs.topics().items()}
    responses = []
    for name, tid in wanted:
        if name is None and tid is not None:
            name = by_id.get(tid)
        entry: dict[str, Any] = {
            "name": name,
            "topic_id": tid or uuid.UUID(int=0),
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        if name is None:
            entry["error_code"] = ErrorCode.unknown_topic_id
        elif not authz.topic(ctx, Operation.DELETE, name):
            entry["error_code"] = ErrorCode.topic_authorization_failed
        elif name in PROTECTED:
            entry["error_code"] = ErrorCode.invalid_topic_exception
            entry["error_message"] = "internal topics cannot be deleted"
        elif name not in state.logs.topics():
            entry["error_code"] = ErrorCode.unknown_topic_or_partition
        else:
            info = state.logs.topics()[name]
            entry["topic_id"] = info.topic_id
            state.logs.delete_topic(name)
            coordinator = state.services.coordinator
            if coordinator is not None:
                gone = [(name, p) for p in range(info.num_partitions)]
                for shard in coordinator.shards:
                    shard.delete_partitions(gone)
        responses.append(entry)
    return {"throttle_time": 0, "responses": responses}


async def handle_create_partitions(ctx: RequestContext, req: Any) -> dict[str, Any]:
    state = ctx.state
    results = []
    for t in req.topics:
        entry: dict[str, Any] = {
            "name": t.name,
            "error_code": ErrorCode.none,
            "error_message": None,
        }
        info = state.logs.topics().get(t.name)
        if not authz.topic(ctx, Operation.ALTER, t.name):
            entry["error_code"] = ErrorCode.topic_authorization_failed
        elif info is None:
            entry["error_code"] = ErrorCode.unknown_topic_or_partition
        elif t.count <= info.num_partitions:
            entry["error_code"] = ErrorCode.invalid_partitions
            entry["error_message"] = (
                f"topic has {info.num_partitions} partitions; the new count must be larger"
            )
        elif t.assignments and (
            len(t.assignments) != t.count - info.num_partitions
            or any(b != state.node_id for a in t.assignments for b in a.broker_ids)
        ):  # Kafka: every new partition's replicas, on brokers that exist
            entry["error_code"] = ErrorCode.invalid_replica_assignment
            entry["error_message"] = "invalid replica assignment for the new partitions"
        elif t.count - info.num_partitions > MAX_PARTITIONS_PER_REQUEST:
            log.warning("CreatePartitions to %d refused: %s", t.count, TOO_LARGE)
            entry["error_code"] = ErrorCode.policy_violation
            entry["error_message"] = TOO_LARGE
        elif not req.validate_only:
            state.logs.add_partitions(t.name, t.count)
        results.append(entry)
    return {"throttle_time": 0, "results": results}
