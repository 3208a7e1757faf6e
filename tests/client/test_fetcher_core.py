"""The sans-IO fetch manager with a fake clock: positions, resets,
pipelined fetches, stale answers and errors. No sockets."""

from __future__ import annotations

from typing import Any

from muster.client.core.fetcher import EARLIEST, FetchManager
from muster.client.errors import KafkaConnectionError, OffsetError
from muster.client.types import TopicPartition
from muster.protocol.codec import build, response_schema
from muster.records.batch import Record, build_batch

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


def leaders(topic: str, partition: int) -> int | None:
    return 7


def no_leader(topic: str, partition: int) -> int | None:
    return None


def fetch_response(parts: dict[TopicPartition, dict[str, Any]]) -> Any:
    return build(
        response_schema(1, 12),
        {
            "responses": [
                {
                    "topic": tp.topic,
                    "partitions": [{"partition_index": tp.partition, **fields}],
                }
                for tp, fields in parts.items()
            ]
        },
    )


def list_offsets_response(offsets: dict[TopicPartition, int]) -> Any:
    return build(
        response_schema(2, 7),
        {
            "topics": [
                {"name": tp.topic, "partitions": [{"partition_index": tp.partition, "offset": o}]}
                for tp, o in offsets.items()
            ]
        },
    )


def batch(base: int, n: int, control: bool = False) -> bytes:
    return build_batch(
        [Record(b"k%d" % i, b"v%d" % i, [("h", b"x")], 1000 + i) for i in range(n)],
        base_offset=base,
        control=control,
    )


def manager(**kw: Any) -> FetchManager:
    options: dict[str, Any] = {"default_reset": EARLIEST, "use_committed": False}
    options.update(kw)
    return FetchManager(**options)


def one(requests, kind):
    matching = [r for r in requests if r.kind == kind]
    assert len(matching) == 1, requests
    return matching[0]


def test_reset_then_fetch_then_pipeline():
    f = manager(max_poll_records=3)
    f.assign([TP0])
    reqs, _ = f.poll(0, leaders)
    lo = one(reqs, "list_offsets")
    assert lo.node == 7 and lo.body["topics"][0]["partitions"][0]["timestamp"] == EARLIEST
    assert f.poll(0, leaders)[0] == []  # one reset in flight
    f.on_response(lo, list_offsets_response({TP0: 0}), 0)
    assert f.position(TP0) == 0
    fetch = one(f.poll(0, leaders)[0], "fetch")
    assert fetch.body["topics"][0]["partitions"][0]["fetch_offset"] == 0
    assert fetch.body["max_wait"] == 500
    assert f.poll(0, leaders)[0] == []  # one fetch per broker
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 5), "high_watermark": 5}}), 0)
    records = f.take_records()
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (i, b"k%d" % i, b"v%d" % i, (("h", b"x"),)) for i in range(3)
    ]
    assert records[0].timestamp == 1000 and f.position(TP0) == 3
    # the partition still has buffered records: no fetch for it yet
    assert f.poll(0, leaders)[0] == []
    assert [r.offset for r in f.take_records()] == [3, 4]
    fetch = one(f.poll(0, leaders)[0], "fetch")
    assert fetch.body["topics"][0]["partitions"][0]["fetch_offset"] == 5


def test_draining_partition_makes_other_fetches_not_long_poll():
    f = manager()
    f.assign([TP0, TP1])
    f.seek(TP0, 0)
    f.seek(TP1, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 2)}, TP1: {}}), 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    assert [p["partition"] for p in fetch.body["topics"][0]["partitions"]] == [1]
    assert fetch.body["max_wait"] == 0


def test_committed_offsets_first_then_reset_when_none():
    f = manager(use_committed=True)
    f.assign([TP0, TP1])
    committed = one(f.poll(0, leaders)[0], "committed")
    assert committed.to == "group" and set(committed.tag) == {TP0, TP1}
    f.on_response(committed, {TP0: 42, TP1: None}, 0)
    assert f.position(TP0) == 42 and f.position(TP1) is None
    reqs, _ = f.poll(0, leaders)
    lo = one(reqs, "list_offsets")
    assert lo.tag == {TP1: EARLIEST}
    assert one(reqs, "fetch").tag == {TP0: 42}


