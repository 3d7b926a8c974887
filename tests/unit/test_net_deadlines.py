"""Every network wait ends: on real sockets, peers that drop SYNs (a full accept queue) or
accept and never answer make each call site raise its error instead of hanging.

Deadlines here are ~0.2 s; each call is wrapped in a guard many times longer (``bounded``), so a
regression fails the test rather than hanging it. The reconnect backoff is pure and checked by
hypothesis.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.client.cluster import ClusterClient
from pafka.client.connection import BrokerConnection
from pafka.cluster.topic_config import TopicConfig
from pafka.control import messages as control
from pafka.control.messages import LiveBroker
from pafka.errors import (
    BrokerConnectionError,
    ConfigError,
    CoordinationError,
    FencedLeaderEpochError,
    NotControllerError,
)
from pafka.local.zookeeper import ZooKeeperServer
from pafka.net.deadlines import KeepAlive, NetworkDeadlines
from pafka.net.sockets import Backoff, backoff_ms, open_connection
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from pafka.security.listeners import plaintext
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.zk.client import ZkClient, give_up_at
from pafka.zk.znodes import ControllerZNode
from services.broker.controller_link import call_controller
from services.broker.follower import FetcherSettings, FollowerLink
from services.broker.partition import Partition
from services.broker.server import KafkaServer
from services.broker.settings import BrokerSettings
from services.controller.channel import BrokerChannel
from services.controller.settings import ControllerSettings
from tests.unit.net_util import eventually, full_backlog, http_server, silent_server

T = TypeVar("T")

SHORT = NetworkDeadlines(
    connection_setup_timeout_ms=200,
    default_api_timeout_ms=200,
    replica_socket_timeout_ms=200,
    controller_socket_timeout_ms=200,
    reconnect_backoff_ms=10,
    reconnect_backoff_max_ms=50,
    connections_max_idle_ms=300,
)
GUARD_S = 5.0


async def bounded(call: Awaitable[T]) -> T:
    """The call's own deadline must end it long before the guard does."""
    return await asyncio.wait_for(call, GUARD_S)


def run(coro: Awaitable[None]) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


# -- the reconnect backoff (pure) ----------------------------------------------------------------


@given(
    base=st.integers(1, 10_000),
    extra=st.integers(0, 100_000),
    failures=st.integers(0, 10_000),
    draw=st.floats(0, 1, exclude_max=True),
)
def test_backoff_is_bounded(base: int, extra: int, failures: int, draw: float) -> None:
    delay = backoff_ms(failures, base, base + extra, draw)
    assert 0 <= delay <= base + extra
    if failures == 0:
        assert delay == 0  # the first attempt is not delayed


@given(base=st.integers(1, 10_000), extra=st.integers(0, 100_000), failures=st.integers(1, 60))
def test_backoff_grows_until_the_cap(base: int, extra: int, failures: int) -> None:
    cap = base + extra
    middle = 0.5  # no jitter
    now, after = (backoff_ms(n, base, cap, middle) for n in (failures, failures + 1))
    assert after >= now
    assert backoff_ms(1, base, cap, middle) == base
    assert now == min(base * 2 ** (failures - 1), cap)


@given(failures=st.integers(1, 50), draw=st.floats(0, 1, exclude_max=True))
def test_backoff_resets_on_success(failures: int, draw: float) -> None:
    backoff = Backoff(50, 1000)
    for _ in range(failures):
        backoff = backoff.failed()
    assert backoff.failures == failures
    assert 50 * 0.8 <= backoff.delay_ms(draw) <= 1000
    reset = backoff.succeeded()
    assert reset.failures == 0 and reset.delay_ms(draw) == 0
    assert reset.failed().delay_ms(0.5) == 50


def test_a_zookeeper_call_gives_up_a_limit_after_the_later_of_its_start_and_the_disconnect() -> (
    None
):
    assert give_up_at(10.0, None, 6.0) is None
    assert give_up_at(10.0, 4.0, 6.0) == 16.0
    assert give_up_at(10.0, 12.0, 6.0) == 18.0


# -- settings ------------------------------------------------------------------------------------


