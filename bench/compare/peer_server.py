"""A peer system's server as a child process: Debian package install, start, readiness, stop.

The comparison runs Redis and NATS from Debian's packages, never their system services: each
server gets a free loopback port, a config file and its data under the run's workdir, and the
caller proves it reached its own child (a server id or pid in the server's answer), not an
instance the package left running on the default port.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from pafka.errors import ConfigError, PafkaError
from pafka.local.ports import free_port

__all__ = ["ChildServer", "PeerSystem", "ensure_debian_package", "find_binary", "free_port"]

# Debian installs some daemons (nats-server) in /usr/sbin, which a non-root PATH may omit.
_SYSTEM_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
_APT_TIMEOUT_S = 600.0


def find_binary(name: str) -> str | None:
    """The path of ``name`` on PATH or in the system directories, or None."""
    search = os.pathsep.join([os.environ.get("PATH", ""), *_SYSTEM_DIRS])
    return shutil.which(name, path=search)


def _apt(args: list[str]) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(
        [*prefix, "apt-get", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=_APT_TIMEOUT_S,
        check=False,
    )


def ensure_debian_package(binary: str, package: str) -> str:
    """Install ``package`` with apt-get unless ``binary`` is already there; return its path.

    A package apt does not know yet gets one ``apt-get update`` and a second try.
    """
    found = find_binary(binary)
    if found is not None:
        return found
    result = _apt(["install", "-y", package])
    if result.returncode != 0 and "Unable to locate package" in result.stderr:
        _apt(["update"])
        result = _apt(["install", "-y", package])
    found = find_binary(binary)
    if result.returncode != 0 or found is None:
        raise PafkaError(
            f"could not install Debian package {package!r} (for {binary}): "
            f"apt-get exited {result.returncode}: {result.stderr.strip()[-500:]}"
        )
    return found


class ChildServer:
    """One server process of ours, its output in ``log_path``."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        if not argv:
            raise ConfigError(f"{name}: empty command line")
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, ready: Callable[[], bool], timeout_s: float = 30.0) -> None:
        """Start the process and poll ``ready`` until it answers true."""
        if self._process is not None:
            raise PafkaError(f"{self.name} is already started (pid {self._process.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        # A caller that dies of an exception before stop() must not leave the server running.
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running():
                code = self._process.returncode
                self._process = None
                raise PafkaError(f"{self.name} exited with {code} at start; see {self.log_path}")
            if ready():
                return
            time.sleep(0.05)
        self.stop()
        raise PafkaError(f"{self.name} did not answer within {timeout_s}s; see {self.log_path}")

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM (both servers shut down cleanly on it), SIGKILL past ``timeout_s``."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class PeerSystem:
    """What each peer ``System`` shares: install from Debian, child servers, pids, stop."""

    binary: ClassVar[str]
    package: ClassVar[str]

    def __init__(self) -> None:
        self._servers: list[ChildServer] = []

    def install(self) -> None:
        ensure_debian_package(self.binary, self.package)

    def _prepare(self, data_dir: Path, ports: int = 1) -> tuple[Path, list[int]]:
        """A server's data directory (fresh, absolute) and ``ports`` distinct free ports.

        Data a previous run left there is removed: a server would load it at start.
        """
        if self._servers:
            raise PafkaError(f"{self.binary} is already started; stop it first")
        data_dir = data_dir.resolve()
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        chosen: list[int] = []
        while len(chosen) < ports:
            port = free_port()
            if port not in chosen:
                chosen.append(port)
        return data_dir, chosen

    def _launch(self, args: list[str], log_path: Path, ready: Callable[[int], bool]) -> None:
        """Start ``binary args`` as our child; ``ready(pid)`` says when it answers as itself.

        A server that fails to start stops the ones already started.
        """
        server = ChildServer(self.binary, [self.installed_binary(), *args], log_path)
        try:
            server.start(lambda: ready(server.pid or 0))
        except BaseException:
            self.stop()
            raise
        self._servers.append(server)

    def installed_binary(self) -> str:
        return ensure_debian_package(self.binary, self.package)

    def server_pids(self) -> list[int]:
        return [pid for pid in (s.pid for s in self._servers) if pid is not None]

    def stop(self) -> None:
        servers, self._servers = self._servers, []
        for server in reversed(servers):
            server.stop()
