"""A ``pafka gateway`` process of a test's own (a token file, say) over a running cluster."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from pafka.local.ports import free_port

READY_WITHIN_S = 60.0


@contextlib.contextmanager
def gateway_process(zk_connect: str, log_dir: Path, env: dict[str, str]) -> Iterator[str]:
    """Start it on a free loopback port with ``env`` added, yield its URL once ready, stop it.
    A gateway that exits or is not ready in time fails the test with its log."""
    port = free_port()
    log_path = log_dir / "gateway.log"
    process = start_gateway(zk_connect, port, log_path, env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, log_path)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_ready(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Return once the gateway at ``url`` is ready; fail with its log if it exits or is not
    ready in time."""
    deadline = time.monotonic() + READY_WITHIN_S
    while not _ready(url):
        assert process.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, log_path.read_text()
        time.sleep(0.1)


def start_gateway(
    zk_connect: str, port: int, log_path: Path, env: dict[str, str]
) -> subprocess.Popen[bytes]:
    """``pafka gateway`` on 127.0.0.1:``port`` with ``env`` added, its output in ``log_path``."""
    full_env = {
        **os.environ,
        "PAFKA_GATEWAY_ZOOKEEPER": zk_connect,
        "PAFKA_GATEWAY_HOST": "127.0.0.1",
        "PAFKA_GATEWAY_PORT": str(port),
        **env,
    }
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "pafka.cli.main", "gateway"],
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
