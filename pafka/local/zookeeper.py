"""A real ZooKeeper server from Debian's ``zookeeper`` package, for local clusters and tests.

Runs ``QuorumPeerMain`` in standalone mode with its own config and data directory, on a port of
the caller's choosing (0 picks a free one). A short tick keeps session expiry fast in tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pafka.errors import CoordinationError
from pafka.local.ports import free_port

DEBIAN_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

# How long pause() waits for the stopped server's threads to have stopped.
PAUSE_TIMEOUT_S = 5.0


def java_available() -> bool:
    return shutil.which("java") is not None and Path("/usr/share/java/zookeeper.jar").exists()


@dataclass
class ZooKeeperServer:
    """One standalone ZooKeeper process rooted at ``data_dir``."""

    data_dir: Path
    port: int = 0
    tick_time_ms: int = 500
    process: subprocess.Popen[bytes] | None = None
    # The address to bind, and what the command line starts with (``ip netns exec ns1`` runs
    # the server inside a network namespace); the prefix must exec java, so the pid is its own.
    host: str = "127.0.0.1"
    command_prefix: tuple[str, ...] = ()

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.log"

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={self.data_dir / 'data'}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            f"minSessionTimeout={2 * self.tick_time_ms}\n"
            "maxSessionTimeout=60000\n"
            "maxClientCnxns=0\n"
            "4lw.commands.whitelist=ruok,stat,srvr,conf\n"
        )
        return cfg

    def start(self, *, detach: bool = False, timeout_s: float = 30.0) -> None:
        """Start the server and wait until it answers; ``detach`` outlives this process."""
        if not java_available():
            raise CoordinationError(
                "ZooKeeper needs Java and Debian's zookeeper package (apt-get install zookeeper)"
            )
        if self.port == 0:
            self.port = free_port()
        cfg = self._write_config()
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.process = subprocess.Popen(
            [
                *self.command_prefix,
                "java",
                "-Xmx256m",
                f"-Dzookeeper.log.dir={self.data_dir}",
                "-cp",
                DEBIAN_CLASSPATH,
                MAIN_CLASS,
                str(cfg),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=detach,
        )
        log.close()
        self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise CoordinationError(f"ZooKeeper exited; see {self.log_path}")
            if ruok(self.connect_string):
                served = served_data_dir(self.connect_string)
                # ZooKeeper names its directory absolute; ours may be relative (`.pafka`).
                if served and os.path.realpath(served) == os.path.realpath(self.data_dir / "data"):
                    return
                if served is not None:
                    # Another server holds the port (a race for a port found free): never
                    # let a caller take it for this one.
                    self.stop()
                    raise CoordinationError(
                        f"another ZooKeeper (data dir {served or 'unknown'}) answers on "
                        f"{self.connect_string}"
                    )
            time.sleep(0.1)
        raise CoordinationError(f"ZooKeeper did not start within {timeout_s}s; see {self.log_path}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def pause(self) -> None:
        """Stop the server's process, returning once every thread of it has stopped: SIGSTOP
        only asks, and a thread still running a moment later may answer one more request."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGSTOP)
            _wait_stopped(self.process.pid, PAUSE_TIMEOUT_S)

    def resume(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGCONT)


def _wait_stopped(pid: int, timeout_s: float) -> None:
    """Wait until every thread of ``pid`` is stopped (Linux's /proc; elsewhere, or for a process
    that is gone, return at once)."""
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            states = [_task_state(task) for task in tasks.iterdir()]
        except OSError:
            return
        if all(state in ("T", "t") for state in states):
            return
        time.sleep(0.001)
    raise CoordinationError(f"ZooKeeper (pid {pid}) did not stop within {timeout_s:g}s")


def _task_state(task: Path) -> str:
    # The state follows the command name, which is in parentheses and may hold spaces.
    return (task / "stat").read_text().rpartition(")")[2].split()[0]


def four_letter(connect_string: str, command: bytes, timeout_s: float = 1.0) -> bytes | None:
    host, _, port = connect_string.split(",")[0].split("/")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as s:
            s.sendall(command)
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks)
    except OSError:
        return None


def served_data_dir(connect_string: str) -> str | None:
    """The data dir of the server answering (its ``conf``), "" for a server that will not say
    (``conf`` not whitelisted), None when none answers or serves yet."""
    answer = four_letter(connect_string, b"conf")
    # A server answers ruok before it serves, and conf only once it does.
    if not answer or b"not currently serving" in answer:
        return None
    for line in answer.decode(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key == "dataDir":
            # ZooKeeper reports the snapshot directory, dataDir/version-2.
            return value.strip().removesuffix("/version-2")
    return ""


def ruok(connect_string: str, timeout_s: float = 1.0) -> bool:
    """ZooKeeper's four-letter health check."""
    return four_letter(connect_string, b"ruok", timeout_s) == b"imok"
