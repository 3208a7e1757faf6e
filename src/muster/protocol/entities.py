"""kio's reader and writer of a schema entity, built once per schema: shared by
the wire codec, the ConsumerProtocol codec and the assignors' user data,
which are all declared as kio schemas."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from kio.serial import entity_reader, entity_writer


@cache
def schema_reader(schema: type) -> Callable[[Any, int], tuple[Any, int]]:
    return entity_reader(schema)


@cache
def schema_writer(schema: type) -> Callable[[Any, Any], None]:
    return entity_writer(schema)
