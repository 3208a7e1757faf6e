"""muster: a Kafka-wire-compatible broker built around the consumer group.

`muster.Broker` (see `muster.embedded`) runs one inside a test suite. It is
imported on first use so `import muster` stays light for every other user.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Broker"]


def __getattr__(name: str) -> Any:
    if name == "Broker":
        from muster.embedded.broker import Broker

        return Broker
    raise AttributeError(f"module 'muster' has no attribute {name!r}")
