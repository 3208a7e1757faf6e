"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and the
broker (client quotas, the other half of kafka-configs.sh, are in client_quotas)."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from muster.config import BY_NAME, PROPERTIES
from muster.log.config import TOPIC_CONFIGS
from muster.security.acl import Operation
from muster.server import authz
from muster.server.handlers.topics_admin import check_topic_configs
from muster.server.state import RequestContext

TOPIC, BROKER, GROUP = 2, 4, 32
# Kafka's ConfigSource
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# Kafka's ConfigType
_TYPES = {bool: 1, str: 2, int: 5, float: 6}
INT, LIST = 3, 7
# where Kafka's type is not what the Python kind suggests (an int Kafka keeps in
# 32 bits, a comma-separated list): kafka-diff against Kafka 4.4
_KAFKA_TYPES = {
    **dict.fromkeys(
        (
            "segment.bytes",
            "max.message.bytes",
            "index.interval.bytes",
            "log.segment.bytes",
            "log.index.interval.bytes",
            "message.max.bytes",
            "num.partitions",
            "default.replication.factor",
            "log.retention.hours",
            "offsets.topic.num.partitions",
            "offsets.retention.minutes",
            "transaction.state.log.num.partitions",
            "transaction.max.timeout.ms",
            "group.initial.rebalance.delay.ms",
            "group.min.session.timeout.ms",
            "group.max.session.timeout.ms",
            "group.max.size",
            "group.consumer.session.timeout.ms",
            "group.consumer.heartbeat.interval.ms",
            "group.consumer.max.size",
            "socket.request.max.bytes",
            "max.connections",
            "max.connections.per.ip",
            "max.incremental.fetch.session.cache.slots",
        ),
        INT,
    ),
    **dict.fromkeys(
        (
            "cleanup.policy",
            "log.cleanup.policy",
            "log.dirs",
            "group.consumer.assignors",
            "sasl.enabled.mechanisms",
            "ssl.enabled.protocols",
            "super.users",
        ),
        LIST,
    ),
}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _sensitive(name: str) -> bool:
    """Kafka's PASSWORD-typed properties: described with a null value."""
    return "password" in name or name.endswith(("jaas.config", "ssl.keystore.key"))


def _entry(name: str, value: Any, source: int, kind: type, read_only: bool) -> dict[str, Any]:
    text = None if value is None else (str(value).lower() if kind is bool else str(value))
    sensitive = _sensitive(name)
    return {
        "name": name,
        "value": None if sensitive else text,
        "read_only": read_only,
        "config_source": source,
        "is_default": source == DEFAULT_CONFIG,
        "is_sensitive": sensitive,
        "synonyms": [],
        "config_type": _KAFKA_TYPES.get(name, _TYPES.get(kind, 2)),
        "documentation": None,
    }


def _topic_configs(ctx: RequestContext, name: str) -> list[dict[str, Any]]:
    info = ctx.state.logs.topic(name)
    assert info is not None
    out = []
    for topic_name, (broker_name, kind) in TOPIC_CONFIGS.items():
        if topic_name in info.configs:
            entry = _entry(topic_name, info.configs[topic_name], DYNAMIC_TOPIC_CONFIG, kind, False)
            entry["synonyms"] = _synonyms(topic_name, entry["value"], DYNAMIC_TOPIC_CONFIG)
            out.append(entry)
        else:
            prop = BY_NAME.get(broker_name)
            value = ctx.state.config[broker_name] if prop else "CreateTime"
            source = (
                DEFAULT_CONFIG if prop is None or value == prop.default else (STATIC_BROKER_CONFIG)
            )
            entry = _entry(topic_name, value, source, kind, False)
            entry["synonyms"] = _synonyms(broker_name, entry["value"], source, prop)
            out.append(entry)
    for extra, value in info.configs.items():
        if extra not in TOPIC_CONFIGS:
            out.append(_entry(extra, value, DYNAMIC_TOPIC_CONFIG, str, False))
    return out


def _synonyms(name: str, value: str | None, source: int, prop: Any = None) -> list[dict[str, Any]]:
    """Kafka's synonyms, most specific first: the entry itself, then a statically
    set broker property's default."""
    out = [{"name": name, "value": value, "source": source}]
    if source == STATIC_BROKER_CONFIG and prop is not None:
        default = None if prop.default is None else str(prop.default)
        if prop.kind is bool and default is not None:
            default = default.lower()
        out.append({"name": name, "value": default, "source": DEFAULT_CONFIG})
    return out


