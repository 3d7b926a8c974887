"""Topic name rules, as Kafka enforces them (``org.apache.kafka.common.internals.Topic``), and
the rules for group ids, which name znodes.

A topic name becomes a directory name (``{topic}-{partition}``) and a znode name, hence the
limits: 1..249 characters from ``[a-zA-Z0-9._-]``, and never ``.`` or ``..``. 249 leaves room for
the ``-{partition}`` suffix (and a deletion suffix) inside the usual 255-byte file name limit.

Kafka also warns, and refuses creation when an existing topic matches, about names that differ
only in ``.`` versus ``_``: both map to ``_`` in metric names. That check is optional here
(:func:`collision_warning`, :func:`colliding_topics`); the caller decides whether to apply it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pafka.errors import InvalidGroupIdError, InvalidTopicError

MAX_NAME_LENGTH = 249
LEGAL_CHARS = "a-zA-Z0-9._-"
_LEGAL = re.compile(rf"[{LEGAL_CHARS}]+")


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicError`, saying why, unless ``name`` is a legal topic name."""
    if not name:
        raise InvalidTopicError("topic name is illegal: it is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name is illegal: it cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is illegal: it is {len(name)} characters long, "
            f"the limit is {MAX_NAME_LENGTH}"
        )
    if not _LEGAL.fullmatch(name):
        bad = sorted({c for c in name if not _LEGAL.fullmatch(c)})
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: it contains {''.join(bad)!r}; "
            "use only ASCII letters, digits, '.', '_' and '-'"
        )


def is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return False
    return True


def unify_collision_chars(name: str) -> str:
    """The name as metrics see it: ``.`` and ``_`` are the same character there."""
    return name.replace(".", "_")


def collision_warning(name: str) -> str | None:
    """The warning Kafka prints for a new topic name containing ``.`` or ``_``, else None."""
    if "." in name or "_" in name:
        return (
            f"topic name {name!r} contains '.' or '_'; because of limitations in metric names, "
            "topics whose names differ only in '.' versus '_' could collide"
        )
    return None


def colliding_topics(name: str, existing: Iterable[str]) -> list[str]:
    """Existing topics other than ``name`` whose names collide with it in metric names."""
    unified = unify_collision_chars(name)
    return sorted(t for t in existing if t != name and unify_collision_chars(t) == unified)


MAX_GROUP_ID_LENGTH = 255


def _zk_refuses(c: str) -> bool:
    """The characters ZooKeeper's PathUtils.validatePath refuses in a path."""
    o = ord(c)
    return o <= 0x1F or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xF8FF or 0xFFF0 <= o <= 0xFFFF


def validate_group_id(group: str) -> None:
    """Raise :class:`InvalidGroupIdError` unless ``group`` can name ``/consumers/{group}``.

    Kafka accepts any non-empty group id; ZooKeeper path segments cannot hold ``/``, be ``.``
    or ``..``, or contain control characters, so those are refused here.
    """
    if not group:
        raise InvalidGroupIdError("group id is empty")
    if group in (".", "..") or "/" in group or any(_zk_refuses(c) for c in group):
        raise InvalidGroupIdError(
            f"group id {group!r} is illegal: no '/', '.' or '..', and none of the characters "
            "ZooKeeper refuses in paths (controls, surrogates, U+E000-U+F8FF, U+FFF0-U+FFFF)"
        )
    if len(group) > MAX_GROUP_ID_LENGTH:
        raise InvalidGroupIdError(
            f"group id is {len(group)} characters long, the limit is {MAX_GROUP_ID_LENGTH}"
        )
