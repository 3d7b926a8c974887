"""Client quotas in ZooKeeper: the CLI and AlterClientQuotas write Kafka's layout, every broker
follows the change notifications, DescribeClientQuotas answers as Kafka 2.8 does.

Neither confluent-kafka nor kafka-python 3 has an admin call for client quotas, so the APIs
are driven with kafka-python's own encoding of the requests (independent of pafka's codec).
A broker's view of a quota is seen from outside: a Produce by a client over a tiny quota comes
back with a throttle time (KIP-219 versions answer at once).
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from pafka.admin.client_quotas import alter_quotas
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle, own_cluster
from tests.integration.wire import read_exact

SETTLE_S = 10.0


def _call(
    address: tuple[str, int], request: Any, response_cls: Any, version: int, client_id: str
) -> Any:
    with socket.create_connection(address, timeout=15) as sock:
        request.with_header(correlation_id=7, client_id=client_id)
        sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        (size,) = struct.unpack(">i", read_exact(sock, 4))
        return response_cls.decode(read_exact(sock, size), version=version, header=True)


def _produce_timed(address: tuple[str, int], client_id: str, version: int) -> tuple[int, float]:
    """(throttle_time_ms, seconds until the answer) of a Produce of an empty record set to a
    topic nobody has: the answer is an error, but the request's bytes count against the
    client's producer quota all the same."""
    cls = ProduceRequest[version]
    data = cls.TopicProduceData(
        name="no-such-topic-" + "x" * 200,
        partition_data=[cls.TopicProduceData.PartitionProduceData(index=0, records=b"")],
    )
    txn: dict[str, Any] = {"transactional_id": None} if version >= 3 else {}
    request = cls(**txn, acks=1, timeout_ms=1000, topic_data=[data])
    started = time.monotonic()
    response = _call(address, request, ProduceResponse, version, client_id)
    return int(response.throttle_time_ms), time.monotonic() - started


def _produce_throttle_ms(address: tuple[str, int], client_id: str) -> int:
    """A KIP-219 Produce (v7): answered at once, its throttle time in the answer."""
    return _produce_timed(address, client_id, 7)[0]


def _pafka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "quotas", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _until(check: Any, timeout_s: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not seen in time"
        time.sleep(0.2)


def test_cli_quota_is_in_kafkas_layout_and_seen_by_every_broker(cluster: ClusterHandle) -> None:
    client = f"cq-{uuid.uuid4().hex[:8]}"
    addresses = [cluster.broker_address(b) for b in cluster.broker_ids()]
    assert all(_produce_throttle_ms(a, client) == 0 for a in addresses)
    done = _pafka(
        "alter", "--client-id", client, "--add", "producer_byte_rate=5", "--zookeeper",
        cluster.zk_connect,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data, _ = cluster.zk.get(f"/config/clients/{client}")
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "5"}}
    changes = sorted(cluster.zk.get_children("/config/changes"))
    last, _ = cluster.zk.get(f"/config/changes/{changes[-1]}")
    assert changes[-1].startswith("config_change_")
    assert json.loads(last) == {"version": 2, "entity_path": f"clients/{client}"}
    for address in addresses:
        _until(lambda a=address: _produce_throttle_ms(a, client) > 0)
    shown = _pafka("describe", "--client-id", client, "--zookeeper", cluster.zk_connect)
    assert f"client id '{client}'" in shown.stdout and "producer_byte_rate=5" in shown.stdout
    done = _pafka(
        "alter", "--client-id", client, "--delete", "producer_byte_rate", "--bootstrap-server",
        cluster.bootstrap,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Without a quota, the sensor (still there) is unlimited again.
    for address in addresses:
        _until(lambda a=address: _produce_throttle_ms(a, client) == 0)


def test_version_1_notifications_and_malformed_nodes(cluster: ClusterHandle) -> None:
    """Kafka before 2.0 wrote version 1 notifications; a malformed entity config or
    notification is skipped without hiding the others."""
    client, bad = f"cq1-{uuid.uuid4().hex[:8]}", f"cqbad-{uuid.uuid4().hex[:8]}"
    zk = cluster.zk
    zk.create(f"/config/clients/{bad}", b"not json", makepath=True)
    zk.create("/config/changes/config_change_", b"{garbage", sequence=True)
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 2, "entity_path": f"clients/{bad}"}).encode(),
        sequence=True,
    )
    zk.create(
        f"/config/clients/{client}",
        json.dumps({"version": 1, "config": {"producer_byte_rate": "5"}}).encode(),
        makepath=True,
    )
    zk.create(
        "/config/changes/config_change_",
        json.dumps({"version": 1, "entity_type": "clients", "entity_name": client}).encode(),
        sequence=True,
    )
    for broker_id in cluster.broker_ids():
        address = cluster.broker_address(broker_id)
        _until(lambda a=address: _produce_throttle_ms(a, client) > 0)


