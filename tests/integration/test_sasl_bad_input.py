"""Bad input on a SASL listener, on real sockets: every malformed exchange is answered or closed
within a bounded time, the broker keeps serving, and nothing leaks.

One broker with a SASL_PLAINTEXT listener (SCRAM-SHA-256 and PLAIN) and a short authentication
deadline. Hypothesis drives the exchange: unknown mechanisms, garbage and truncated tokens after
a v0 or v1 handshake, requests out of turn; after each case a real client still authenticates.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from pafka.local.cluster import LocalCluster
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer
from tests.integration.secure_cluster import add_scram_user, lone_broker, open_connections

AUTHENTICATION_TIMEOUT_MS = 1500
IDLE_CONNECTIONS = 200
UNKNOWN_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58


class Target:
    def __init__(self, local: LocalCluster, port: int) -> None:
        self.local = local
        self.port = port

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def open_connections(self) -> float:
        return open_connections(self.local.brokers()[0])

    def login_works(self) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{self.port}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "alice",
                "sasl.password": "alice-secret",
            }
        )
        assert admin.list_topics(timeout=15).brokers


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("sasl-bad-zk")))
    zk.start()
    try:
        add_scram_user(zk.connect_string, "alice", "SCRAM-SHA-256", "alice-secret")
        port = free_port()
        local = lone_broker(
            Path(tmp_path_factory.mktemp("sasl-bad")),
            zk.connect_string,
            {"SASL_PLAINTEXT": port},
            {
                "PAFKA_BROKER_AUTHENTICATION_TIMEOUT_MS": str(AUTHENTICATION_TIMEOUT_MS),
                "PAFKA_BROKER_SASL_ENABLED_MECHANISMS": "SCRAM-SHA-256,PLAIN",
            },
        )
        try:
            local.start()
            yield Target(local, port)
        finally:
            local.stop()
    finally:
        zk.stop()


def _frame(request: object, version: int, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="bad")  # type: ignore[attr-defined]
    return bytes(request.encode(version=version, header=True, framed=True))  # type: ignore[attr-defined]


def _answer_or_close(sock: socket.socket, deadline_s: float) -> bytes | None:
    """The next frame's bytes, or None when the broker closed the connection; a broker that
    does neither within the deadline fails the test."""
    sock.settimeout(deadline_s)
    try:
        head = sock.recv(4)
        if len(head) < 4:
            return None
        (size,) = struct.unpack(">i", head)
        body = b""
        while len(body) < size:
            got = sock.recv(size - len(body))
            if not got:
                return None
            body += got
        return body
    except ConnectionResetError:
        return None
    except TimeoutError:
        raise AssertionError("the broker neither answered nor closed the connection") from None


def _error_code(body: bytes, version: int) -> int:
    # correlation id (4), then v0/v1 bodies start with error_code (int16).
    return int(struct.unpack_from(">h", body, 4)[0])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    mechanism=st.sampled_from(["SCRAM-SHA-256", "PLAIN", "GSSAPI", "OAUTHBEARER", "", "scram"]),
    handshake_version=st.sampled_from([0, 1]),
    tokens=st.lists(st.binary(max_size=300), min_size=1, max_size=3),
    truncate=st.booleans(),
)
def test_bad_exchanges_are_answered_or_closed_and_the_broker_serves_on(
    target: Target,
    mechanism: str,
    handshake_version: int,
    tokens: list[bytes],
    truncate: bool,
) -> None:
    with target.connect() as sock:
        sock.sendall(
            _frame(
                SaslHandshakeRequest[handshake_version](mechanism=mechanism), handshake_version, 1
            )
        )
        answer = _answer_or_close(sock, 10)
        assert answer is not None, "a handshake is always answered"
        if mechanism not in ("SCRAM-SHA-256", "PLAIN"):
            assert _error_code(answer, handshake_version) == UNKNOWN_SASL_MECHANISM
            assert _answer_or_close(sock, 10) is None, "closed after refusing the mechanism"
            return
        assert _error_code(answer, handshake_version) == 0
        for i, token in enumerate(tokens):
            if handshake_version == 0:
                frame = struct.pack(">i", len(token)) + token  # raw tokens after a v0 handshake
            else:
                frame = _frame(SaslAuthenticateRequest[1](auth_bytes=token), 1, 2 + i)
            if truncate:
                frame = frame[: max(1, len(frame) // 2)]
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            reply = _answer_or_close(sock, AUTHENTICATION_TIMEOUT_MS / 1000 * 2 + 10)
            if reply is None:
                break
            if handshake_version == 1 and _error_code(reply, 1) == SASL_AUTHENTICATION_FAILED:
                assert _answer_or_close(sock, 10) is None, "closed after a failed login"
                break
    target.login_works()


def test_many_idle_unauthenticated_connections_are_closed_and_nothing_leaks(
    target: Target,
) -> None:
    baseline = target.open_connections()
    idle = [target.connect() for _ in range(IDLE_CONNECTIONS)]
    try:
        # Others are served meanwhile.
        target.login_works()
        deadline = time.monotonic() + AUTHENTICATION_TIMEOUT_MS / 1000 * 2 + 20
        for sock in idle:
            assert _answer_or_close(sock, max(1.0, deadline - time.monotonic())) is None
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + 20
    while target.open_connections() > baseline:
        assert time.monotonic() < deadline, "connections were not released"
        time.sleep(0.5)
    target.login_works()
