from __future__ import annotations

import itertools
from typing import Any

import pytest

import muster.spark
from tests.support.brokers import MusterProcess, TansuProcess

_names = itertools.count()


@pytest.fixture(params=["muster", "tansu"])
def broker(request: pytest.FixtureRequest) -> MusterProcess | TansuProcess:
    """The same test against muster and against the third-party broker Tansu."""
    name = "shared_muster" if request.param == "muster" else "tansu_broker"
    return request.getfixturevalue(name)


@pytest.fixture
def spark(spark: Any) -> Any:
    """The session's one SparkSession, with the `muster` source registered."""
    muster.spark.register(spark)
    return spark


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    base = request.node.name.split("[")[0].replace("test_", "")[:30].replace("_", "-")
    return f"{base}-{next(_names)}"
