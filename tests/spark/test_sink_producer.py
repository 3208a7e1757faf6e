"""The sink's writer loop (`produce_all`) on muster's own Producer, without a
Spark session: keys, values, headers, explicit partitions, then read back."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from muster.client import Admin, Consumer, NewTopic, TopicPartition
from muster.spark.sink import SinkOptions, produce_all


def test_produce_all_delivers_every_row(muster_broker: Any) -> None:
    bootstrap = muster_broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic("sink-rows", 2)])
    batch = pa.RecordBatch.from_pydict(
        {
            "key": [b"a", None, "c"],
            "value": [b"1", b"2", "3"],
            "partition": [0, 1, None],
            "headers": [[{"key": "h", "value": b"x"}], None, None],
        }
    )
    opts = SinkOptions(bootstrap=bootstrap, topic="sink-rows", producer_conf=())
    assert produce_all(opts, iter([batch])).records == 3
    consumer = Consumer({"bootstrap.servers": bootstrap, "enable.auto.commit": False})
    parts = [TopicPartition("sink-rows", 0), TopicPartition("sink-rows", 1)]
    consumer.assign(parts)
    consumer.seek_to_beginning(parts)
    got: list[Any] = []
    for _ in range(50):
        got += consumer.poll(0.2)
        if len(got) == 3:
            break
    consumer.close(autocommit=False)
    by_value = {r.value: r for r in got}
    assert sorted(by_value) == [b"1", b"2", b"3"]
    assert by_value[b"1"].partition == 0 and by_value[b"1"].headers == (("h", b"x"),)
    assert by_value[b"2"].partition == 1 and by_value[b"2"].key is None
    assert by_value[b"3"].key == b"c"
