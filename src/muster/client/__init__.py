"""muster's Kafka client: `Producer`, `Consumer`, `Admin` (blocking, built
from a dict of Java/librdkafka configuration names, like confluent-kafka)
and their asyncio cores in `muster.client.aio`. The names below resolve on
first use (muster._lazy), so importing one client module does not import
them all."""

from muster._lazy import lazy_exports

_EXPORTS = {
    "Admin": "muster.client.admin",
    "NewTopic": "muster.client.admin",
    "Consumer": "muster.client.consumer",
    "KafkaError": "muster.client.errors",
    "Producer": "muster.client.producer",
    "RecordMetadata": "muster.client.producer",
    "ConsumerRecord": "muster.client.types",
    "TopicPartition": "muster.client.types",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
