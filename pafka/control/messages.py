"""The controller-to-broker control API: LeaderAndIsr, UpdateMetadata and StopReplica.

The active controller POSTs these as JSON to a broker's HTTP port (design §1), at the paths in
``ENDPOINTS``. Every request carries the sender's controller epoch; a broker that has already seen
a higher epoch answers 409 with ``error_code`` 11 (STALE_CONTROLLER_EPOCH) and changes nothing,
which is how a deposed controller is fenced on the broker side.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from pafka.errors import InvalidRequestError

LEADER_AND_ISR = "/control/leader-and-isr"
UPDATE_METADATA = "/control/update-metadata"
STOP_REPLICA = "/control/stop-replica"
ENDPOINTS = (LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA)


@dataclass(frozen=True)
class LiveBroker:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    """Everything a broker needs to know about one partition."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int


@dataclass(frozen=True)
class LeaderAndIsr:
    controller_id: int
    controller_epoch: int
    partitions: tuple[PartitionInfo, ...]
    live_leaders: tuple[LiveBroker, ...]


@dataclass(frozen=True)
class UpdateMetadata:
    """Metadata for the broker's cache.

    With ``full`` set the broker replaces its whole cache (sent when a broker joins or the
    controller fails over); otherwise ``partitions`` are merged and ``deleted_topics`` dropped.
    """

    controller_id: int
    controller_epoch: int
    live_brokers: tuple[LiveBroker, ...]
    partitions: tuple[PartitionInfo, ...]
    deleted_topics: tuple[str, ...] = ()
    full: bool = False
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class StopReplica:
    controller_id: int
    controller_epoch: int
    partitions: tuple[tuple[str, int], ...]
    delete: bool


@dataclass(frozen=True)
class ControlResponse:
    error_code: int = 0
    message: str = ""
    partition_errors: dict[str, int] = field(default_factory=dict)


def _jsonable(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def encode(
    message: LeaderAndIsr | UpdateMetadata | StopReplica | ControlResponse,
) -> dict[str, Any]:
    result: dict[str, Any] = _jsonable(asdict(message))
    return result


def _broker(d: dict[str, Any]) -> LiveBroker:
    return LiveBroker(id=int(d["id"]), host=str(d["host"]), port=int(d["port"]), rack=d.get("rack"))


def _partition(d: dict[str, Any]) -> PartitionInfo:
    return PartitionInfo(
        topic=str(d["topic"]),
        topic_id=uuid.UUID(str(d["topic_id"])),
        partition=int(d["partition"]),
        leader=int(d["leader"]),
        leader_epoch=int(d["leader_epoch"]),
        isr=tuple(int(b) for b in d["isr"]),
        replicas=tuple(int(b) for b in d["replicas"]),
        zk_version=int(d["zk_version"]),
        controller_epoch=int(d["controller_epoch"]),
    )


def decode_leader_and_isr(d: dict[str, Any]) -> LeaderAndIsr:
    try:
        return LeaderAndIsr(
            controller_id=int(d["controller_id"]),
            controller_epoch=int(d["controller_epoch"]),
            partitions=tuple(_partition(p) for p in d["partitions"]),
            live_leaders=tuple(_broker(b) for b in d["live_leaders"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequestError(f"bad LeaderAndIsr: {exc!r}") from exc


def decode_update_metadata(d: dict[str, Any]) -> UpdateMetadata:
    try:
        return UpdateMetadata(
            controller_id=int(d["controller_id"]),
            controller_epoch=int(d["controller_epoch"]),
            live_brokers=tuple(_broker(b) for b in d["live_brokers"]),
            partitions=tuple(_partition(p) for p in d["partitions"]),
            deleted_topics=tuple(str(t) for t in d.get("deleted_topics", ())),
            full=bool(d.get("full", False)),
            topic_configs={
                str(t): {str(k): str(v) for k, v in c.items()}
                for t, c in d.get("topic_configs", {}).items()
            },
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidRequestError(f"bad UpdateMetadata: {exc!r}") from exc


def decode_stop_replica(d: dict[str, Any]) -> StopReplica:
    try:
        return StopReplica(
            controller_id=int(d["controller_id"]),
            controller_epoch=int(d["controller_epoch"]),
            partitions=tuple((str(t), int(p)) for t, p in d["partitions"]),
            delete=bool(d["delete"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidRequestError(f"bad StopReplica: {exc!r}") from exc
