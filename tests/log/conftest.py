from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from muster.log.config import LogConfig
from muster.log.memory_log import MemoryLog
from muster.log.port import PartitionLog
from muster.log.segment_log import SegmentLog

MakeLog = Callable[..., PartitionLog]


@pytest.fixture(params=["memory", "segment"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> MakeLog:
    """Both PartitionLog implementations: the contract holds for each."""

    def make(**cfg: object) -> PartitionLog:
        config = LogConfig(**cfg)  # type: ignore[arg-type]
        if request.param == "memory":
            return MemoryLog("t", 0, config)
        return SegmentLog(tmp_path / "t-0", "t", 0, config)

    return make
