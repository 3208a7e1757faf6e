"""Every coordinator request is routed once, from one table keyed by (group
kind, request type): each request for one group has a row for every group
kind and an error answer for a group the shard does not serve."""

from __future__ import annotations

from muster.coordinator import routes, shard
from muster.coordinator.groups.store import CLASSIC, MODERN, SHARE


def test_every_request_for_one_group_has_a_row_per_group_kind() -> None:
    for request_type in routes.REFUSALS:
        for kind in (CLASSIC, MODERN, SHARE):
            assert (kind, request_type) in shard._ROUTES, (kind, request_type.__name__)


def test_the_shards_own_rows_are_the_requests_without_one_group() -> None:
    own = {t for kind, t in shard._ROUTES if kind is None}
    assert own and not own & set(routes.REFUSALS)
    assert {k for k, _ in shard._ROUTES} == {None, CLASSIC, MODERN, SHARE}