def created_topic_configs(ctx: RequestContext, name: str) -> list[dict[str, Any]]:
    """CreateTopics v5+'s per-topic config list (KIP-525)."""
    keys = ("name", "value", "read_only", "config_source", "is_sensitive")
    return [{k: c[k] for k in keys} for c in _topic_configs(ctx, name)]


def _broker_configs(ctx: RequestContext) -> list[dict[str, Any]]:
    cfg = ctx.state.config
    out = []
    for p in PROPERTIES:
        source = DEFAULT_CONFIG if cfg[p.name] == p.default else STATIC_BROKER_CONFIG
        entry = _entry(p.name, cfg[p.name], source, p.kind, True)
        entry["synonyms"] = _synonyms(p.name, entry["value"], source, p)
        out.append(entry)
    return out


async def handle_describe_configs(ctx: RequestContext, req: Any) -> dict[str, Any]:
    results = []
    for res in req.resources:
        result: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": res.resource_type,
            "resource_name": res.resource_name,
            "configs": [],
        }
        if not _may(ctx, Operation.DESCRIBE_CONFIGS, res):
            result["error_code"] = _denied_error(res)
            results.append(result)
            continue
        if res.resource_type == TOPIC:
            if ctx.state.logs.topic(res.resource_name) is None:
                result["error_code"] = ErrorCode.unknown_topic_or_partition
                results.append(result)
                continue
            configs = _topic_configs(ctx, res.resource_name)
        elif res.resource_type == BROKER and res.resource_name not in ("", str(ctx.state.node_id)):
            # Kafka: a broker resource names this broker (or "" for the defaults)
            result["error_code"] = ErrorCode.invalid_request
            result["error_message"] = f"unexpected broker id {res.resource_name!r}"
            results.append(result)
            continue
        elif res.resource_type == BROKER:
            configs = _broker_configs(ctx)
        elif res.resource_type == GROUP and ctx.state.services.share is not None:
            configs = _group_configs(ctx, res.resource_name)
        else:
            result["error_code"] = ErrorCode.invalid_request
            result["error_message"] = f"resource type {res.resource_type} is not supported"
            results.append(result)
            continue
        keys = res.configuration_keys
        if keys:
            configs = [c for c in configs if c["name"] in set(keys)]
        if not getattr(req, "include_synonyms", False):
            configs = [{**c, "synonyms": []} for c in configs]
        result["configs"] = configs
        results.append(result)
    return {"throttle_time": 0, "results": results}


def _may(ctx: RequestContext, op: Operation, res: Any) -> bool:
    if res.resource_type == TOPIC:
        return authz.topic(ctx, op, res.resource_name)
    if res.resource_type == GROUP:
        return authz.group(ctx, op, res.resource_name)
    return authz.cluster(ctx, op)  # broker configs: the cluster resource, as Kafka


def _denied_error(res: Any) -> ErrorCode:
    if res.resource_type == TOPIC:
        return ErrorCode.topic_authorization_failed
    if res.resource_type == GROUP:
        return ErrorCode.group_authorization_failed
    return ErrorCode.cluster_authorization_failed


def _alter(
    ctx: RequestContext, res: Any, new: dict[str, str], validate_only: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": res.resource_type,
        "resource_name": res.resource_name,
    }
    if not _may(ctx, Operation.ALTER_CONFIGS, res):
        out["error_code"] = _denied_error(res)
        return out
    if res.resource_type != TOPIC:
        out.update(
            error_code=ErrorCode.invalid_request,
            error_message="only topic configs can be altered on this broker",
        )
        return out
    if ctx.state.logs.topic(res.resource_name) is None:
        out["error_code"] = ErrorCode.unknown_topic_or_partition
        return out
    problem = check_topic_configs(ctx.state.config, new)
    if problem is not None:
        out.update(error_code=ErrorCode.invalid_config, error_message=problem)
        return out
    if not validate_only:
        ctx.state.logs.set_topic_configs(res.resource_name, new)
    return out


async def handle_alter_configs(ctx: RequestContext, req: Any) -> dict[str, Any]:
    responses = [
        _alter(
            ctx,
            res,
            {c.name: c.value for c in res.configs if c.value is not None},
            req.validate_only,
        )
        for res in req.resources
    ]
    return {"throttle_time": 0, "responses": responses}


