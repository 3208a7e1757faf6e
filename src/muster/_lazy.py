"""Package exports resolved on first use (PEP 562), so that importing one
submodule does not import its whole package: a package `__init__` that
imported its submodules eagerly would put every one of them in an import
cycle with it (each submodule's import runs the package first)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` giving `name` from module `exports[name]`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module), name)

    return __getattr__