def test_settings_read_the_deadlines_with_kafka_defaults() -> None:
    broker = BrokerSettings.from_env({"PAFKA_BROKER_ID": "1"})
    assert broker.network == NetworkDeadlines()
    assert broker.network.connection_setup_timeout_ms == 10_000
    assert broker.network.replica_socket_timeout_ms == 30_000
    assert (broker.network.reconnect_backoff_ms, broker.network.reconnect_backoff_max_ms) == (
        50,
        1000,
    )
    env = {
        "PAFKA_CONTROLLER_SOCKET_TIMEOUT_MS": "1234",
        "PAFKA_CONTROLLER_SOCKET_CONNECTION_SETUP_TIMEOUT_MS": "99",
        "PAFKA_CONTROLLER_SOCKET_KEEPALIVE_IDLE_MS": "20000",
    }
    network = ControllerSettings.from_env(env).network
    assert network.controller_socket_timeout_ms == 1234
    assert network.connection_setup_timeout_ms == 99
    assert network.keepalive == KeepAlive(idle_ms=20_000)


def test_a_replica_socket_timeout_below_the_fetch_wait_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"replica\.socket\.timeout\.ms"):
        BrokerSettings.from_env(
            {
                "PAFKA_BROKER_ID": "1",
                "PAFKA_BROKER_REPLICA_SOCKET_TIMEOUT_MS": "400",
                "PAFKA_BROKER_REPLICA_FETCH_WAIT_MAX_MS": "500",
            }
        )
    with pytest.raises(ConfigError, match="reconnect"):
        BrokerSettings.from_env(
            {
                "PAFKA_BROKER_ID": "1",
                "PAFKA_BROKER_RECONNECT_BACKOFF_MS": "500",
                "PAFKA_BROKER_RECONNECT_BACKOFF_MAX_MS": "100",
            }
        )


# -- sockets -------------------------------------------------------------------------------------


def test_connect_to_a_peer_dropping_syns_times_out() -> None:
    async def scenario() -> None:
        with full_backlog() as peer:
            with pytest.raises(TimeoutError, match=r"within 0\.2s"):
                await bounded(open_connection("127.0.0.1", peer.port, setup_timeout_s=0.2))
            with pytest.raises(TimeoutError, match="3 attempts"):
                await bounded(
                    open_connection(
                        "127.0.0.1", peer.port, setup_timeout_s=0.25, probe_interval_s=0.1
                    )
                )

    run(scenario())


