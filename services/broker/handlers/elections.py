"""ElectLeaders: preferred or unclean leader elections, decided by the active controller.

The broker forwards the request (``controller_link``) and turns the controller's outcome per
partition into the response. A request for every partition (null) leaves out those that needed
no election, as Kafka does; a request that fails as a whole (no controller, timeout) puts its
error on every partition named, and in the top-level error code from v1.
"""

from __future__ import annotations

from typing import Any

from pafka.cluster.elect_leaders import ElectionType
from pafka.errors import (
    ElectionNotNeededError,
    InvalidRequestError,
    PafkaError,
    wire_error,
)
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.controller_link import call_controller
from services.broker.handlers.authorization import require_cluster
from services.broker.handlers.context import RequestContext

Result = tuple[str, int, int, str | None]


async def handle_elect_leaders(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    raw_kind = getattr(request, "election_type", None)  # absent before v1: preferred
    kind = ElectionType.PREFERRED if raw_kind is None else int(raw_kind)
    named: list[tuple[str, int]] | None = None
    if request.topic_partitions is not None:
        named = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    top_error = 0
    results: list[Result]
    try:
        require_cluster(ctx, Operation.ALTER)
        if kind not in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
            raise InvalidRequestError(f"unknown election type {kind}")
        answer = await call_controller(
            ctx.broker.zk,
            "/elect-leaders",
            {"election_type": kind, "partitions": named},
            request.timeout_ms,
            secret=ctx.broker.settings.control_secret,
        )
        results = [(str(t), int(p), int(c), m) for t, p, c, m in answer["results"]]
    except PafkaError as exc:
        error = wire_error(exc)
        top_error = error.code
        results = [(t, p, error.code, error.message) for t, p in named or []]
    if named is None:
        results = [r for r in results if r[2] != ElectionNotNeededError.code]
    by_topic: dict[str, list[Any]] = {}
    part_cls = cls.ReplicaElectionResult.PartitionResult
    for topic, partition, code, message in results:
        by_topic.setdefault(topic, []).append(
            part_cls(partition_id=partition, error_code=ctx.error(code), error_message=message)
        )
    return cls(
        throttle_time_ms=0,
        error_code=ctx.error(top_error) if ctx.api_version >= 1 else 0,
        replica_election_results=[
            cls.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()
        ],
    )
