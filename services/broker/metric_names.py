"""Kafka's own names for API keys and error codes, as its RequestMetrics MBeans label them.

Kafka's names are the ``ApiKeys`` and ``Errors`` enums of the Java client: ``Produce``,
``ListOffsets``; ``NOT_LEADER_OR_FOLLOWER``. Derived from pafka's own tables (the protocol's
``ApiKey`` enum, the exception tree's classes) so that a new API or error needs no second entry;
only the error names Kafka spells irregularly are listed.
"""

from __future__ import annotations

import re
from functools import cache

from pafka.errors import KafkaApiError, for_code
from pafka.protocol.messages import ApiKey

# Kafka names that are not the exception class name in upper snake case without "Error".
_IRREGULAR_ERRORS = {
    -1: "UNKNOWN_SERVER_ERROR",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    56: "KAFKA_STORAGE_ERROR",
}
_WORD_START = re.compile(r"(?<!^)(?=[A-Z])")


@cache
def api_name(api_key: int) -> str:
    """``ApiKey.LIST_OFFSETS`` -> ``ListOffsets``; an unknown key is its number."""
    try:
        key = ApiKey(api_key)
    except ValueError:
        return str(api_key)
    return "".join(word.capitalize() for word in key.name.split("_"))


@cache
def error_name(code: int) -> str:
    """Kafka's name of a wire error code; a code pafka never sends is its number."""
    if code == 0:
        return "NONE"
    if code in _IRREGULAR_ERRORS:
        return _IRREGULAR_ERRORS[code]
    error: KafkaApiError = for_code(code)
    if error.code != code:  # for_code falls back to UNKNOWN_SERVER_ERROR
        return str(code)
    return _WORD_START.sub("_", type(error).__name__.removesuffix("Error")).upper()