DYNAMIC_GROUP_CONFIG = 8  # Kafka's ConfigSource.GROUP_CONFIG


def _group_configs(ctx: RequestContext, group: str) -> list[dict[str, Any]]:
    from muster.share.group_configs import DEFAULTS, STRINGS, default

    share = ctx.state.services.share
    own = share.group_configs.get(group, {}) if share is not None else {}
    out = []
    for name in DEFAULTS:
        source = DYNAMIC_GROUP_CONFIG if name in own else DEFAULT_CONFIG
        value = own[name] if name in own else default(name, ctx.state.config)
        out.append(_entry(name, value, source, str if name in STRINGS else int, False))
    return out


def _alter_group(ctx: RequestContext, res: Any, validate_only: bool) -> dict[str, Any]:
    """A share group's dynamic configs (Kafka's GroupConfig), durable
    (`share_group_configs.json`); served with muster.share.enable."""
    from muster.share.group_configs import check_group, check_value

    share = ctx.state.services.share
    out: dict[str, Any] = {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": res.resource_type,
        "resource_name": res.resource_name,
    }
    if not authz.group(ctx, Operation.ALTER_CONFIGS, res.resource_name):
        out["error_code"] = ErrorCode.group_authorization_failed
        return out
    assert share is not None
    current = dict(share.group_configs.get(res.resource_name, {}))
    for c in res.configs:
        if c.config_operation == DELETE:
            current.pop(c.name, None)
            continue
        problem = (
            check_value(c.name, c.value or "")
            if c.config_operation == SET
            else f"{c.name} is not a list config"
        )
        if problem is not None:
            out.update(error_code=ErrorCode.invalid_config, error_message=problem)
            return out
        current[c.name] = c.value or ""
    # the whole set against the broker's bounds, as Kafka's GroupConfig.validate
    problem = check_group(current, ctx.state.config)
    if problem is not None:
        out.update(error_code=ErrorCode.invalid_config, error_message=problem)
        return out
    if not validate_only:
        try:
            share.set_group_configs(res.resource_name, current)
        except OSError as exc:
            out.update(error_code=ErrorCode.unknown_server_error, error_message=str(exc))
    return out


async def handle_incremental_alter_configs(ctx: RequestContext, req: Any) -> dict[str, Any]:
    responses = []
    for res in req.resources:
        if res.resource_type == GROUP and ctx.state.services.share is not None:
            responses.append(_alter_group(ctx, res, req.validate_only))
            continue
        info = ctx.state.logs.topic(res.resource_name) if res.resource_type == TOPIC else None
        current = dict(info.configs) if info is not None else {}
        effective = (
            {c["name"]: c["value"] for c in _topic_configs(ctx, res.resource_name)} if info else {}
        )
        names = [c.name for c in res.configs]
        problem: tuple[ErrorCode, str] | None = None
        if len(set(names)) != len(names):  # as Kafka: one operation per config
            problem = (ErrorCode.invalid_request, "a config is named more than once")
        for c in res.configs if problem is None else ():
            if c.config_operation == DELETE:
                current.pop(c.name, None)
            elif c.config_operation == SET and c.value is not None:
                current[c.name] = c.value
            elif c.config_operation in (APPEND, SUBTRACT):
                if _KAFKA_TYPES.get(c.name) != LIST:
                    problem = (ErrorCode.invalid_config, f"{c.name} is not a list config")
                    break
                # Kafka appends to (subtracts from) the value in effect, default included
                base = current.get(c.name, effective.get(c.name) or "")
                items = [x for x in base.split(",") if x]
                for v in (c.value or "").split(","):
                    if c.config_operation == APPEND and v not in items:
                        items.append(v)
                    elif c.config_operation == SUBTRACT and v in items:
                        items.remove(v)
                current[c.name] = ",".join(items)
            elif c.config_operation not in (SET, DELETE):
                problem = (ErrorCode.invalid_request, f"unknown operation {c.config_operation}")
                break
        if problem is not None:
            responses.append(
                {
                    "error_code": problem[0],
                    "error_message": problem[1],
                    "resource_type": res.resource_type,
                    "resource_name": res.resource_name,
                }
            )
            continue
        responses.append(_alter(ctx, res, current, req.validate_only))
    return {"throttle_time": 0, "responses": responses}
