"""A local multi-process pafka cluster: ZooKeeper, controllers and brokers as real processes.

Used by ``pafka cluster up`` (detached, state recorded in ``{data_dir}/cluster.json``), by the
integration and fault tests (which kill, pause and restart its processes) and by the benchmarks.
Every process logs to its own file in the data directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pafka.errors import ConfigError, CoordinationError
from pafka.local import ports
from pafka.local.own_zookeeper import OwnZooKeeper
from pafka.local.processes import process_alive, start_ticks, terminate
from pafka.local.zookeeper import ZooKeeperServer

STATE_FILE = ports.STATE_FILE
ZOOKEEPER = "zookeeper"
DEFAULT_ZOOKEEPER_PORT = 2181
DEFAULT_BROKER_PORT = 9092
DEFAULT_BROKER_HTTP_PORT = 8091
DEFAULT_CONTROLLER_HTTP_PORT = 8090
DEFAULT_GATEWAY_PORT = 8082
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Placement:
    """Where one service runs: the address it binds and advertises, and what its command line
    starts with (``("ip", "netns", "exec", "ns1")`` runs it inside a network namespace; the
    prefix must exec the service, so that its pid is the service's own)."""

    host: str = HOST
    command_prefix: tuple[str, ...] = ()


# How long a start waits for its ports to be released before calling them taken.
PORT_RELEASE_WAIT_S = 10.0


def _local(name: str) -> Placement:
    return Placement()


# ``PAFKA_LOCAL_PORTS=ephemeral`` leaves the well-known ports alone: a cluster started beside
# another (tests in parallel, a benchmark beside `make up`) then cannot take a port the other's
# restarting broker is about to bind again.
PORTS_VARIABLE = "PAFKA_LOCAL_PORTS"


def _prefer_default_ports() -> bool:
    mode = os.environ.get(PORTS_VARIABLE, "default")
    if mode not in ("default", "ephemeral"):
        raise ValueError(f"{PORTS_VARIABLE} is default or ephemeral, not {mode!r}")
    return mode == "default"


def _pick_port(preferred: int, owner: Path, taken: set[int]) -> int:
    return ports.pick_port(preferred if _prefer_default_ports() else None, owner, taken)


@dataclass
class ServiceProcess:
    kind: str  # "broker" | "controller" | "gateway"
    id: int
    http_port: int
    log_path: str
    data_dir: str = ""
    port: int = 0  # Kafka port (brokers)
    pid: int = 0
    # The pid's start time (/proc), so a pid reused by another process is never taken for ours.
    started_ticks: int = 0
    env: dict[str, str] = field(default_factory=dict)
    host: str = HOST
    command_prefix: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.id}"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    def alive(self) -> bool:
        return process_alive(self.pid, self.started_ticks)

    def ports(self) -> list[int]:
        return [p for p in (self.port, self.http_port) if p]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.http_url + "/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False


