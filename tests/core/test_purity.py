"""The coordinator cores (groups, transactions and share partitions) stay pure: no asyncio,
sockets, clocks or server/client imports."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import muster.coordinator
import muster.records.offsets_topic
import muster.records.transaction_log
import muster.security
import muster.share
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
    share_root = Path(muster.share.__file__).parent
    return [
        *sorted(root.rglob("*.py")),
        *sorted(txn_root.rglob("*.py")),
        *sorted(share_root.rglob("*.py")),
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


# ---- the direction of imports between layers -------------------------------------
#
# Each top-level package (or module) of muster may import only the layers
# listed here, whether at module level or inside a function. Lower layers
# know nothing of higher ones: bytes (records, protocol) at the bottom, then
# storage and the pure cores, then the broker and the clients, then the apps.
# Each package's README says the same in words.

ALLOWED_LAYERS: dict[str, set[str]] = {
    "records": set(),  # record batches, offsets-topic and txn-log schemas
    "protocol": set(),  # the Kafka wire codec, ConsumerProtocol
    "security": set(),  # pure security core: authorizer, SASL/SCRAM, principals, properties
    "config": {"security"},
    "_lazy": set(),
    # the log filter `muster serve` installs (one line per repeat, with a count)
    "repeat_filter": set(),
    "log": {"records", "config"},
    "coordinator": {"records", "protocol", "assignors", "_lazy"},
    "transactions": {"records"},
    # KIP-932 share partitions and their durable state: pure, no I/O
    "share": {"records"},
    "assignors": {"protocol"},
    "explain": {"coordinator"},
    "server": {
        "config",
        "coordinator",
        "log",
        "protocol",
        "records",
        "transactions",
        "explain",
        "security",
        "share",
    },
    "client": {"assignors", "protocol", "records", "security", "_lazy"},
    "spark": {"client", "records"},
    "analytics": {"client", "coordinator", "explain", "records", "spark"},
    # the web console: reads any broker through muster's own client
    "console": {"client", "explain", "coordinator", "config", "protocol", "records"},
    # the applications: the command line and the demo it runs
    "cli": {
        "analytics",
        "client",
        "console",
        "config",
        "coordinator",
        "demo",
        "explain",
        "log",
        "protocol",
        "records",
        "repeat_filter",
        "server",
        "spark",
        "_lazy",
    },
    "demo": {
        "analytics",
        "cli",
        "client",
        "config",
        "coordinator",
        "embedded",
        "server",
        "spark",
        "_lazy",
    },
    # a broker inside a Python process or test suite (muster.Broker, the pytest plugin)
    "embedded": {"client", "config", "server"},
    "__main__": {"cli"},
}


def test_layers_import_only_downwards() -> None:
    from tests.support.imports import graph, layer_imports, modules

    layers = {m.split(".")[1] for m in modules() if "." in m}
    assert layers <= set(ALLOWED_LAYERS), layers - set(ALLOWED_LAYERS)
    offences = {
        layer: sorted(deps - ALLOWED_LAYERS[layer])
        for layer, deps in layer_imports(graph(lazy=True)).items()
        if deps - ALLOWED_LAYERS[layer]
    }
    assert offences == {}


def test_no_module_level_import_cycle() -> None:
    """Importing a module runs its package's __init__ first, so a package
    that imports its own submodules eagerly cycles with each of them."""
    from tests.support.imports import cycles, graph

    assert cycles(graph()) == []


def test_the_coordinator_core_has_no_import_cycle_even_lazily() -> None:
    from tests.support.imports import cycles, graph

    inside = {
        m: {d for d in deps if d.startswith("muster.coordinator")}
        for m, deps in graph(lazy=True).items()
        if m.startswith("muster.coordinator")
    }
    assert cycles(inside) == []


MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """Small modules: a module that grows past this is split by job."""
    from tests.support.imports import modules

    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_security_core_is_pure() -> None:
    """The authorizer, the SASL/SCRAM machines, the connection's authentication
    gate and principal mapping do no I/O: no sockets, files, TLS or clock."""
    root = Path(muster.security.__file__).parent
    pure = ("acl", "session", "scram", "sasl", "principal", "properties")
    io = ("os", "ssl", "pathlib", "tempfile")

    def forbidden(name: str) -> bool:
        return _forbidden(name) or any(name == m or name.startswith(m + ".") for m in io)

    assert _offences([root / f"{name}.py" for name in pure], forbidden) == []
