"""Topic name rules, as Kafka enforces them (and why: names become directory names)."""

from __future__ import annotations

import re

from pafka.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}"
        )
    if not _LEGAL.match(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: use only ASCII letters, digits, '.', '_' and '-'"
        )
