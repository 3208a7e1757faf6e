"""The coordinator cores (groups and transactions) stay pure: no asyncio,
sockets, clocks or server/client imports."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import muster.coordinator
import muster.records.offsets_topic
import muster.records.transaction_log
import muster.security
import muster.transactions

FORBIDDEN_MODULES = (
    "asyncio",
    "socket",
    "selectors",
    "threading",
    "time",
    "datetime",
    "muster.server",
    "muster.client",
)
FORBIDDEN_CALLS = ("time.time", "time.monotonic", "datetime.now", "datetime.utcnow")


def _files() -> list[Path]:
    root = Path(muster.coordinator.__file__).parent
    txn_root = Path(muster.transactions.__file__).parent
    return [
        *sorted(root.rglob("*.py")),
        *sorted(txn_root.rglob("*.py")),
        Path(muster.records.offsets_topic.__file__),
        Path(muster.records.transaction_log.__file__),
    ]


def _forbidden(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def _offences(paths: list[Path], forbidden: Callable[[str], bool]) -> list[tuple[str, str]]:
    offences = []
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                offences += [(path.name, a.name) for a in node.names if forbidden(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.module:
                if forbidden(node.module):
                    offences.append((path.name, node.module))
            elif isinstance(node, ast.Attribute):
                text = ast.unparse(node)
                if any(text.endswith(c) for c in FORBIDDEN_CALLS):
                    offences.append((path.name, text))
    return offences


def test_core_imports_nothing_impure() -> None:
    assert _offences(_files(), _forbidden) == []
    assert len(_files()) > 10


def test_security_core_is_pure() -> None:
    """The authorizer, the SASL/SCRAM machines, the connection's authentication
    gate and principal mapping do no I/O: no sockets, files, TLS or clock."""
    root = Path(muster.security.__file__).parent
    pure = ("acl", "session", "scram", "sasl", "principal", "properties")
    io = ("os", "ssl", "pathlib", "tempfile")

    def forbidden(name: str) -> bool:
        return _forbidden(name) or any(name == m or name.startswith(m + ".") for m in io)

    assert _offences([root / f"{name}.py" for name in pure], forbidden) == []
