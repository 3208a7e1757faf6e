"""Server-side filtering and paging of long lists (1,000 groups, 10,000
partitions): a page never renders more than `size` rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from starlette.datastructures import QueryParams

T = TypeVar("T")

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


@dataclass(frozen=True)
class Page(Generic[T]):
    rows: Sequence[T]
    number: int  # 1-based
    size: int
    total: int  # rows after filtering

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_prev(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def int_param(params: QueryParams, name: str, default: int, lo: int, hi: int) -> int:
    try:
        value = int(params.get(name, default))
    except ValueError:
        value = default
    return min(hi, max(lo, value))


def paginate(rows: Sequence[T], params: QueryParams, size: int = PAGE_SIZE) -> Page[T]:
    size = int_param(params, "size", size, 1, MAX_PAGE_SIZE)
    pages = max(1, -(-len(rows) // size))
    number = int_param(params, "page", 1, 1, pages)
    start = (number - 1) * size
    return Page(rows[start : start + size], number, size, len(rows))


def filtered(rows: Sequence[T], text: str, key: Callable[[T], str]) -> list[T]:
    """Rows whose key contains `text` (case-insensitive); all rows without text."""
    needle = text.strip().lower()
    if not needle:
        return list(rows)
    return [r for r in rows if needle in key(r).lower()]
