"""Dynamic broker configs: which of Kafka's dynamically updatable broker configs pafka acts on.

Kafka keeps them in ``/config/brokers/{id}`` (one broker) and ``/config/brokers/<default>``
(every broker); a broker's value wins over the cluster default, which wins over the static
setting. pafka accepts the log defaults Kafka updates dynamically (``DynamicLogConfig``) and
that pafka uses: each is the broker-wide default of a topic config, so a change reaches every
topic without its own override. Other broker configs are refused with Kafka's INVALID_REQUEST
("cannot update these configs dynamically"), rather than stored and silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from pafka.cluster.topic_config import parse_topic_config
from pafka.errors import InvalidConfigError, InvalidRequestError

DEFAULT_ENTITY = "<default>"

TOPIC_KEY_OF: Mapping[str, str] = {
    "log.retention.ms": "retention.ms",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.cleanup.policy": "cleanup.policy",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "message.max.bytes": "max.message.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
}
"""Dynamic broker config -> the topic config it is the default of."""

LIST_KEYS = frozenset({"log.cleanup.policy"})


def validate_entity(name: str, this_broker: int) -> int | None:
    """The broker id a resource name addresses (None: the cluster default).

    Kafka answers a broker's own configs only on that broker: the admin client sends them there.
    """
    if name in ("", DEFAULT_ENTITY):
        return None
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestError(f"broker id must be an integer, got {name!r}") from None
    if broker_id != this_broker:
        raise InvalidRequestError(
            f"unexpected broker id, expected {this_broker}, but received {broker_id}"
        )
    return broker_id


def validate(overrides: Mapping[str, str]) -> None:
    """Refuse configs pafka cannot update dynamically, and values the topic config refuses."""
    refused = sorted(k for k in overrides if k not in TOPIC_KEY_OF)
    if refused:
        raise InvalidRequestError(f"cannot update these configs dynamically: {refused}")
    try:
        parse_topic_config(topic_defaults(overrides))
    except InvalidConfigError as exc:
        raise InvalidRequestError(f"invalid dynamic broker config: {exc.message}") from exc


def topic_defaults(broker_overrides: Mapping[str, str]) -> dict[str, str]:
    """Broker overrides under their topic config names."""
    return {TOPIC_KEY_OF[k]: v for k, v in broker_overrides.items() if k in TOPIC_KEY_OF}


def effective(cluster_default: Mapping[str, str], this_broker: Mapping[str, str]) -> dict[str, str]:
    """The dynamic overrides in force on one broker: its own over the cluster default's."""
    return {**cluster_default, **this_broker}