def test_out_of_range_resets_and_none_policy_raises():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 100)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"error_code": 1}}), 0)
    assert f.position(TP0) is None
    assert one(f.poll(0, leaders)[0], "list_offsets").tag == {TP0: EARLIEST}
    strict = manager(default_reset=None)
    strict.assign([TP0])
    strict.seek(TP0, 100)
    fetch = one(strict.poll(0, leaders)[0], "fetch")
    strict.on_response(fetch, fetch_response({TP0: {"error_code": 1}}), 0)
    assert isinstance(strict.errors.popleft(), OffsetError)
    none_policy = manager(default_reset=None)
    none_policy.assign([TP0])
    assert none_policy.poll(0, leaders)[0] == []
    assert isinstance(none_policy.errors.popleft(), OffsetError)


def test_leader_moved_and_unknown_leader_refresh_metadata():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"error_code": 6}}), 0)  # NOT_LEADER
    meta = one(f.poll(0, no_leader)[0], "metadata")
    assert meta.body["topics"] == ["t"]
    f.on_response(meta, None, 0)
    assert one(f.poll(200, leaders)[0], "fetch").tag == {TP0: 0}


def test_connection_failure_backs_off_then_retries():
    f = manager(retry_backoff_ms=100)
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_failure(fetch, KafkaConnectionError("gone"), 1_000)
    reqs, wake_at = f.poll(1_000, leaders)
    assert [r.kind for r in reqs] == ["metadata"] and wake_at == 1_100
    f.on_response(reqs[0], None, 1_000)
    assert one(f.poll(1_100, leaders)[0], "fetch").tag == {TP0: 0}


def test_answers_for_a_seeked_partition_are_dropped():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.seek(TP0, 3)
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 5)}}), 0)
    assert f.take_records() == []
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 5)}}), 0)
    assert [r.offset for r in f.take_records()] == [3, 4]  # mid-batch start


def test_control_batches_are_skipped_and_position_moves_past_them():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    data = batch(0, 2) + batch(2, 1, control=True)
    f.on_response(fetch, fetch_response({TP0: {"records": data}}), 0)
    assert [r.offset for r in f.take_records()] == [0, 1]
    assert f.position(TP0) == 3


def test_paused_partitions_are_not_fetched_or_returned():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 2)}}), 0)
    f.pause([TP0])
    assert f.take_records() == [] and f.poll(0, leaders)[0] == []
    f.resume([TP0])
    assert one(f.poll(0, leaders)[0], "fetch").tag == {TP0: 0}


def test_corrupt_batch_is_an_error_not_a_crash():
    f = manager()
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    data = bytearray(batch(0, 2))
    data[-3:] = b"\xff\xff\xff"  # garble the last record
    f.on_response(fetch, fetch_response({TP0: {"records": bytes(data)}}), 0)
    assert f.errors and "corrupt" in str(f.errors.popleft())


def test_prefetch_behind_buffered_records_while_broker_has_more():
    f = manager(max_poll_records=100)
    f.assign([TP0])
    f.seek(TP0, 0)
    fetch = one(f.poll(0, leaders)[0], "fetch")
    f.on_response(fetch, fetch_response({TP0: {"records": batch(0, 5), "high_watermark": 12}}), 0)
    # records 0..4 buffered, the broker has up to 11: fetch 5.. now, without long poll
    prefetch = one(f.poll(0, leaders)[0], "fetch")
    assert prefetch.body["topics"][0]["partitions"][0]["fetch_offset"] == 5
    assert prefetch.body["max_wait"] == 0
    f.on_response(
        prefetch, fetch_response({TP0: {"records": batch(5, 4), "high_watermark": 12}}), 0
    )
    assert f.poll(0, leaders)[0] == []  # two answers buffered: enough
    assert [r.offset for r in f.take_records()] == list(range(9))
    assert f.position(TP0) == 9
    fetch = one(f.poll(0, leaders)[0], "fetch")
    assert fetch.body["topics"][0]["partitions"][0]["fetch_offset"] == 9
    # a seek drops the buffer and makes an answer to the old fetch stale
    f.seek(TP0, 3)
    f.on_response(fetch, fetch_response({TP0: {"records": batch(9, 3), "high_watermark": 12}}), 0)
    assert f.take_records() == []
    assert f.position(TP0) == 3
