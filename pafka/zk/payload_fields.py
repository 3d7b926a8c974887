"""Strict reading of znode payloads written by processes pafka does not control.

A node under ``/consumers`` may have been written by a Kafka 0.8 consumer, an offset tool, an
operator with ``zkCli.sh`` or a bug. Each reader here either returns a value of the promised
type and range or raises :class:`CorruptZNodeError` naming the node, so a decoder never lets
a ``KeyError``, ``TypeError`` or ``UnicodeDecodeError`` escape into a request handler.
"""

from __future__ import annotations

import json
from typing import Any

from pafka.errors import CorruptZNodeError

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
# A znode holds at most 1 MiB by default; strings longer than this in a payload are not ours.
MAX_TEXT_CHARS = 32_767

_MISSING = object()


def text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptZNodeError(path, f"not UTF-8 ({exc.reason} at byte {exc.start})") from exc


def json_object(data: bytes, path: str) -> dict[str, Any]:
    try:
        payload = json.loads(text(data, path))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CorruptZNodeError(path, f"invalid JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise CorruptZNodeError(path, f"holds a JSON {type(payload).__name__}, not an object")
    return payload


def integer(
    payload: dict[str, Any],
    key: str,
    path: str,
    *,
    low: int = 0,
    high: int = INT64_MAX,
    default: int | None = None,
) -> int:
    """An integer field in [low, high]; decimal strings are accepted (Kafka writes timestamps
    as strings), booleans and floats are not."""
    value = payload.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is None:
            raise CorruptZNodeError(path, f"has no {key!r}")
        return default
    if isinstance(value, str) and is_decimal(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CorruptZNodeError(path, f"{key!r} is {value!r}, not an integer")
    if not low <= value <= high:
        raise CorruptZNodeError(path, f"{key!r} is {value}, outside [{low}, {high}]")
    return value


def string(payload: dict[str, Any], key: str, path: str, *, default: str | None = None) -> str:
    value = payload.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is None:
            raise CorruptZNodeError(path, f"has no {key!r}")
        return default
    if not isinstance(value, str):
        raise CorruptZNodeError(path, f"{key!r} is {type(value).__name__}, not a string")
    if len(value) > MAX_TEXT_CHARS:
        raise CorruptZNodeError(path, f"{key!r} is {len(value)} characters long")
    return value


def optional_string(payload: dict[str, Any], key: str, path: str) -> str | None:
    if payload.get(key) is None:
        return None
    return string(payload, key, path)


def string_list(payload: dict[str, Any], key: str, path: str) -> tuple[str, ...]:
    value = payload.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CorruptZNodeError(path, f"{key!r} is not a list of strings")
    return tuple(value)


def is_decimal(value: str) -> bool:
    """Plain ASCII digits with an optional minus (``str.isdigit`` also takes "²" and "٣")."""
    body = value[1:] if value.startswith("-") else value
    return 0 < len(body) <= 19 and body.isascii() and body.isdigit()
