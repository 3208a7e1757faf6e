"""Scenarios register here: a name, a family and a function of a Session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.kafka_diff.session import Session


@dataclass(frozen=True)
class Scenario:
    name: str
    family: str
    fn: Callable[[Session], Any]


SCENARIOS: dict[str, Scenario] = {}


def scenario(family: str, name: str | None = None) -> Callable[[Callable[[Session], Any]], Any]:
    def add(fn: Callable[[Session], Any]) -> Callable[[Session], Any]:
        register(family, name or fn.__name__, fn)
        return fn

    return add


def register(family: str, name: str, fn: Callable[[Session], Any]) -> None:
    full = f"{family}.{name}"
    if full in SCENARIOS:
        raise ValueError(f"scenario {full} registered twice")
    SCENARIOS[full] = Scenario(full, family, fn)


def load() -> dict[str, Scenario]:
    import importlib
    import pkgutil

    from conformance.kafka_diff import scenarios

    for mod in pkgutil.iter_modules(scenarios.__path__):
        importlib.import_module(f"{scenarios.__name__}.{mod.name}")
    return SCENARIOS
