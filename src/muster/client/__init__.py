"""muster's Kafka client: `Producer`, `Consumer`, `Admin` (blocking, built
from a dict of Java/librdkafka configuration names, like confluent-kafka)
and their asyncio cores in `muster.client.aio`."""

from muster.client.admin import Admin, NewTopic
from muster.client.consumer import Consumer
from muster.client.errors import KafkaError
from muster.client.producer import Producer, RecordMetadata
from muster.client.types import ConsumerRecord, TopicPartition

__all__ = [
    "Admin",
    "Consumer",
    "ConsumerRecord",
    "KafkaError",
    "NewTopic",
    "Producer",
    "RecordMetadata",
    "TopicPartition",
]
