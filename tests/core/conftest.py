from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.core.harness import Harness


@pytest.fixture
def make() -> Iterator[Callable[..., Harness]]:
    """Harness factory; after the test, every harness must pass the replay check
    (a fresh shard replaying the emitted records equals the live durable state)."""
    made: list[Harness] = []

    def factory(**kw: Any) -> Harness:
        made.append(Harness(**kw))
        return made[-1]

    yield factory
    for harness in made:
        harness.check_replay()


@pytest.fixture
def h(make: Callable[..., Harness]) -> Harness:
    return make()
