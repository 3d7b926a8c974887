"""``PAFKA_GATEWAY_WORKERS``: worker processes on one port, on the shared real cluster.

Which worker answered is seen from outside: the pids holding the accepted connections.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from pafka.local.certs import ThrowawayCa
from pafka.local.ports import free_port
from tests.integration.conftest import ClusterHandle
from tests.integration.gateway_process import start_gateway

JSON = "application/vnd.kafka.json.v2+json"
READY_WITHIN_S = 60.0


@dataclass
class Gateway:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    log_path: Path

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _start(
    zk_connect: str,
    log_dir: Path,
    workers: int,
    port: int = 0,
    extra_env: dict[str, str] | None = None,
) -> Gateway:
    port = port or free_port()
    log_path = log_dir / f"gateway-{port}.log"
    env = {**(extra_env or {}), "PAFKA_GATEWAY_WORKERS": str(workers)}
    process = start_gateway(zk_connect, port, log_path, env)
    return Gateway(process, f"http://127.0.0.1:{port}", port, log_path)


def _wait_serving(gateway: Gateway, workers: int, verify: ssl.SSLContext | None = None) -> None:
    """Every worker serving: each one's /readyz answers on a connection it accepted."""
    deadline = time.monotonic() + READY_WITHIN_S
    while len(_serving_pids(gateway, 16, verify)) < workers:
        assert gateway.process.poll() is None, gateway.log()
        assert time.monotonic() < deadline, gateway.log()
        time.sleep(0.2)


def _serving_pids(
    gateway: Gateway, connections: int, verify: ssl.SSLContext | None = None
) -> set[int]:
    """The worker pids that accepted ``connections`` fresh connections each answering /readyz."""
    url = gateway.url.replace("http://", "https://") if verify else gateway.url
    clients = [
        httpx.Client(base_url=url, timeout=5, verify=verify or True) for _ in range(connections)
    ]
    try:
        for client in clients:
            try:
                if client.get("/readyz").status_code != 200:
                    return set()
            except httpx.HTTPError:
                return set()
        return _accepting_pids(gateway)
    finally:
        for client in clients:
            client.close()


def _accepting_pids(gateway: Gateway) -> set[int]:
    pids = set()
    for worker in gateway.workers():
        for conn in worker.net_connections("tcp"):
            if conn.laddr and conn.laddr.port == gateway.port and conn.status == "ESTABLISHED":
                pids.add(worker.pid)
    return pids


def _stop(gateway: Gateway) -> int:
    if gateway.process.poll() is None:
        gateway.process.send_signal(signal.SIGTERM)
    try:
        return gateway.process.wait(30)
    except subprocess.TimeoutExpired:
        for worker in gateway.workers():
            worker.kill()
        gateway.process.kill()
        gateway.process.wait()
        raise


