"""The control APIs' shared secret on a real cluster: forged LeaderAndIsr and UpdateMetadata
without it (or with a wrong one) are refused with 401 and change nothing, while the controller's
requests to brokers and the brokers' to the controller carry it and the cluster works."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kafka.protocol.admin import ElectLeadersRequest, ElectLeadersResponse

from pafka.control import messages as control
from pafka.control.secret import bearer_headers
from pafka.errors import ClusterAuthorizationFailedError
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.secure_cluster import ZK_AUTH, create_topic_and_round_trip
from tests.integration.wire import request_once

SECRET = "the-control-secret"
TOPIC = "guarded"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory,
        "control-secret",
        brokers=2,
        controllers=1,
        zk_auth=ZK_AUTH,
        control_secret=SECRET,
    ) as handle:
        # Controller -> brokers: the topic's LeaderAndIsr and UpdateMetadata were accepted.
        create_topic_and_round_trip(handle.local.bootstrap, TOPIC)
        yield handle


def _status(url: str) -> dict[str, Any]:
    response = httpx.get(url + "/status", headers=bearer_headers(SECRET), timeout=10)
    response.raise_for_status()
    status: dict[str, Any] = response.json()
    return status


def _forged(epoch: int) -> dict[str, dict[str, Any]]:
    """A LeaderAndIsr and an UpdateMetadata from a controller of a much newer epoch: accepted,
    they would make broker 1 lead a partition nobody created and fence the real controller."""
    forged = control.PartitionInfo(
        topic="forged",
        topic_id=uuid.uuid4(),
        partition=0,
        leader=1,
        leader_epoch=0,
        isr=(1,),
        replicas=(1,),
        zk_version=0,
        controller_epoch=epoch,
    )
    me = control.LiveBroker(1, "127.0.0.1", 1)
    return {
        control.LEADER_AND_ISR: control.encode(control.LeaderAndIsr(99, epoch, (forged,), (me,))),
        control.UPDATE_METADATA: control.encode(
            control.UpdateMetadata(99, epoch, (me,), (forged,), full=True)
        ),
    }


@pytest.mark.parametrize("headers", [{}, bearer_headers("wrong"), {"Authorization": SECRET}])
def test_forged_control_requests_are_refused_and_change_nothing(
    guarded: ClusterHandle, headers: dict[str, str]
) -> None:
    url = guarded.local.broker(1).http_url
    before = _status(url)
    for path, body in _forged(before["controller_epoch"] + 100).items():
        response = httpx.post(url + path, json=body, headers=headers, timeout=10)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error_code"] == ClusterAuthorizationFailedError.code
    after = _status(url)
    assert after["controller_epoch"] == before["controller_epoch"]
    assert "forged-0" not in after["partitions"]
    assert after["partitions"].keys() == before["partitions"].keys()


def test_probes_and_metrics_stay_open_the_rest_needs_the_secret(guarded: ClusterHandle) -> None:
    for service in guarded.local.services.values():
        for path in ("/livez", "/readyz", "/metrics"):
            assert httpx.get(service.http_url + path, timeout=10).status_code == 200, path
        assert httpx.get(service.http_url + "/status", timeout=10).status_code == 401
    controller = guarded.local.controllers()[0].http_url
    refused = httpx.post(
        controller + "/elect-leaders",
        json={"election_type": 0, "partitions": None},
        headers=bearer_headers("wrong"),
        timeout=10,
    )
    assert refused.status_code == 401


def test_brokers_reach_the_controller_with_the_secret(guarded: ClusterHandle) -> None:
    """ElectLeaders goes broker -> controller: refused there, it would answer error 31."""
    broker = guarded.local.broker(2)
    answer: Any = request_once(
        (broker.host, broker.port),
        ElectLeadersRequest[1](election_type=0, topic_partitions=None, timeout_ms=30_000),
        ElectLeadersResponse,
        1,
    )
    assert answer.error_code == 0


def test_a_broker_restart_goes_through_controlled_shutdown(guarded: ClusterHandle) -> None:
    """The stopping broker asks the controller to move leadership (its secret accepted), the
    controller tells the restarted broker its partitions again, and records flow."""
    guarded.local.restart("broker-2")
    log = Path(guarded.local.broker(2).log_path).read_text()
    assert "controlled shutdown complete" in log
    assert "controlled shutdown attempt" not in log
    create_topic_and_round_trip(guarded.local.bootstrap, "guarded-after-restart")
