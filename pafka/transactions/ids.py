"""Which transactional ids pafka accepts: they name a znode (``/transactions/{id}``), so the
rules of group ids apply; a refused id gets INVALID_REQUEST, Kafka's answer to an empty one."""

from __future__ import annotations

from pafka.cluster.names import validate_group_id
from pafka.errors import InvalidGroupIdError, InvalidRequestError


def validate_transactional_id(transactional_id: str | None) -> str:
    if transactional_id is None:
        raise InvalidRequestError("the request has no transactional id")
    try:
        validate_group_id(transactional_id)
    except InvalidGroupIdError as exc:
        message = str(exc).replace("group id", "transactional id")
        raise InvalidRequestError(message) from exc
    return transactional_id