def _alter(
    cluster: ClusterHandle,
    entity: list[tuple[str, str | None]],
    ops: list[tuple[str, float, bool]],
    validate_only: bool = False,
) -> tuple[int, str | None]:
    cls = AlterClientQuotasRequest[1]
    entry = cls.EntryData
    request = cls(
        entries=[
            entry(
                entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[entry.OpData(key=k, value=v, remove=r) for k, v, r in ops],
            )
        ],
        validate_only=validate_only,
    )
    address = cluster.broker_address(cluster.broker_ids()[0])
    response = _call(address, request, AlterClientQuotasResponse, 1, "pafka-tests")
    (result,) = response.entries
    return int(result.error_code), result.error_message


def _describe(
    cluster: ClusterHandle, components: list[tuple[str, int, str | None]], strict: bool = False
) -> Any:
    cls = DescribeClientQuotasRequest[1]
    request = cls(
        components=[
            cls.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components
        ],
        strict=strict,
    )
    address = cluster.broker_address(cluster.broker_ids()[-1])
    return _call(address, request, DescribeClientQuotasResponse, 1, "pafka-tests")


def _entries(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == 0, response.error_message
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def test_alter_and_describe_client_quotas_over_the_wire(cluster: ClusterHandle) -> None:
    user = f"alice-{uuid.uuid4().hex[:6]}/x"  # sanitized in the znode name
    sanitized = user.replace("/", "%2F")
    # A SCRAM credential of the same user, as Kafka keeps it: a quota change leaves it alone.
    scram = {"SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"}
    cluster.zk.create(
        f"/config/users/{sanitized}",
        json.dumps({"version": 1, "config": scram}).encode(),
        makepath=True,
    )
    assert _alter(cluster, [("user", user)], [("producer_byte_rate", 1024.0, False)]) == (0, None)
    assert _alter(
        cluster,
        [("user", user), ("client-id", None)],
        [("consumer_byte_rate", 2048.0, False), ("request_percentage", 12.5, False)],
    ) == (0, None)
    data, _ = cluster.zk.get(f"/config/users/{sanitized}")
    assert json.loads(data)["config"] == {**scram, "producer_byte_rate": "1024"}
    data, _ = cluster.zk.get(f"/config/users/{sanitized}/clients/<default>")
    assert json.loads(data)["config"] == {
        "consumer_byte_rate": "2048",
        "request_percentage": "12.5",
    }
    # validate_only writes nothing.
    ok = _alter(cluster, [("user", user)], [("producer_byte_rate", 1.0, False)], True)
    assert ok == (0, None)
    exact = _entries(_describe(cluster, [("user", 0, user)]))
    assert exact == {
        (("user", user),): {"producer_byte_rate": 1024.0},
        (("client-id", None), ("user", user)): {
            "consumer_byte_rate": 2048.0,
            "request_percentage": 12.5,
        },
    }
    strict = _entries(_describe(cluster, [("user", 0, user)], strict=True))
    assert strict == {(("user", user),): {"producer_byte_rate": 1024.0}}
    defaults = _entries(_describe(cluster, [("user", 0, user), ("client-id", 1, None)]))
    assert list(defaults) == [(("client-id", None), ("user", user))]
    any_client = _entries(_describe(cluster, [("user", 0, user), ("client-id", 2, None)]))
    assert list(any_client) == [(("client-id", None), ("user", user))]
    # Removing every quota leaves the user's other keys.
    assert _alter(cluster, [("user", user)], [("producer_byte_rate", 0.0, True)]) == (0, None)
    data, _ = cluster.zk.get(f"/config/users/{sanitized}")
    assert json.loads(data)["config"] == scram


def test_client_quota_errors_are_kafkas(cluster: ClusterHandle) -> None:
    invalid_request, unsupported_version = 42, 35
    code, _ = _alter(cluster, [("client-id", "c")], [("bogus_rate", 1.0, False)])
    assert code == invalid_request
    code, _ = _alter(cluster, [("client-id", "c")], [("producer_byte_rate", 1.5, False)])
    assert code == invalid_request
    code, _ = _alter(cluster, [("client-id", "a"), ("client-id", "b")], [])
    assert code == invalid_request
    code, _ = _alter(cluster, [("ip", "1.2.3.4")], [("producer_byte_rate", 1.0, False)])
    assert code == unsupported_version
    response = _describe(cluster, [("user", 0, None)])
    assert response.error_code == invalid_request and response.entries is None
    response = _describe(cluster, [("user", 0, "a"), ("user", 1, None)])
    assert response.error_code == invalid_request
    response = _describe(cluster, [("group", 2, None)])
    assert response.error_code == unsupported_version


def test_old_clients_get_their_answer_after_the_throttle(cluster: ClusterHandle) -> None:
    """Before KIP-219 (Produce v0-v5) the broker holds a throttled answer for the throttle
    time; the answer says how long it was."""
    client = f"cqold-{uuid.uuid4().hex[:8]}"
    address = cluster.broker_address(cluster.broker_ids()[0])
    # Each request is ~300 bytes, over at least 10 s of windows: a few dozen requests reach
    # the quota, and one more owes a fraction of a second.
    alter_quotas(cluster.zk, (None, client), [("producer_byte_rate", 1000.0)], False)
    _until(lambda: _produce_timed(address, client, 7)[0] > 0)
    throttle_ms, took_s = _produce_timed(address, client, 2)
    assert throttle_ms > 0
    assert took_s >= throttle_ms / 1000


def test_request_time_throttles_are_bounded_by_one_window(cluster: ClusterHandle) -> None:
    """A client over a tiny request_percentage is throttled on any request, at most one quota
    window (quota.window.size.seconds, 1 s here) at a time, as Kafka's request quotas."""
    client = f"cqreq-{uuid.uuid4().hex[:8]}"
    address = cluster.broker_address(cluster.broker_ids()[0])
    alter_quotas(cluster.zk, (None, client), [("request_percentage", 0.0001)], False)
    request = MetadataRequest[8](
        topics=[], allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=False,
    )  # fmt: skip
    throttles: list[int] = []

    def throttled() -> bool:
        response = _call(address, request, MetadataResponse, 8, client)
        throttles.append(int(response.throttle_time_ms))
        return throttles[-1] > 0

    _until(throttled)
    assert 0 < max(throttles) <= 1000


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    env = {
        **TEST_BROKER_ENV,
        "PAFKA_BROKER_AUTHORIZER": "acl",
        "PAFKA_BROKER_ALLOW_EVERYONE_IF_NO_ACL_FOUND": "true",
    }
    with own_cluster(tmp_path_factory, "quota-acls", brokers=1, controllers=1, broker_env=env) as c:
        _until(lambda: len(c.broker_ids()) == 1, timeout_s=60)
        yield c


def _cluster_acl(cluster: ClusterHandle, permission: str, operation: str) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "pafka.cli.main", "acls", "add", "--cluster",
            f"--{permission}-principal", "User:ANONYMOUS", "--operation", operation,
            "--zookeeper", cluster.zk_connect,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_quota_apis_need_the_cluster_config_operations(secured: ClusterHandle) -> None:
    """As Kafka: AlterClientQuotas needs ALTER_CONFIGS on the cluster (refused per entity),
    DescribeClientQuotas DESCRIBE_CONFIGS (refused as a whole). Once the cluster has an ACL,
    allow.everyone.if.no.acl.found no longer lets the rest through."""
    cluster_authorization_failed = 31
    entity = [("client-id", f"cqacl-{uuid.uuid4().hex[:6]}")]
    set_rate = [("producer_byte_rate", 1000.0, False)]
    assert _alter(secured, entity, set_rate) == (0, None)
    _cluster_acl(secured, "allow", "DescribeConfigs")
    _until(lambda: _alter(secured, entity, set_rate)[0] == cluster_authorization_failed)
    assert _entries(_describe(secured, [("client-id", 0, entity[0][1])]))
    _cluster_acl(secured, "deny", "DescribeConfigs")
    _until(lambda: _describe(secured, []).error_code == cluster_authorization_failed)
    assert _describe(secured, []).entries is None
