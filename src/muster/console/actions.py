"""Actions on a group, each a dry run unless the form says `execute=1`:
reset offsets (the modes of kafka-consumer-groups --reset-offsets), delete
offsets, delete the group. `read_only` answers 403 to all of them.

As Kafka's tool: offsets are reset only while the group is inactive
(Empty or Dead), and every target is clamped into [log start, log end].
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from muster.client.admin import AIOAdmin
from muster.client.errors import KafkaError
from muster.client.types import TopicPartition

Form = dict[str, str]

INACTIVE = ("Empty", "Dead", "")
RESET_MODES = (
    "to-earliest",
    "to-latest",
    "to-current",
    "to-offset",
    "shift-by",
    "to-datetime",
    "by-duration",
)


@dataclass(frozen=True)
class Planned:
    tp: TopicPartition
    current: int | None
    target: int | None  # None: the offset is deleted


class ActionError(ValueError):
    pass


def _partitions(form: Form, known: set[TopicPartition]) -> list[TopicPartition]:
    """`topic` (optional, else every partition the group has offsets for)."""
    topic = str(form.get("topic", "")).strip()
    chosen = [tp for tp in known if not topic or tp.topic == topic]
    return sorted(chosen, key=lambda t: (t.topic, t.partition))


def _int(form: Form, name: str) -> int:
    try:
        return int(str(form.get(name, "")).strip())
    except ValueError:
        raise ActionError(f"{name} must be a whole number") from None


async def plan_reset(admin: AIOAdmin, group_id: str, form: Form, now_ms: int) -> list[Planned]:
    mode = str(form.get("mode", ""))
    if mode not in RESET_MODES:
        raise ActionError(f"unknown reset mode {mode!r}")
    committed = await admin.list_group_offsets(group_id)
    tps = _partitions(form, set(committed))
    if not tps:
        raise ActionError("the group has no committed offsets to reset (for that topic)")
    earliest = await admin.list_offsets({tp: "earliest" for tp in tps})
    latest = await admin.list_offsets({tp: "latest" for tp in tps})
    if mode in ("to-datetime", "by-duration"):
        at = _int(form, "timestamp") if mode == "to-datetime" else now_ms - _int(form, "duration")
        found = await admin.list_offsets({tp: at for tp in tps})
    out = []
    for tp in tps:
        lo, hi, cur = earliest.get(tp, 0), latest.get(tp, 0), committed.get(tp)
        if mode == "to-earliest":
            target = lo
        elif mode == "to-latest":
            target = hi
        elif mode == "to-current":
            target = cur if cur is not None else hi
        elif mode == "to-offset":
            target = _int(form, "offset")
        elif mode == "shift-by":
            target = (cur if cur is not None else hi) + _int(form, "shift")
        else:
            off = found.get(tp, -1)
            target = hi if off < 0 else off
        out.append(Planned(tp, cur, min(hi, max(lo, target))))
    return out


async def _state(admin: AIOAdmin, group_id: str) -> str:
    try:
        described = (await admin.describe_groups([group_id])).get(group_id)
    except KafkaError:
        return ""
    return described.state if described else ""


def same_origin(request: Request) -> bool:
    """A browser's POST names its page's origin: another site's page may not
    reset or delete anything through a console it can reach."""
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser form (curl, tests)
    return urlsplit(origin).netloc == request.headers.get("host", "")


async def run(request: Request) -> Response:
    console = request.app.state.console
    group_id = request.path_params["group_id"]
    action = request.path_params["action"]
    if console.read_only:
        return Response("the console is read-only (muster.console.read.only=true)", 403)
    if not same_origin(request):
        return Response("cross-origin action refused", 403)
    # an urlencoded form, read without python-multipart
    form: Form = dict(parse_qsl((await request.body()).decode(), keep_blank_values=True))
    execute = form.get("execute") == "1"
    admin = await console.source.admin()
    planned: list[Planned] = []
    error = None
    done = False
    try:
        state = await _state(admin, group_id)
        if action == "reset-offsets":
            planned = await plan_reset(admin, group_id, form, int(time.time() * 1000))
            if execute:
                if state not in INACTIVE:
                    raise ActionError(f"the group is {state}: stop its consumers first")
                await admin.alter_group_offsets(
                    group_id, {p.tp: p.target for p in planned if p.target is not None}
                )
                done = True
        elif action == "delete-offsets":
            committed = await admin.list_group_offsets(group_id)
            planned = [Planned(tp, committed[tp], None) for tp in _partitions(form, set(committed))]
            if execute:
                await admin.delete_group_offsets(group_id, [p.tp for p in planned])
                done = True
        elif action == "delete-group":
            if execute:
                await admin.delete_groups([group_id])
                done = True
        else:
            return Response(f"unknown action {action!r}", 404)
    except (ActionError, KafkaError) as exc:
        error = str(exc)
    if done:
        console.source.forget()
    return console.render(
        request,
        "_action_result.html",
        group_id=group_id,
        action=action,
        planned=planned,
        execute=execute,
        done=done,
        error=error,
    )
