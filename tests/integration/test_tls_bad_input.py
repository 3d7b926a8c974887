"""Bad input on TLS listeners, on real sockets: every broken TLS exchange is answered or closed
within a bounded time, the broker keeps serving, and nothing leaks.

One broker with an SSL and a SASL_SSL listener and a short authentication deadline (the broker
takes it as its TLS handshake deadline too). Hypothesis drives raw sockets: garbage instead of
a ClientHello, a real ClientHello cut short, a record header announcing more than a record may
hold, clients leaving mid-handshake, a TLS 1.0/1.1-only ClientHello (Kafka 2.8 enables
TLSv1.2 and TLSv1.3, as pafka does), and, over SASL_SSL, a finished handshake followed by
garbage, a truncated SaslHandshake or an oversized frame length. After each case a real client
(librdkafka) still gets metadata; many connections stalled mid-handshake are all closed and give
back their descriptors.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import struct
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.sasl import SaslHandshakeRequest

from pafka.local.certs import ThrowawayCa
from pafka.local.cluster import LocalCluster
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer
from tests.integration.secure_cluster import add_scram_user, lone_broker, open_connections, tls_env

AUTHENTICATION_TIMEOUT_MS = 1500
# A connection is closed at most this long after it opened: the handshake deadline, or the
# authentication deadline as the broker's sweeper (every half deadline) sees it, plus slack for
# two shared cores.
CLOSE_BOUND_S = AUTHENTICATION_TIMEOUT_MS / 1000 * 2 + 8
IDLE_CONNECTIONS = 200
MECHANISM = "SCRAM-SHA-256"
PASSWORD = "alice-secret"
TLS_ALERT = 0x15
# Larger than any TLS record may be (2^14 bytes of plaintext plus 2048 of expansion).
MAX_TLS_RECORD_BYTES = 2**14 + 2048
SSL, SASL_SSL = "SSL", "SASL_SSL"


@dataclass
class Target:
    local: LocalCluster
    ports: dict[str, int]
    ca_file: str

    @property
    def pid(self) -> int:
        return self.local.brokers()[0].pid

    def connect(self, listener: str) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.ports[listener]), timeout=10)

    def tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)

    def open_connections(self) -> float:
        return open_connections(self.local.brokers()[0])

    def descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def client_works(self, listener: str) -> None:
        from confluent_kafka.admin import AdminClient

        config: dict[str, str | int | float | bool] = {
            "bootstrap.servers": f"127.0.0.1:{self.ports[listener]}",
            "security.protocol": listener,
            "ssl.ca.location": self.ca_file,
        }
        if listener == SASL_SSL:
            config.update(
                {"sasl.mechanism": MECHANISM, "sasl.username": "alice", "sasl.password": PASSWORD}
            )
        assert AdminClient(config).list_topics(timeout=15).brokers


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    ca = ThrowawayCa.create(tmp_path_factory.mktemp("tls-bad-ca"))
    server = ca.issue("broker", "/CN=localhost", server=True)
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("tls-bad-zk")))
    zk.start()
    try:
        add_scram_user(zk.connect_string, "alice", MECHANISM, PASSWORD)
        ports = {SSL: free_port(), SASL_SSL: free_port()}
        local = lone_broker(
            Path(tmp_path_factory.mktemp("tls-bad")),
            zk.connect_string,
            ports,
            {
                **tls_env(server, str(ca.ca.cert)),
                "PAFKA_BROKER_AUTHENTICATION_TIMEOUT_MS": str(AUTHENTICATION_TIMEOUT_MS),
                "PAFKA_BROKER_SASL_ENABLED_MECHANISMS": MECHANISM,
            },
        )
        try:
            local.start()
            yield Target(local, ports, str(ca.ca.cert))
        finally:
            local.stop()
    finally:
        zk.stop()


def _client_hello(context: ssl.SSLContext) -> bytes:
    """The first flight of a TLS client with this context, as it would go on the wire."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _unverified() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _old_protocol_hello(version: ssl.TLSVersion) -> bytes:
    context = _unverified()
    context.set_ciphers("DEFAULT:@SECLEVEL=0")  # OpenSSL 3 refuses TLS < 1.2 otherwise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version = context.maximum_version = version
    return _client_hello(context)


CLIENT_HELLO = _client_hello(_unverified())


