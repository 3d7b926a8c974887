"""AlterConfigs and IncrementalAlterConfigs as plain functions over override maps.

Overrides are the strings ZooKeeper keeps (``/config/topics/{t}``, ``/config/brokers/{id}``).
AlterConfigs replaces the whole set: entries with a null value are dropped, as Kafka drops
them. IncrementalAlterConfigs (KIP-339) changes named keys only: SET, DELETE, and for list
configs (``cleanup.policy``) APPEND and SUBTRACT, which start from the current override or, when
there is none, from the default value. Mistakes in the request itself (a key named twice, an
unknown operation, APPEND on a non-list key) are INVALID_REQUEST, as in Kafka; whether the
resulting values are valid is the caller's check.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from pafka.errors import InvalidRequestError


class OpType(enum.IntEnum):
    """IncrementalAlterConfigs ``config_operation`` wire values."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: int  # an OpType value, unchecked until applied
    value: str | None


def replace_all(entries: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs: the new override set; a key given twice is a bad request."""
    result: dict[str, str] = {}
    seen: set[str] = set()
    for name, value in entries:
        if name in seen:
            raise InvalidRequestError(f"config {name!r} is given more than once")
        seen.add(name)
        if value is not None:
            result[name] = value
    return result


def _items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def apply_incremental(
    current: Mapping[str, str],
    ops: Iterable[ConfigOp],
    list_keys: Collection[str],
    defaults: Mapping[str, str],
) -> dict[str, str]:
    """IncrementalAlterConfigs: ``current`` overrides with ``ops`` applied in order.

    ``list_keys`` are the list-typed configs APPEND and SUBTRACT accept; ``defaults`` their
    values when not overridden.
    """
    ops = list(ops)
    names = [o.name for o in ops]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidRequestError(f"configs {duplicates} are given more than once")
    result = dict(current)
    for o in ops:
        try:
            op = OpType(o.op)
        except ValueError:
            raise InvalidRequestError(f"unknown config operation {o.op} for {o.name!r}") from None
        if op is OpType.DELETE:
            result.pop(o.name, None)
            continue
        if o.value is None:
            raise InvalidRequestError(f"{op.name} of {o.name!r} needs a value")
        if op is OpType.SET:
            result[o.name] = o.value
            continue
        if o.name not in list_keys:
            raise InvalidRequestError(
                f"config value {op.name.lower()} is not allowed for config key {o.name!r}"
            )
        old = _items(result.get(o.name, defaults.get(o.name, "")))
        given = _items(o.value)
        if op is OpType.APPEND:
            merged = list(dict.fromkeys(old + given))
        else:
            merged = [item for item in old if item not in given]
        result[o.name] = ",".join(merged)
    return result
