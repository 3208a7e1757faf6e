"""Tables piped into another program (`muster topics list | grep ...`) take the
width they need: nothing is cut at rich's 80-column default for a non-terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any


def muster(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-m", "muster", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_piped_tables_are_not_clipped(cli: Any, broker_address: str, topic_name: str) -> None:
    long_name = f"{topic_name}-" + "orders-by-customer-and-region-" * 4  # ~140 characters
    created = cli("topics", "create", long_name, "--partitions", "2", "-b", broker_address)
    assert created.exit_code == 0, created.output
    bootstrap = broker_address
    b = ("-b", bootstrap)
    outputs = [
        muster("topics", "list", "-b", broker_address),
        muster("topics", "describe", long_name, "-b", broker_address),
        muster("produce", long_name, "first", "-b", broker_address),
        # -n 1: the one record produced above, then exit, rather than idling
        # out the 3 s timeout (kept as the bound should the record not come)
        muster("consume", long_name, "--offset", "earliest", "-n", "1", "--timeout", "3", *b),
    ]
    for text in outputs:
        assert "…" not in text
        assert any(long_name in line for line in text.splitlines()), text
