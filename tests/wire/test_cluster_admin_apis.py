"""DescribeCluster and DescribeLogDirs, asked by third-party admin clients
(confluent-kafka's describe_cluster, kafka-python's describe_log_dirs), as
UIs ask them: the one broker, and each partition's real size on disk."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from tests.support.brokers import MusterProcess


def test_describe_cluster_names_the_one_broker(shared_muster: MusterProcess) -> None:
    admin = AdminClient({"bootstrap.servers": shared_muster.bootstrap})
    described = admin.describe_cluster(request_timeout=10).result(20)
    assert described.cluster_id
    assert [n.id for n in described.nodes] == [described.controller.id]
    assert described.nodes[0].port == shared_muster.port


def test_describe_log_dirs_reports_partition_sizes(shared_muster: MusterProcess) -> None:
    producer = Producer({"bootstrap.servers": shared_muster.bootstrap})
    for i in range(50):
        producer.produce("logdirs-topic", b"x" * 1000, key=str(i).encode())
    producer.flush(10)
    admin = KafkaAdminClient(bootstrap_servers=shared_muster.bootstrap)
    try:
        answer = admin.describe_log_dirs()
    finally:
        admin.close()
    (broker,) = answer  # kafka-python 3: one entry per broker
    assert broker["broker"] == 0
    (result,) = broker["log_dirs"]
    assert result["error_code"] == 0
    assert result["log_dir"].endswith("data")
    sizes = {
        (t["name"], p["partition_index"]): p["partition_size"]
        for t in result["topics"]
        for p in t["partitions"]
    }
    assert sizes[("logdirs-topic", 0)] >= 50 * 1000
    assert 0 < result["usable_bytes"] <= result["total_bytes"]
