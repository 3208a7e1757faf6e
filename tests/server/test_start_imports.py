"""What a broker's start imports (issue #15: `muster serve` listening ≤ 0.3 s).

The request handlers and old-version schemas are imported on first use, and
the crc32c package's __init__ (importlib.metadata, argparse) is never run; a
regression here silently puts tens of ms back on every start.
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
