"""Topics: the list, one topic's partitions and offsets, the message browser."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from muster.client.types import TopicPartition
from muster.console.browse import browse_params, find_start, render_record
from muster.console.paging import filtered, paginate
from muster.console.reader import Slice, read_slice
from muster.console.source import INTERNAL_TOPICS


async def topic_list(request: Request) -> Response:
    console = request.app.state.console
    topics = await console.source.topics()
    params = request.query_params
    names = sorted(topics)
    if params.get("internal", "") != "1":
        names = [n for n in names if n not in INTERNAL_TOPICS]
    page = paginate(filtered(names, params.get("q", ""), str), params)
    return console.render(
        request,
        "topics.html",
        page=page,
        counts=topics,
        q=params.get("q", ""),
        internal=params.get("internal", ""),
    )


async def show(request: Request) -> Response:
    console = request.app.state.console
    topic = request.path_params["topic"]
    count = await console.source.partition_count(topic)
    page = paginate(range(count), request.query_params, size=100)
    partitions = await console.source.partitions(topic, page.rows)
    configs = await console.source.topic_configs(topic) if count else []
    sizes = await console.source.partition_sizes(topic, page.rows)
    response = console.render(
        request,
        "topic.html",
        topic=topic,
        count=count,
        page=page,
        partitions=partitions,
        configs=configs,
        sizes=sizes,
        records=sum(p.count for p in partitions),
        browse=browse_params(request.query_params, count),
    )
    if not count:
        response.status_code = 404
    return response


async def messages(request: Request) -> Response:
    """One page of records (an htmx fragment, or a page of its own)."""
    console = request.app.state.console
    topic = request.path_params["topic"]
    count = await console.source.partition_count(topic)
    b = browse_params(request.query_params, count)
    found = await console.source.partitions(topic, [b.partition])
    offsets = found[0] if found else None
    rows = []
    next_offset = None
    start = None
    if offsets is not None:
        tp = TopicPartition(topic, b.partition)
        admin = await console.source.admin()
        start = await find_start(admin, tp, b, offsets.earliest, offsets.latest)
        # a filter scans at most `scan` records past the start for `limit` matches
        scan = b.limit if not b.filter else b.limit * 20
        records = await read_slice(console.conf, Slice(tp, start, offsets.latest, scan))
        for record in records:
            row = render_record(record, b.fmt)
            if b.filter and not row.matches(b.filter):
                continue
            rows.append(row)
            if len(rows) >= b.limit:
                break
        if records:
            last = rows[-1].offset if len(rows) >= b.limit else records[-1].offset
            next_offset = last + 1 if last + 1 < offsets.latest else None
    template = "_messages.html" if request.headers.get("HX-Request") else "messages.html"
    return console.render(
        request,
        template,
        topic=topic,
        browse=b,
        rows=rows,
        start=start,
        next_offset=next_offset,
        offsets=offsets,
    )
