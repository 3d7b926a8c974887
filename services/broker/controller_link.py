"""Admin requests the broker forwards to the active controller's HTTP port.

Kafka sends ElectLeaders and the reassignment APIs to its controller; pafka's controller is a
separate service that clients do not reach, so the broker that receives such a request passes
it on. The controller's address is read from ``/controller`` for each request (it moves on
failover). No active controller, or one that cannot be reached, is NOT_CONTROLLER, which Kafka's
admin clients retry.

Every wait is bounded: reading ``/controller`` by the ZooKeeper client's own deadline, the
connect by ``socket.connection.setup.timeout.ms``, the answer by the request's own timeout plus
a margin for the round trip.
"""

from __future__ import annotations

from typing import Any

import httpx

from pafka.control.secret import bearer_headers
from pafka.errors import NotControllerError, PafkaError, for_code
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.zk.client import ZkClient
from pafka.zk.znodes import ControllerZNode

# Beyond the request's own timeout: the HTTP round trip itself.
MARGIN_S = 5.0


async def call_controller(
    zk: ZkClient,
    path: str,
    body: dict[str, Any],
    timeout_ms: int,
    network: NetworkDeadlines = DEFAULT_DEADLINES,
    secret: str | None = None,
) -> Any:
    """POST ``body`` to the active controller's ``path`` (with the control API's ``secret``);
    its JSON answer, or its error raised."""
    got = await zk.get(ControllerZNode.path())
    if got is None:
        raise NotControllerError("no controller is active")
    url = ControllerZNode.decode(got[0]).url.rstrip("/")
    timeout_s = max(timeout_ms, 0) / 1000 + MARGIN_S
    connect_s = min(network.connection_setup_timeout_ms / 1000, timeout_s)
    try:
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s, connect=connect_s), headers=bearer_headers(secret)
        ) as client:
            response = await client.post(url + path, json={**body, "timeout_ms": timeout_ms})
    except httpx.HTTPError as exc:
        raise NotControllerError(f"the controller at {url} did not answer: {exc}") from exc
    try:
        answer = response.json()
    except ValueError as exc:
        raise NotControllerError(f"the controller answered {response.status_code}") from exc
    if response.status_code != 200:
        code = int(answer.get("error_code", -1)) if isinstance(answer, dict) else -1
        message = answer.get("message", "") if isinstance(answer, dict) else ""
        error: PafkaError = for_code(code, f"controller: {message}")
        raise error
    return answer
