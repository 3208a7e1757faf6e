"""What a broker's start imports (issue #15: `muster serve` listening ≤ 0.3 s).

The request handlers and old-version schemas are imported on first use, and
the crc32c package's __init__ (importlib.metadata, argparse) is never run;
the coordinator core (group state machines, assignors, KIP-848 records) is
imported by its loader once the broker is up, the transaction coordinator
after the broker listens, prometheus_client only with a metrics endpoint,
SCRAM, the authorizer and TLS only when configured. A regression here
silently puts tens of ms back on every start.
"""

from __future__ import annotations

import json
import subprocess
import sys

from muster.records.crc import crc32c
from muster.server.api_table import build_table

_PROBE = """
import json, sys
from muster.cli.serve_run import _block_hypothesis_hooks
_block_hypothesis_hooks()  # as `muster serve` does before importing the broker
import muster.server.broker
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("muster.server.handlers.",
    "crc32c", "argparse", "importlib.metadata")))))
"""


def test_importing_the_broker_imports_no_handler_and_not_the_crc32c_package() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    # ApiVersions' module is imported by the broker (it answers from the table).
    assert [m for m in loaded if m != "muster.server.handlers.api_versions"] == ["crc32c._crc32c"]


# Modules a broker imports only once it is up (or when configured to need
# them); importing the broker as `muster serve` does must load none of them.
_LATER = (
    "muster.coordinator.shard",
    "muster.coordinator.requests",
    "muster.coordinator.responses",
    "muster.coordinator.events",
    "muster.coordinator.groups",
    "muster.assignors",
    "muster.records.modern_group_records",
    "muster.server.transactions",
    "muster.transactions",
    "muster.server.metrics",
    "prometheus_client",
    # a plaintext listener without ACLs or SCRAM credentials
    "muster.security.scram",
    "muster.security.acl",
    "muster.security.tls",
)

_PROBE_LATER = """
import json, sys
from muster.cli.serve_run import _block_hypothesis_hooks
_block_hypothesis_hooks()
import muster.server.broker
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    loaded: list[str] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_importing_the_broker_leaves_the_coordinators_and_metrics_for_later() -> None:
    loaded = _loaded_after(_PROBE_LATER)
    early = [m for m in loaded if m.startswith(_LATER)]
    assert early == []


_AFTER_LISTENING = (
    "muster.server.transactions",
    "muster.transactions",
    "muster.server.metrics",
    "prometheus_client",
)

_PROBE_SERVING = """
import asyncio, json, sys, tempfile
from muster.cli.serve_run import _block_hypothesis_hooks
_block_hypothesis_hooks()
from muster.config import BrokerConfig
from muster.server.broker import Broker

async def main():
    with tempfile.TemporaryDirectory() as d:
        broker = Broker(BrokerConfig({"log.dirs": d, "listeners": "PLAINTEXT://127.0.0.1:0"}))
        await broker.start()
        listening = sorted(sys.modules)
        await asyncio.wait_for(broker.coordinator.loader, 60)
        while broker.transactions is None or not broker.transactions.loaded:
            await asyncio.sleep(0.01)
        loaded = broker.coordinator.loaded
        await broker.stop()
    print(json.dumps([listening, loaded, sorted(sys.modules)]))

asyncio.run(main())
"""


def test_a_started_broker_listens_first_then_loads_its_coordinators() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE_SERVING],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    listening, loaded, after = json.loads(out.strip().splitlines()[-1])
    # listening: no transaction coordinator yet (the group coordinator's
    # loader thread may already be importing its core) ...
    assert [m for m in listening if m.startswith(_AFTER_LISTENING)] == []
    # ... then both coordinators loaded (their modules by their loaders) and
    # still no metrics without muster.metrics.listen
    assert loaded is True
    assert "muster.coordinator.shard" in after and "muster.server.transactions" in after
    assert [m for m in after if m.startswith(("prometheus_client", "muster.server.metrics"))] == []


def test_every_served_api_resolves_to_its_handler() -> None:
    for key, entry in build_table().items():
        handler = entry.handler
        assert callable(handler), key
        assert handler.__name__.startswith("handle_"), key
        assert entry.handler is handler  # resolved once


def test_crc32c_is_castagnoli_and_agrees_with_the_package() -> None:
    import crc32c as package

    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    data = bytes(range(256)) * 3
    assert crc32c(data) == package.crc32c(data)
