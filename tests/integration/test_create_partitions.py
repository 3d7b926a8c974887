"""CreatePartitions with explicit replica assignments numbers the new partitions from
ZooKeeper's count, even on a broker whose metadata does not show the topic yet."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from typing import Any

from kafka.protocol.admin import CreatePartitionsRequest, CreatePartitionsResponse

from pafka.admin import topics as admin
from pafka.zk.znodes import TopicZNode
from tests.integration.wire import request_once


def test_assignments_right_after_the_topic_is_created(cluster) -> None:  # type: ignore[no-untyped-def]
    name = f"grow-{uuid.uuid4().hex[:8]}"
    first, second, third = cluster.broker_ids()
    cls = CreatePartitionsRequest[1]
    request = cls(
        topics=[
            cls.CreatePartitionsTopic(
                name=name,
                count=3,
                assignments=[
                    cls.CreatePartitionsTopic.CreatePartitionsAssignment(broker_ids=[second]),
                    cls.CreatePartitionsTopic.CreatePartitionsAssignment(broker_ids=[third]),
                ],
            )
        ],
        timeout_ms=30_000,
        validate_only=False,
    )
    answers: list[Any] = []
    controllers = cluster.local.controllers()
    # With the controllers stopped, the topic is in ZooKeeper but in no broker's metadata: what
    # a request reaching another broker right after CreateTopics sees.
    for controller in controllers:
        cluster.local.send_signal(controller, signal.SIGSTOP)
    try:
        admin.create_topic(cluster.zk, name, 1, 1, {}, {0: (first,)})
        asking = threading.Thread(
            target=lambda: answers.append(
                request_once(cluster.broker_address(first), request, CreatePartitionsResponse, 1)
            )
        )
        asking.start()
        time.sleep(1.0)
    finally:
        for controller in controllers:
            cluster.local.send_signal(controller, signal.SIGCONT)
    asking.join(60)
    ((result,),) = [a.results for a in answers]
    assert (result.name, result.error_code, result.error_message) == (name, 0, None)
    data, _ = cluster.zk.get(TopicZNode.path(name))
    assert TopicZNode.decode(name, data).partitions == {
        0: (first,),
        1: (second,),
        2: (third,),
    }
    cluster.wait_for_leaders(name, 3)


def _grow(name: str, count: int, replicas: list[list[int]], validate_only: bool) -> Any:
    cls = CreatePartitionsRequest[1]
    assignment = cls.CreatePartitionsTopic.CreatePartitionsAssignment
    return cls(
        topics=[
            cls.CreatePartitionsTopic(
                name=name, count=count, assignments=[assignment(broker_ids=r) for r in replicas]
            )
        ],
        timeout_ms=30_000,
        validate_only=validate_only,
    )


def test_assignments_must_match_the_increase_and_validate_only_writes_nothing(cluster) -> None:  # type: ignore[no-untyped-def]
    name = f"grow-check-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=1)
    first, second, _ = cluster.broker_ids()
    address = cluster.broker_address(first)

    def ask(request: Any) -> tuple[int, str | None]:
        ((result,),) = [request_once(address, request, CreatePartitionsResponse, 1).results]
        return result.error_code, result.error_message

    error, message = ask(_grow(name, 4, [[second]], validate_only=True))
    assert error == 39 and message is not None and "by 3 but 1 assignments" in message
    assert ask(_grow(name, 1, [], validate_only=True))[0] == 37  # INVALID_PARTITIONS
    assert ask(_grow(name, 2, [[second]], validate_only=True)) == (0, None)
    data, _ = cluster.zk.get(TopicZNode.path(name))
    assert list(TopicZNode.decode(name, data).partitions) == [0]