class LocalCluster:
    def __init__(
        self,
        data_dir: Path,
        *,
        brokers: int = 3,
        controllers: int = 2,
        zookeeper: str | None = None,
        broker_env: dict[str, str] | None = None,
        controller_env: dict[str, str] | None = None,
        gateways: int = 0,
        service_env: dict[str, dict[str, str]] | None = None,
        placement: Callable[[str], Placement] = _local,
        zk_auth: str | None = None,
        control_secret: str | None = None,
    ) -> None:
        """``service_env`` adds variables to one service's environment, by name
        (``{"broker-1": {"PAFKA_BROKER_ZOOKEEPER": ...}}``): a proxy in front of ZooKeeper for
        that process alone, say. ``placement`` gives each service (by name) its address and
        command prefix; by default every service runs here on 127.0.0.1. ``zk_auth``
        (``digest:user:password``) makes every service authenticate to ZooKeeper and create
        znodes with ACLs; ``control_secret`` guards the control APIs. Both reach the services
        as files in the data dir (``*_FILE`` settings), so the state file holds no secret."""
        self.data_dir = data_dir.resolve()
        self._placement = placement
        self.zookeeper_connect = zookeeper
        self.own_zookeeper: OwnZooKeeper | None = None
        self.services: dict[str, ServiceProcess] = {}
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        # True when ZooKeeper is this cluster's own (no ``zookeeper`` given): only then is it
        # stopped, started or restarted with the cluster.
        self.owns_zookeeper = zookeeper is None
        # A handle from the state file (`attach`): services are spawned detached, with the
        # environment the state file recorded.
        self._attached = False
        self._taken: set[int] = set()
        if controllers or brokers or gateways:
            # Reservations name the data dir, which must exist for them to count as live.
            self.data_dir.mkdir(parents=True, exist_ok=True)
        for i in range(1, controllers + 1):
            http = self._pick(DEFAULT_CONTROLLER_HTTP_PORT + 10 * (i - 1))
            self._add("controller", i, http)
        for i in range(1, brokers + 1):
            port = self._pick(DEFAULT_BROKER_PORT + i - 1)
            broker = self._add("broker", i, self._pick(DEFAULT_BROKER_HTTP_PORT + 10 * (i - 1)))
            broker.port = port
            broker.data_dir = str(self.data_dir / f"broker-{i}" / "data")
        for i in range(1, gateways + 1):
            self._add("gateway", i, self._pick(DEFAULT_GATEWAY_PORT + 10 * (i - 1)))
        self.broker_env = broker_env or {}
        self.controller_env = controller_env or {}
        self.service_env = service_env or {}
        self.zk_auth = zk_auth
        self.control_secret = control_secret

    def _pick(self, preferred: int) -> int:
        return _pick_port(preferred, self.data_dir, self._taken)

    def _add(self, kind: str, i: int, http_port: int) -> ServiceProcess:
        placement = self._placement(f"{kind}-{i}")
        service = ServiceProcess(
            kind=kind,
            id=i,
            http_port=http_port,
            log_path=str(self.data_dir / f"{kind}-{i}.log"),
            host=placement.host,
            command_prefix=list(placement.command_prefix),
        )
        self.services[service.name] = service
        return service

    # -- addresses -------------------------------------------------------------------------------

    def brokers(self) -> list[ServiceProcess]:
        return [s for s in self.services.values() if s.kind == "broker"]

    def controllers(self) -> list[ServiceProcess]:
        return [s for s in self.services.values() if s.kind == "controller"]

    def gateways(self) -> list[ServiceProcess]:
        return [s for s in self.services.values() if s.kind == "gateway"]

    def broker(self, broker_id: int) -> ServiceProcess:
        return self.services[f"broker-{broker_id}"]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers())

    def broker_data_dirs(self) -> list[str]:
        return [b.data_dir for b in self.brokers()]

    def broker_pids(self) -> dict[int, int]:
        return {b.id: b.pid for b in self.brokers()}

    # -- life cycle ------------------------------------------------------------------------------

    def start(self, *, detach: bool = False, timeout_s: float = 60.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.zookeeper_connect is None:
            # A port this cluster reserved and found free: never one where some other
            # ZooKeeper (another cluster's, the host's own on 2181) already answers.
            port = self._pick(DEFAULT_ZOOKEEPER_PORT)
            own = OwnZooKeeper(ZooKeeperServer(self.data_dir / ZOOKEEPER, port=port))
            self.own_zookeeper = own
            try:
                own.start(detach=detach)
            except BaseException:
                self._release_ports()
                raise
            self.zookeeper_connect = own.connect_string
        try:
            for service in self.services.values():
                self._spawn(service, detach=detach)
            self.wait_ready(timeout_s)
        except BaseException:
            # Leave nothing running behind a failed start.
            self.stop()
            raise
        self.write_state()

    def _environment(self, service: ServiceProcess) -> dict[str, str]:
        return {
            **self._kind_environment(service),
            **self._security_environment(service),
            **self.service_env.get(service.name, {}),
        }

    def _secret_file(self, name: str, value: str) -> str:
        path = self.data_dir / "secrets" / name
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(value)
        return str(path)

    def _security_environment(self, service: ServiceProcess) -> dict[str, str]:
        prefix = f"PAFKA_{service.kind.upper()}_"
        env = {}
        if self.zk_auth is not None:
            env[prefix + "ZK_AUTH_FILE"] = self._secret_file("zk-auth", self.zk_auth)
        if self.control_secret is not None and service.kind != "gateway":
            env[prefix + "CONTROL_SECRET_FILE"] = self._secret_file(
                "control-secret", self.control_secret
            )
        return env

    def _kind_environment(self, service: ServiceProcess) -> dict[str, str]:
        assert self.zookeeper_connect is not None
        if service.kind == "gateway":
            return {
                "PAFKA_GATEWAY_ZOOKEEPER": self.zookeeper_connect,
                "PAFKA_GATEWAY_HOST": service.host,
                "PAFKA_GATEWAY_PORT": str(service.http_port),
                # One process, as before worker processes: a local cluster's processes share
                # the machine, and each of its gateways is one pid to stop, pause or kill.
                "PAFKA_GATEWAY_WORKERS": "1",
            }
        if service.kind == "controller":
            return {
                "PAFKA_CONTROLLER_ID": str(service.id),
                "PAFKA_CONTROLLER_ZOOKEEPER": self.zookeeper_connect,
                "PAFKA_CONTROLLER_HOST": service.host,
                "PAFKA_CONTROLLER_ADVERTISED_HOST": service.host,
                "PAFKA_CONTROLLER_HTTP_PORT": str(service.http_port),
                "PAFKA_CONTROLLER_ZK_SESSION_TIMEOUT_MS": "6000",
                **self.controller_env,
            }
        return {
            "PAFKA_BROKER_ID": str(service.id),
            "PAFKA_BROKER_ZOOKEEPER": self.zookeeper_connect,
            "PAFKA_BROKER_HOST": service.host,
            "PAFKA_BROKER_ADVERTISED_HOST": service.host,
            "PAFKA_BROKER_PORT": str(service.port),
            "PAFKA_BROKER_HTTP_PORT": str(service.http_port),
            "PAFKA_BROKER_DATA_DIR": service.data_dir,
            "PAFKA_BROKER_ZK_SESSION_TIMEOUT_MS": "6000",
            **self.broker_env,
        }

    def _spawn(
        self, service: ServiceProcess, *, detach: bool, extra_env: dict[str, str] | None = None
    ) -> None:
        base = service.env if self._attached else self._environment(service)
        service.env = {**base, **(extra_env or {})}
        env = {**os.environ, **service.env, "PYTHONUNBUFFERED": "1"}
        with open(service.log_path, "ab") as log:
            child = subprocess.Popen(
                [*service.command_prefix, sys.executable, "-m", "pafka.cli.main", service.kind],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        service.pid = child.pid
        service.started_ticks = start_ticks(child.pid)
        if not detach:
            self._children[child.pid] = child

    def wait_ready(
        self, timeout_s: float = 60.0, services: list[ServiceProcess] | None = None
    ) -> None:
        pending = list(services or self.services.values())
        deadline = time.monotonic() + timeout_s
        while pending:
            for service in list(pending):
                self._reap()
                if not service.alive():
                    raise CoordinationError(
                        f"{service.name} exited during start-up; log {service.log_path}:\n"
                        + self._tail(service)
                    )
                if service.ready():
                    pending.remove(service)
            if pending and time.monotonic() > deadline:
                names = ", ".join(s.name for s in pending)
                raise CoordinationError(f"not ready after {timeout_s:.0f}s: {names}")
            if pending:
                time.sleep(0.1)

    def _reap(self) -> None:
        for child in self._children.values():
            child.poll()

    def stop(self, grace_s: float = 20.0) -> None:
        # Gateways, then brokers while a controller can still run their controlled shutdowns.
        for group in (self.gateways(), self.brokers(), self.controllers()):
            for service in group:
                self.send_signal(service, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            for service in group:
                while service.alive() and time.monotonic() < deadline:
                    self._reap()
                    time.sleep(0.05)
                if service.alive():
                    self.send_signal(service, signal.SIGKILL)
        self._reap()
        if self.own_zookeeper is not None:
            self.own_zookeeper.stop(grace_s)
        state = self.data_dir / STATE_FILE
        state.unlink(missing_ok=True)
        self._release_ports()

    def _release_ports(self) -> None:
        owned = {p for s in self.services.values() for p in s.ports()}
        if self.own_zookeeper is not None:
            owned.add(self.own_zookeeper.server.port)
        ports.release(owned | self._taken, self.data_dir)

    def send_signal(self, service: ServiceProcess, sig: signal.Signals) -> None:
        if service.pid > 0 and service.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(service.pid, sig)

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Kill one process (``broker-1``, ``controller-2``) and wait until it is gone."""
        service = self.services[name]
        self.send_signal(service, sig)
        deadline = time.monotonic() + 30
        while service.alive() and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)

    def restart(
        self,
        name: str,
        timeout_s: float = 60.0,
        extra_env: dict[str, str] | None = None,
        grace_s: float = 20.0,
    ) -> None:
        """Stop (SIGTERM, SIGKILL after ``grace_s``) if running, start again on the same ports
        and wait until ready; ``extra_env`` is added to this start's environment only (one
        broker with a test hook, say)."""
        self.stop_service(name, grace_s)
        self.start_service(name, timeout_s, extra_env)

    def stop_service(self, name: str, grace_s: float = 20.0) -> None:
        """Stop one service (``broker-2``, ``zookeeper``); a stopped one is left as it is."""
        if name == ZOOKEEPER:
            self._zookeeper().stop(grace_s)
            return
        service = self.service(name)
        terminate(service.pid, service.started_ticks, grace_s)
        self._reap()

    def start_service(
        self, name: str, timeout_s: float = 60.0, extra_env: dict[str, str] | None = None
    ) -> None:
        """Start a stopped service with the ports, data dir and environment it had, and wait
        until it is ready."""
        if name == ZOOKEEPER:
            self._zookeeper().start(detach=self._attached, timeout_s=timeout_s)
        else:
            service = self.service(name)
            if service.alive():
                raise ConfigError(f"{name} is already running (pid {service.pid})")
            self._check_ports_free(name, service.ports(), service.command_prefix)
            self._spawn(service, detach=self._attached, extra_env=extra_env)
            self.wait_ready(timeout_s, [service])
        if (self.data_dir / STATE_FILE).exists():
            self.write_state()

    def service(self, name: str) -> ServiceProcess:
        if name not in self.services:
            known = ", ".join(self.service_names())
            raise ConfigError(f"no service {name!r} in the cluster at {self.data_dir} ({known})")
        return self.services[name]

    def service_names(self) -> list[str]:
        return [*([ZOOKEEPER] if self.owns_zookeeper else []), *self.services]

    @staticmethod
    def _check_ports_free(name: str, wanted: list[int], command_prefix: list[str]) -> None:
        # A service placed elsewhere (a network namespace) binds addresses not visible here.
        if command_prefix:
            return
        # A process just killed holds its ports until the kernel has torn it down.
        deadline = time.monotonic() + PORT_RELEASE_WAIT_S
        while busy := [p for p in wanted if not ports.port_free(p)]:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if busy:
            taken = ", ".join(map(str, busy))
            raise CoordinationError(f"{name} cannot start: its port(s) {taken} are in use")

    # -- ZooKeeper -------------------------------------------------------------------------------

    def _zookeeper(self) -> OwnZooKeeper:
        if self.own_zookeeper is None:
            raise ConfigError(
                f"ZooKeeper {self.zookeeper_connect} was not started by this cluster "
                "(cluster up --zookeeper): stop or start it where it runs"
            )
        return self.own_zookeeper

    @property
    def zookeeper(self) -> ZooKeeperServer | None:
        """This cluster's own ZooKeeper server (None when it uses another's)."""
        return self.own_zookeeper.server if self.own_zookeeper else None

    @property
    def zookeeper_pid(self) -> int | None:
        return self.own_zookeeper.pid if self.own_zookeeper else None

    def zookeeper_alive(self) -> bool:
        return self.own_zookeeper is not None and self.own_zookeeper.alive()

    # -- reporting -------------------------------------------------------------------------------

    def _tail(self, service: ServiceProcess, lines: int = 40) -> str:
        try:
            return "\n".join(
                Path(service.log_path).read_text(errors="replace").splitlines()[-lines:]
            )
        except OSError:
            return "(no log)"

    def dump_logs(self, lines: int = 60) -> str:
        return "\n".join(
            f"----- {s.name} ({s.log_path}) -----\n{self._tail(s, lines)}"
            for s in self.services.values()
        )

    def endpoints(self) -> dict[str, object]:
        return {
            "bootstrap_servers": self.bootstrap,
            "zookeeper": self.zookeeper_connect,
            "brokers": {
                b.id: {"kafka": f"{b.host}:{b.port}", "metrics": b.http_url + "/metrics"}
                for b in self.brokers()
            },
            "controllers": {
                c.id: {"status": c.http_url + "/status", "metrics": c.http_url + "/metrics"}
                for c in self.controllers()
            },
            "gateways": {g.id: g.http_url for g in self.gateways()},
        }

    def write_state(self) -> None:
        state = {
            "zookeeper": self.zookeeper_connect,
            # Only a ZooKeeper this cluster started is stopped or restarted with it.
            "zookeeper_owned": self.owns_zookeeper,
            **(self.own_zookeeper.state() if self.own_zookeeper else {}),
            "services": [asdict(s) for s in self.services.values()],
            "endpoints": self.endpoints(),
        }
        (self.data_dir / STATE_FILE).write_text(json.dumps(state, indent=2))


def read_state(data_dir: Path) -> dict[str, object] | None:
    path = data_dir / STATE_FILE
    if not path.exists():
        return None
    loaded: dict[str, object] = json.loads(path.read_text())
    return loaded


def attach(data_dir: Path) -> LocalCluster | None:
    """A handle on a cluster started earlier (by ``pafka cluster up``) from its state file."""
    state = read_state(data_dir)
    if state is None:
        return None
    cluster = LocalCluster(data_dir, brokers=0, controllers=0, zookeeper=str(state["zookeeper"]))
    cluster._attached = True
    services = state["services"]
    assert isinstance(services, list)
    for raw in services:
        service = ServiceProcess(**raw)
        cluster.services[service.name] = service
    zk_pid = state.get("zookeeper_pid")
    # State files written before "zookeeper_owned" existed recorded a pid only for their own.
    cluster.owns_zookeeper = bool(state.get("zookeeper_owned", isinstance(zk_pid, int)))
    if cluster.owns_zookeeper:
        cluster.own_zookeeper = OwnZooKeeper.from_state(state)
    return cluster