def _until_closed(sock: socket.socket, bound_s: float = CLOSE_BOUND_S) -> bytes:
    """Everything the broker sends until it closes the connection; a broker that keeps it open
    past the bound fails the test."""
    deadline = time.monotonic() + bound_s
    received = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError("the broker kept a broken connection open past the deadline")
        sock.settimeout(remaining)
        try:
            got = sock.recv(65536)
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return received
        except ssl.SSLError:
            return received  # the broker's alert or a torn record: it ended the exchange
        except TimeoutError:
            raise AssertionError(
                "the broker neither answered nor closed the connection in time"
            ) from None
        if not got:
            return received
        received += got


def _send(sock: socket.socket, data: bytes) -> None:
    # The broker may close as soon as the first bytes tell it the exchange is broken.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
        sock.sendall(data)


def _sasl_handshake_frame() -> bytes:
    request = SaslHandshakeRequest[1](mechanism=MECHANISM)
    request.with_header(correlation_id=1, client_id="bad")
    return bytes(request.encode(version=1, header=True, framed=True))


listeners = st.sampled_from([SSL, SASL_SSL])

# Raw bytes on the TCP connection, before or instead of a TLS handshake.
garbage = st.tuples(st.just("garbage"), listeners, st.binary(min_size=1, max_size=2048))
truncated_hello = st.tuples(
    st.just("truncated hello"),
    listeners,
    st.integers(1, len(CLIENT_HELLO) - 1).map(lambda cut: CLIENT_HELLO[:cut]),
)
huge_record = st.tuples(
    st.just("huge record"),
    listeners,
    st.builds(
        lambda content_type, minor, length, body: (
            bytes([content_type, 3, minor]) + struct.pack(">H", length) + body
        ),
        st.sampled_from([0x14, 0x15, 0x16, 0x17]),
        st.sampled_from([1, 3]),
        st.integers(MAX_TLS_RECORD_BYTES + 1, 0xFFFF),
        st.binary(max_size=512),
    ),
)
# A client that stops partway through: right after its ClientHello, or after the broker's
# whole first flight; leaving politely (FIN) or with a reset.
left_mid_handshake = st.tuples(
    st.just("left mid-handshake"),
    listeners,
    st.tuples(st.booleans(), st.booleans()),
)
old_protocol = st.tuples(
    st.just("old protocol"),
    listeners,
    st.sampled_from([ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1]),
)
# Over a finished handshake on the SASL_SSL listener, instead of a SaslHandshake.
after_handshake = st.tuples(
    st.just("after handshake"),
    st.just(SASL_SSL),
    st.one_of(
        st.binary(min_size=1, max_size=2048),
        st.integers(1, len(_sasl_handshake_frame()) - 1).map(
            lambda cut: _sasl_handshake_frame()[:cut]
        ),
        st.builds(
            lambda size, tail: struct.pack(">i", size) + tail,
            st.one_of(st.integers(100 * 2**20, 2**31 - 1), st.integers(-(2**31), -1)),
            st.binary(max_size=64),
        ),
    ),
)

# Raw bytes on the TCP connection under a finished handshake: whole records the broker cannot
# decrypt, on either listener, and on SASL_SSL (where the authentication deadline runs) any bytes.
# A record cut short on the SSL listener waits for connections.max.idle.ms, as a Kafka frame cut
# short does (the connection is authenticated by its handshake), so it is not a case here.
bogus_record = st.builds(
    lambda content_type, minor, body: (
        bytes([content_type, 3, minor]) + struct.pack(">H", len(body)) + body
    ),
    st.sampled_from([0x14, 0x15, 0x16, 0x17]),
    st.sampled_from([1, 3]),
    st.binary(min_size=1, max_size=2048),
)
torn_records = st.one_of(
    st.tuples(
        st.just("torn records"), listeners, st.lists(bogus_record, min_size=1, max_size=3)
    ).map(lambda case: (case[0], case[1], b"".join(case[2]))),
    st.tuples(st.just("torn records"), st.just(SASL_SSL), st.binary(min_size=1, max_size=2048)),
)


