"""The ZooKeeper a local cluster started itself, the only one it ever stops or starts.

A cluster given ``--zookeeper`` has none: that server is someone else's. The cluster's own is
known by pid and start time (so a reused pid is never signalled), and is recorded in the state
file, so that ``pafka cluster stop|start|restart zookeeper`` and ``cluster down`` can act on it
from another process later.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from pafka.errors import ConfigError, CoordinationError
from pafka.local import ports
from pafka.local.processes import process_alive, start_ticks, terminate
from pafka.local.zookeeper import ZooKeeperServer

# A restart finds the port of the server it just stopped held for a moment on a loaded
# machine; a port still taken after this long is another server's.
PORT_RELEASE_WAIT_S = 5.0


@dataclass
class OwnZooKeeper:
    server: ZooKeeperServer
    pid: int | None = None
    started_ticks: int = 0

    @property
    def connect_string(self) -> str:
        return self.server.connect_string

    def alive(self) -> bool:
        return self.pid is not None and process_alive(self.pid, self.started_ticks)

    def start(self, *, detach: bool, timeout_s: float = 30.0) -> None:
        """Start on the recorded port; ready only once the server answering names this data
        dir (ZooKeeperServer.wait_ready), never another server that holds the port."""
        if self.alive():
            raise ConfigError(f"zookeeper is already running (pid {self.pid})")
        deadline = time.monotonic() + PORT_RELEASE_WAIT_S
        while not ports.port_free(self.server.port, self.server.host):
            if time.monotonic() >= deadline:
                raise CoordinationError(
                    f"zookeeper cannot start: its port {self.server.port} is in use"
                )
            time.sleep(0.1)
        self.server.start(detach=detach, timeout_s=timeout_s)
        assert self.server.process is not None
        self.pid = self.server.process.pid
        self.started_ticks = start_ticks(self.pid)

    def stop(self, grace_s: float) -> None:
        if self.server.process is not None:
            self.server.stop()
        elif self.pid is not None:
            # Started by an earlier `pafka cluster up`: not this process's child.
            terminate(self.pid, self.started_ticks, grace_s)

    def state(self) -> dict[str, object]:
        return {
            "zookeeper_pid": self.pid,
            "zookeeper_started_ticks": self.started_ticks,
            "zookeeper_dir": str(self.server.data_dir),
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> OwnZooKeeper:
        host, _, port = str(state["zookeeper"]).rpartition(":")
        server = ZooKeeperServer(Path(str(state["zookeeper_dir"])), port=int(port), host=host)
        pid = state.get("zookeeper_pid")
        ticks = state.get("zookeeper_started_ticks", 0)
        return cls(
            server,
            pid if isinstance(pid, int) else None,
            ticks if isinstance(ticks, int) else 0,
        )
