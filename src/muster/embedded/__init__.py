"""muster embedded in a Python test suite: `Broker` and the pytest plugin."""

from muster.embedded.broker import TEST_DEFAULTS, Broker

__all__ = ["TEST_DEFAULTS", "Broker"]