@pytest.fixture(scope="module")
def two_workers(
    cluster: ClusterHandle, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    gateway = _start(cluster.zk_connect, tmp_path_factory.mktemp("gateway-workers"), 2)
    try:
        _wait_serving(gateway, 2)
        yield gateway
    finally:
        _stop(gateway)


def _produce(gateway: Gateway, topic: str, requests: int) -> None:
    """One request per fresh connection, so the kernel spreads them over the workers."""
    for i in range(requests):
        with httpx.Client(base_url=gateway.url, timeout=10) as client:
            answer = client.post(
                f"/topics/{topic}",
                json={"records": [{"value": i}]},
                headers={"Content-Type": JSON, "Accept": JSON},
            )
            assert answer.status_code == 200, answer.text


def _produced(scrape: str, topic_handler: str = "/topics/{topic}") -> float:
    total = 0.0
    for line in scrape.splitlines():
        wanted = (f'handler="{topic_handler}"', 'method="POST"', 'status="200"')
        if line.startswith("http_requests_total{") and all(w in line for w in wanted):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_requests_are_served_by_every_worker(two_workers: Gateway) -> None:
    assert len(two_workers.workers()) == 2
    assert len(_serving_pids(two_workers, 16)) == 2


def test_metrics_are_summed_whichever_worker_answers(
    cluster: ClusterHandle, two_workers: Gateway
) -> None:
    topic = f"workers-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    before = _produced(httpx.get(f"{two_workers.url}/metrics", timeout=5).text)
    _produce(two_workers, topic, 20)
    answered_by = set()
    for _ in range(12):
        # A fresh connection per scrape, held while the answering worker is found.
        with httpx.Client(base_url=two_workers.url, timeout=5) as client:
            scrape = client.get("/metrics")
            answered_by |= _accepting_pids(two_workers)
        assert scrape.status_code == 200
        assert _produced(scrape.text) - before == 20
        assert scrape.text.count("\npafka_build_info{") == 1
    assert len(answered_by) == 2


def test_a_killed_worker_is_replaced(two_workers: Gateway) -> None:
    victim = two_workers.workers()[0]
    victim.kill()
    victim.wait(10)
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        pids = {w.pid for w in two_workers.workers()}
        if len(pids) == 2 and victim.pid not in pids and len(_serving_pids(two_workers, 16)) == 2:
            break
        assert two_workers.process.poll() is None, two_workers.log()
        assert time.monotonic() < deadline, two_workers.log()
        time.sleep(0.2)
    assert "starting another" in two_workers.log()


def test_https_in_every_worker_idle_connections_closed_and_sigterm_exits_0(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    """One gateway of two workers over HTTPS: each presents the certificate and the renewed one
    once the files change; keep-alive connections close after PAFKA_GATEWAY_IDLE_TIMEOUT_MS;
    SIGTERM drains both workers (a long poll in flight is answered) and the gateway exits 0."""
    ca = ThrowawayCa.create(tmp_path / "ca")
    first = ca.issue("first", "/CN=localhost", server=True)
    served = tmp_path / "served"
    served.mkdir()
    (served / "cert.pem").write_bytes(first.cert.read_bytes())
    (served / "key.pem").write_bytes(first.key.read_bytes())
    env = {
        "PAFKA_GATEWAY_HTTPS_CERTFILE": str(served / "cert.pem"),
        "PAFKA_GATEWAY_HTTPS_KEYFILE": str(served / "key.pem"),
        "PAFKA_GATEWAY_HTTPS_RELOAD_INTERVAL_MS": "200",
        "PAFKA_GATEWAY_IDLE_TIMEOUT_MS": "300",
    }
    verify = ssl.create_default_context(cafile=str(ca.ca.cert))
    gateway = _start(cluster.zk_connect, tmp_path, 2, extra_env=env)
    try:
        _wait_serving(gateway, 2, verify)
        workers = gateway.workers()
        _assert_idle_connection_closed(gateway, verify)
        second = ca.issue("second", "/CN=localhost", server=True)
        renewed = ssl.PEM_cert_to_DER_cert(second.cert.read_text())
        (served / "key.pem").write_bytes(second.key.read_bytes())
        (served / "cert.pem").write_bytes(second.cert.read_bytes())
        deadline = time.monotonic() + 20
        while True:
            presenting = _presenting(gateway, 16, verify)
            if len(presenting) == 2 and all(der == renewed for der in presenting.values()):
                break
            assert time.monotonic() < deadline, (presenting, gateway.log())
            time.sleep(0.2)
        # A long poll in flight when SIGTERM comes is answered before its worker exits.
        topic = f"drain-{uuid.uuid4().hex[:8]}"
        cluster.create_topic(topic, partitions=1, replication_factor=1)
        with ThreadPoolExecutor(1) as pool:
            url = gateway.url.replace("http://", "https://")
            polling = pool.submit(
                httpx.get,
                f"{url}/topics/{topic}/partitions/0/records?offset=0&timeout_ms=1500",
                headers={"Accept": JSON},
                verify=verify,
                timeout=10,
            )
            time.sleep(0.5)
            gateway.process.send_signal(signal.SIGTERM)
            assert polling.result().status_code == 200
    finally:
        status = _stop(gateway)
    assert status == 0, gateway.log()
    assert "workers stopped" in gateway.log()
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)


def _presenting(gateway: Gateway, connections: int, verify: ssl.SSLContext) -> dict[int, bytes]:
    """The certificate each worker presents (pid: DER), over fresh TLS connections."""
    found: dict[int, bytes] = {}
    for _ in range(connections):
        with (
            socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as raw,
            verify.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
            pids = _accepting_pids(gateway)
            if der is not None and len(pids) == 1:
                found[pids.pop()] = der
    return found


def _assert_idle_connection_closed(gateway: Gateway, verify: ssl.SSLContext) -> None:
    """PAFKA_GATEWAY_IDLE_TIMEOUT_MS: a keep-alive connection serves requests until idle that
    long, then the gateway closes it."""
    with (
        socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as raw,
        verify.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        reader = sock.makefile("rb")
        for _ in range(2):
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: gw\r\n\r\n")
            assert reader.readline().startswith(b"HTTP/1.1 200")
            while reader.readline() not in (b"\r\n", b""):
                pass
            assert reader.read(2) == b"ok"
        started = time.monotonic()
        assert reader.read(1) == b""  # closed by the gateway, well before the 5 s timeout
        assert time.monotonic() - started < 4


def test_a_start_failure_ends_the_gateway_with_its_error(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    """The port is held by a listener of another kind: every worker fails to bind, the gateway
    exits non-zero with the error one process gives, and no worker is left behind."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        gateway = _start(cluster.zk_connect, tmp_path, 2, port=port)
        try:
            status = gateway.process.wait(READY_WITHIN_S)
        finally:
            if gateway.process.poll() is None:
                _stop(gateway)
    assert status == 1, gateway.log()
    assert f"127.0.0.1:{port}" in gateway.log()
    assert "Address already in use" in gateway.log()
    assert "workers stopped" in gateway.log()


def test_certificate_files_that_do_not_load_fail_at_once_with_one_line() -> None:
    """Checked by the supervisor before any worker starts (settings errors are too, as
    tests/unit/test_gateway_workers_settings.py shows of their messages)."""
    env = {"PAFKA_GATEWAY_WORKERS": "2", "PAFKA_GATEWAY_HTTPS_CERTFILE": "/nonexistent.pem"}
    result = subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "gateway"],
        env={**os.environ, "PAFKA_GATEWAY_ZOOKEEPER": "127.0.0.1:1", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert "/nonexistent.pem" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
