import pytest


@pytest.fixture(scope="session")
def muster_broker_settings():
    # the session broker's properties (Kafka's names), over the plugin's test defaults
    return {"num.partitions": 3}