def _run_case(target: Target, kind: str, listener: str, payload: object) -> None:
    if kind in ("after handshake", "torn records"):
        assert isinstance(payload, bytes)
        with target.tls_context().wrap_socket(
            target.connect(listener), server_hostname="localhost"
        ) as tls:
            if kind == "after handshake":
                _send(tls, payload)
                _until_closed(tls)
                return
            # Past TLS, on the same TCP connection.
            with socket.socket(fileno=os.dup(tls.fileno())) as raw:
                _send(raw, payload)
                _until_closed(raw)
        return
    with target.connect(listener) as sock:
        if kind == "left mid-handshake":
            assert isinstance(payload, tuple)
            read_server_flight, reset = payload
            sock.sendall(CLIENT_HELLO)
            if read_server_flight:
                sock.settimeout(10)
                assert sock.recv(65536), "the broker answers a ClientHello"
            if reset:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if kind == "old protocol":
            assert isinstance(payload, ssl.TLSVersion)
            sock.sendall(_old_protocol_hello(payload))
            answer = _until_closed(sock)
            # Kafka flushes OpenSSL's protocol_version alert first; the event loop's TLS layer
            # (asyncio's and uvloop's alike) drops it and closes, which still ends the exchange.
            assert answer[:1] in (b"", bytes([TLS_ALERT])), f"not a refusal: {answer[:8]!r}"
            return
        assert isinstance(payload, bytes)
        _send(sock, payload)
        _until_closed(sock)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=st.one_of(
        garbage,
        truncated_hello,
        huge_record,
        left_mid_handshake,
        old_protocol,
        after_handshake,
        torn_records,
    )
)
def test_broken_tls_exchanges_are_closed_in_time_and_the_broker_serves_on(
    target: Target, case: tuple[str, str, object]
) -> None:
    kind, listener, payload = case
    _run_case(target, kind, listener, payload)
    target.client_works(listener)


def test_many_connections_stalled_mid_handshake_are_closed_and_nothing_leaks(
    target: Target,
) -> None:
    target.client_works(SSL)
    connections = target.open_connections()
    descriptors = target.descriptors()
    stalled = []
    try:
        for i in range(IDLE_CONNECTIONS):
            listener = (SSL, SASL_SSL)[i % 2]
            sock = target.connect(listener)
            if i % 4 < 2:  # half send part of a ClientHello, half nothing at all
                sock.sendall(CLIENT_HELLO[: 1 + i % (len(CLIENT_HELLO) - 1)])
            stalled.append(sock)
        # Others are served meanwhile.
        target.client_works(SSL)
        target.client_works(SASL_SSL)
        assert target.descriptors() >= descriptors + IDLE_CONNECTIONS // 2, "stalled ones held"
        # Counted from the moment they were accepted, handshake or not, as Kafka counts them.
        assert target.open_connections() >= connections + IDLE_CONNECTIONS // 2
        deadline = time.monotonic() + CLOSE_BOUND_S
        for sock in stalled:
            _until_closed(sock, max(0.5, deadline - time.monotonic()))
    finally:
        for sock in stalled:
            sock.close()
    deadline = time.monotonic() + 20
    while target.descriptors() > descriptors or target.open_connections() > connections:
        assert time.monotonic() < deadline, (
            f"not released: {target.descriptors()} descriptors (was {descriptors}), "
            f"{target.open_connections()} connections (was {connections})"
        )
        time.sleep(0.5)
    target.client_works(SSL)
    target.client_works(SASL_SSL)


MAX_CONNECTIONS = 20


def test_connections_mid_handshake_count_against_max_connections(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Stalled handshakes cannot take more descriptors than ``max.connections`` allows: past
    the limit a TLS connection is closed as soon as it is accepted."""
    ca = ThrowawayCa.create(tmp_path_factory.mktemp("tls-limit-ca"))
    server = ca.issue("broker", "/CN=localhost", server=True)
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp("tls-limit-zk")))
    zk.start()
    ports = {SSL: free_port()}
    local = lone_broker(
        Path(tmp_path_factory.mktemp("tls-limit")),
        zk.connect_string,
        ports,
        {
            **tls_env(server, str(ca.ca.cert)),
            # Long enough that no stalled handshake ends during the test's own count.
            "PAFKA_BROKER_AUTHENTICATION_TIMEOUT_MS": "20000",
            "PAFKA_BROKER_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        },
    )
    stalled: list[socket.socket] = []
    try:
        local.start()
        target = Target(local, ports, str(ca.ca.cert))
        descriptors = target.descriptors()
        for _ in range(3 * MAX_CONNECTIONS):
            stalled.append(target.connect(SSL))
        refused = sum(1 for sock in stalled if _closed_at_once(sock))
        assert refused >= 2 * MAX_CONNECTIONS - 2, f"only {refused} refused"
        assert target.open_connections() <= MAX_CONNECTIONS
        assert target.descriptors() <= descriptors + MAX_CONNECTIONS + 2
    finally:
        for sock in stalled:
            sock.close()
        local.stop()
        zk.stop()


def _closed_at_once(sock: socket.socket) -> bool:
    sock.settimeout(2)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False  # admitted: its handshake waits for a ClientHello
    except ConnectionResetError:
        return True


def test_bad_input_left_no_traceback_in_the_broker_log(target: Target) -> None:
    log = Path(target.local.brokers()[0].log_path).read_text(errors="replace")
    assert "Traceback" not in log, target.local.dump_logs(120)