def test_probing_finds_a_healed_path_before_the_kernels_next_syn() -> None:
    """The kernel resends a dropped SYN at 1, 3 and 7 s: healed 3.5 s into the connect, a plain
    connect waits until 7 s; probing every second connects within about a second."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        with full_backlog() as peer:
            connecting = asyncio.ensure_future(
                open_connection("127.0.0.1", peer.port, setup_timeout_s=10.0, probe_interval_s=1.0)
            )
            await asyncio.sleep(3.5)
            assert not connecting.done()
            peer.heal()
            healed = loop.time()
            _, writer = await asyncio.wait_for(connecting, 10.0)
            waited_s = loop.time() - healed
            writer.close()
            assert waited_s < 2.5, f"connected {waited_s:.1f}s after the heal"

    run(scenario())


def test_keepalive_and_user_timeout_are_set_on_long_lived_connections() -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            _, writer = await open_connection(
                "127.0.0.1",
                peer.port,
                setup_timeout_s=1.0,
                keepalive=KeepAlive(idle_ms=7000, interval_ms=2500, count=4),
                user_timeout_ms=1234,
            )
            sock = writer.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 7
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 3
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 4
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 1234
            writer.close()

    run(scenario())


# -- the broker's follower -----------------------------------------------------------------------


def _link(port: int) -> FollowerLink:
    settings = FetcherSettings(1, 100, 1 << 20, 10 << 20, 1000, network=SHORT)
    return FollowerLink(settings, LiveBroker(2, "127.0.0.1", port))


def _partition(tmp_path: Path) -> Partition:
    partition = Partition("t", 0, Log.open(tmp_path / "t-0", LogConfig()), TopicConfig())
    partition.leader, partition.leader_epoch = 2, 1
    return partition


def test_follower_connect_to_an_unreachable_leader_times_out() -> None:
    async def scenario() -> None:
        with full_backlog() as peer, pytest.raises(TimeoutError):
            await bounded(_link(peer.port)._connect())

    run(scenario())


def test_follower_request_unanswered_within_the_replica_socket_timeout_fails() -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            link = _link(peer.port)
            reader, writer = await link._connect()
            body = link._fetch_body(link.session.build({}, set()))
            with pytest.raises(TimeoutError, match="FETCH unanswered within 200 ms"):
                await bounded(link._call(reader, writer, ApiKey.FETCH, 12, body))
            writer.close()

    run(scenario())


def test_follower_drops_a_silent_leader_and_reconnects_with_backoff(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            link = _link(peer.port)
            link.add(_partition(tmp_path))  # truncation first: OffsetForLeaderEpoch, unanswered
            link.task = asyncio.create_task(link.run())
            try:
                await eventually(lambda: peer.connections >= 3 and link.reconnect.failures >= 2)
            finally:
                link.task.cancel()
                await asyncio.gather(link.task, return_exceptions=True)
            link.partitions[("t", 0)].log.close()

    run(scenario())


def test_a_follower_told_to_stop_as_it_is_woken_stops(tmp_path: Path) -> None:
    """Cancellation and a wake landing in the same loop turn: the wait ends in the cancellation
    (Python 3.11's wait_for returned as if woken, and the fetcher ran on for good)."""

    async def scenario() -> None:
        link = _link(1)
        partition = _partition(tmp_path)
        link.add(partition)
        key = (partition.topic, partition.index)
        link.states.failed(key, FencedLeaderEpochError.code, time.monotonic(), 60.0)
        waiting = asyncio.create_task(link._wait_for_due())
        await asyncio.sleep(0)  # the task now waits for the wake or the partition's due time
        link.wake.set()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        partition.log.close()

    run(scenario())


def test_follower_fetches_again_soon_after_an_unreachable_leader_heals(tmp_path: Path) -> None:
    """The leader's SYNs are dropped for 3.5 s, then it accepts: the follower's next probe
    reaches it well before the kernel's next SYN retransmission (7 s) would."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        with full_backlog() as peer:
            settings = FetcherSettings(1, 100, 1 << 20, 10 << 20, 1000)  # Kafka's deadlines
            link = FollowerLink(settings, LiveBroker(2, "127.0.0.1", peer.port))
            partition = _partition(tmp_path)
            link.add(partition)
            link.task = asyncio.create_task(link.run())
            try:
                await asyncio.sleep(3.5)
                peer.heal()
                healed = loop.time()
                await eventually(peer.accept_one, 10.0)
                waited_s = loop.time() - healed
                assert waited_s < 2.5, f"reconnected {waited_s:.1f}s after the heal"
            finally:
                link.task.cancel()
                await asyncio.gather(link.task, return_exceptions=True)
                partition.log.close()

    run(scenario())


# -- pafka's client ------------------------------------------------------------------------------


def test_client_connect_to_an_unreachable_broker_fails_within_the_setup_timeout() -> None:
    async def scenario() -> None:
        with full_backlog() as peer:
            connection = BrokerConnection("127.0.0.1", peer.port, client_id="t", network=SHORT)
            with pytest.raises(BrokerConnectionError, match="cannot connect"):
                await bounded(connection.open())

    run(scenario())


def test_client_call_to_a_silent_broker_fails_and_ends_the_connection() -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            connection = BrokerConnection("127.0.0.1", peer.port, client_id="t", network=SHORT)
            await bounded(connection.open())
            body = request_class(ApiKey.API_VERSIONS)[0]()
            with pytest.raises(BrokerConnectionError, match=r"timed out after 0\.2s"):
                await bounded(connection.call(ApiKey.API_VERSIONS, 0, body))
            assert not connection.alive  # a late answer must not meet the next request
            await connection.close()

    run(scenario())


def test_cluster_client_gives_its_deadlines_to_every_connection() -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            cluster = ClusterClient(bootstrap=[("127.0.0.1", peer.port)], network=SHORT)
            with pytest.raises(BrokerConnectionError, match="timed out"):
                await bounded(cluster.refresh())
            await cluster.close()

    run(scenario())


def test_cluster_client_start_keeps_its_own_deadline_against_a_silent_broker() -> None:
    async def scenario() -> None:
        async with silent_server() as peer:
            cluster = ClusterClient(bootstrap=[("127.0.0.1", peer.port)])  # 60 s per call
            with pytest.raises(BrokerConnectionError, match="no broker answered"):
                await bounded(cluster.start(timeout_s=0.5))
            await cluster.close()

    run(scenario())


# -- controller -> broker control API -------------------------------------------------------------


def test_a_silent_broker_holds_up_only_its_own_channel() -> None:
    async def scenario() -> None:
        fenced: list[int] = []

        async def on_fenced() -> None:
            fenced.append(1)

        message = control.StopReplica(1, 1, (("t", 0),), delete=False)
        async with (
            http_server(silent=True) as silent,
            http_server() as answering,
            httpx.AsyncClient() as client,
        ):
            stuck = BrokerChannel(1, silent.url, client, on_fenced, network=SHORT)
            healthy = BrokerChannel(2, answering.url, client, on_fenced, network=SHORT)
            stuck.send(message)
            await eventually(lambda: len(silent.paths) >= 2)  # timed out, retried
            healthy.send(message)
            await eventually(lambda: healthy.queued == 0 and len(answering.paths) == 1)
            assert stuck._backoff.failures >= 1
            await stuck.close()
            await healthy.close()
        assert not fenced

    run(scenario())


def test_control_request_to_an_unreachable_broker_times_out_and_retries() -> None:
    async def scenario() -> None:
        async def on_fenced() -> None:
            pass

        with full_backlog() as peer:
            async with httpx.AsyncClient() as client:
                channel = BrokerChannel(
                    1, f"http://127.0.0.1:{peer.port}", client, on_fenced, network=SHORT
                )
                channel.send(control.StopReplica(1, 1, (("t", 0),), delete=False))
                await eventually(lambda: channel._backoff.failures >= 2)
                await channel.close()

    run(scenario())


# -- broker -> controller ------------------------------------------------------------------------


def test_controller_link_gives_up_on_an_unreachable_controller(zk_connect: str) -> None:
    async def scenario() -> None:
        zk = ZkClient(zk_connect, session_timeout_ms=6000, name="test")
        await zk.start(timeout_s=10)
        try:
            with full_backlog() as peer:
                node = ControllerZNode(7, "127.0.0.1", f"http://127.0.0.1:{peer.port}")
                await zk.run(zk.kazoo.create, ControllerZNode.path(), node.encode())
                with pytest.raises(NotControllerError, match="did not answer"):
                    await bounded(call_controller(zk, "/elect-leaders", {}, 60_000, SHORT))
            async with http_server(silent=True) as silent:
                node = ControllerZNode(7, "127.0.0.1", silent.url)
                await zk.run(zk.kazoo.set, ControllerZNode.path(), node.encode())
                # The request's own timeout plus the round trip's margin (5 s).
                with pytest.raises(NotControllerError, match="did not answer"):
                    await asyncio.wait_for(
                        call_controller(zk, "/elect-leaders", {}, 100, SHORT), 5.1 + GUARD_S
                    )
        finally:
            await zk.close()

    run(scenario())


# -- ZooKeeper -----------------------------------------------------------------------------------


@pytest.fixture
def own_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A ZooKeeper of this test's own: it is frozen (SIGSTOP), which others must not see."""
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    try:
        yield server
    finally:
        server.resume()
        server.stop()


def test_zookeeper_calls_give_up_while_the_server_does_not_answer(
    own_zookeeper: ZooKeeperServer,
) -> None:
    """kazoo fails the request in flight when its read timeout passes, but queues the retries
    until it reconnects: the call must end a session timeout after the connection went down."""

    async def scenario() -> None:
        zk = ZkClient(own_zookeeper.connect_string, session_timeout_ms=2000, name="test")
        await zk.start(timeout_s=10)
        try:
            assert await zk.get("/missing") is None
            own_zookeeper.pause()
            with pytest.raises(CoordinationError):
                await asyncio.wait_for(zk.get("/missing"), 3 * GUARD_S)
            with pytest.raises(CoordinationError):  # a call made while it is down, too
                await asyncio.wait_for(zk.get_children("/"), 3 * GUARD_S)
            own_zookeeper.resume()
            await eventually(lambda: zk._down_since is None, 30.0)
            assert await asyncio.wait_for(zk.get("/missing"), 3 * GUARD_S) is None
        finally:
            own_zookeeper.resume()
            await zk.close()

    run(scenario())


# -- the broker's accepted connections -----------------------------------------------------------


def test_broker_sets_keepalive_on_accepted_connections_and_closes_idle_ones() -> None:
    async def scenario() -> None:
        async def handle(frame: object, session: object) -> None:
            return None

        server = KafkaServer(handle, max_frame_bytes=1 << 20, max_connections=10, network=SHORT)
        port = await server.start(plaintext("127.0.0.1", 0))
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await eventually(lambda: len(server._connections) == 1)
            (connection,) = server._connections
            sock = connection._transport.get_extra_info("socket")  # type: ignore[union-attr]
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            # connections.max.idle.ms is 300 ms: the broker ends the connection.
            assert await bounded(reader.read()) == b""
            writer.close()
        finally:
            await server.close()

    run(scenario())
