"""The asyncio API: the cores the blocking facades drive.

producer = await AIOProducer(conf).start(); await producer.send(topic, value, key)
consumer = await AIOConsumer(conf).start(); consumer.subscribe([...]); await consumer.poll(1.0)
admin = await AIOAdmin(conf).start(); await admin.create_topics([NewTopic("t", 3)])
"""

from muster.client.admin import AIOAdmin
from muster.client.aio_consumer import AIOConsumer
from muster.client.aio_producer import AIOProducer

__all__ = ["AIOAdmin", "AIOConsumer", "AIOProducer"]
