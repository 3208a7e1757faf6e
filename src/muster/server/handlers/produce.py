"""Produce: batches go to the log as received; the answer waits for fsync."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from muster.records.batch import ATTRIBUTES_OFFSET, TRANSACTIONAL_MASK
from muster.records.errors import CodedError
from muster.records.v2 import HEADER_SIZE, read_header
from muster.security.acl import Operation
from muster.server import authz
from muster.server.clock import now_ms
from muster.server.handlers.common import resolve_topic
from muster.server.handlers.metadata import INTERNAL_TOPICS
from muster.server.state import RequestContext
from muster.transactions.core import TxnStatus

log = logging.getLogger(__name__)


def _partition_result(index: int, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": error,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": message,
    }


# OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
# UNKNOWN_PRODUCER_ID, PRODUCER_FENCED
_PRODUCER_STATE_ERRORS = frozenset({45, 46, 47, 59, 90})


def _transaction_refusal(
    ctx: RequestContext, txn_id: str | None, topic: str, partition: int, records: Any
) -> ErrorCode | None:
    """Kafka's checks of a transactional batch before it reaches the log: it needs
    the request's transactional id, and its partition in that id's ongoing
    transaction (else an open transaction nobody ends would hold read_committed
    consumers at the last stable offset forever)."""
    if len(records) <= ATTRIBUTES_OFFSET + 1:
        return None  # not a batch: the log's validation answers it
    attributes = int.from_bytes(records[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2], "big")
    if not attributes & TRANSACTIONAL_MASK:
        return None
    if txn_id is None:
        return ErrorCode.transactional_id_authorization_failed
    coordinator = ctx.state.services.transactions
    if coordinator is None or not coordinator.loaded:
        return None
    meta = coordinator.txns.get(txn_id)
    if meta is not None and len(records) >= HEADER_SIZE:
        # Kafka verifies the batch's producer with the coordinator before the
        # partition (KIP-890): a fenced producer hears INVALID_PRODUCER_EPOCH,
        # which librdkafka and the Java producer treat as fatal, not the
        # abortable INVALID_TXN_STATE.
        header = read_header(records)
        if header.producer_id != meta.producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if header.producer_epoch != meta.producer_epoch:
            return ErrorCode.invalid_producer_epoch
    if (
        meta is None
        or meta.status != TxnStatus.ONGOING
        or (topic, partition) not in meta.partitions
    ):
        return ErrorCode.invalid_txn_state
    return None


async def handle_produce(ctx: RequestContext, req: Any) -> dict[str, Any] | None:
    state = ctx.state
    acks = int(req.acks)
    touched: dict[int, Any] = {}
    responses = []
    stamp = now_ms()
    txn_id = getattr(req, "transactional_id", None)
    txn_denied = txn_id is not None and not authz.transactional_id(ctx, Operation.WRITE, txn_id)
    denied = (
        set()
        if txn_denied
        else authz.denied_topics(ctx, Operation.WRITE, (t.name for t in req.topic_data))
    )
    for topic in req.topic_data:
        name = topic.name
        parts = []
        if txn_denied:
            topic_error = ErrorCode.transactional_id_authorization_failed
        elif name in denied:
            topic_error = ErrorCode.topic_authorization_failed
        elif acks not in (-1, 0, 1):
            topic_error = ErrorCode.invalid_required_acks
        elif name in INTERNAL_TOPICS:
            # like Kafka: only the broker itself appends to its internal topics
            topic_error = ErrorCode.invalid_topic_exception
        else:
            exists = state.logs.topic(name) is not None
            topic_error = resolve_topic(state, name, exists or authz.may_create_topic(ctx, name))
        for pdata in topic.partition_data:
            index = pdata.index
            if topic_error != ErrorCode.none:
                parts.append(_partition_result(index, topic_error))
                continue
            plog = state.logs.get(name, index)
            if plog is None:
                parts.append(_partition_result(index, ErrorCode.unknown_topic_or_partition))
                continue
            records = pdata.records
            if not records:
                # Kafka (v3+): exactly one record batch, else INVALID_RECORD
                parts.append(_partition_result(index, ErrorCode.invalid_record, "no records"))
                continue
            refused = _transaction_refusal(ctx, txn_id, name, index, records)
            if refused is not None:
                parts.append(_partition_result(index, refused))
                continue
            try:
                info = plog.append(records, stamp)
            except CodedError as exc:
                log.info("produce to %s-%d refused: %s", name, index, exc)
                part = _partition_result(index, ErrorCode(exc.error_code), str(exc))
                if exc.error_code in _PRODUCER_STATE_ERRORS:  # Kafka reports it with these
                    part["log_start_offset"] = plog.log_start_offset
                parts.append(part)
                continue
            if not info.duplicate:
                state.durability.appended(plog)
            touched[id(plog)] = plog
            parts.append(
                {
                    "index": index,
                    "error_code": ErrorCode.none,
                    "base_offset": info.base_offset,
                    "log_append_time": info.log_append_time_ms,
                    "log_start_offset": info.log_start_offset,
                    "record_errors": [],
                    "error_message": None,
                }
            )
        responses.append({"name": name, "partition_responses": parts})
    if acks == 0:
        return None
    durability = state.durability
    # only fsync=always makes an answer wait: otherwise the request completes
    # without a task (a gather made one per partition, and the request's own)
    if touched and durability.policy == "always":
        plogs = list(touched.values())
        try:
            if len(plogs) == 1:
                await durability.wait(plogs[0])
            else:
                await asyncio.gather(*(durability.wait(p) for p in plogs))
        except OSError as exc:
            log.error("produce not made durable: %s", exc)
            for topic_resp in responses:
                for part in topic_resp["partition_responses"]:
                    if part["error_code"] == ErrorCode.none:
                        part.update(error_code=ErrorCode.kafka_storage_error, base_offset=-1)
    return {"responses": responses, "throttle_time": 0}
