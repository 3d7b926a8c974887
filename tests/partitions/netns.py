"""A private network of namespaces on one Linux bridge: one namespace per process.

Each node (``zookeeper``, ``broker-1``, ``client``, ...) gets a network namespace joined to a
bridge the run creates by a veth pair, with its own IPv4 address on a private /24 and its
loopback up. Names carry a random run id (``pfk1a2b``), so concurrent runs never share a
bridge, a namespace or a subnet.

The root namespace also takes an address on the bridge (``.254``). It is the harness's
observer: readiness probes, ``/status`` polls, ZooKeeper reads and the final read-back go
through it. Traffic to and from it is delivered locally, never forwarded between bridge ports,
so the cuts (rules on the bridge's forward hook, see ``cuts.py``) never touch it: the harness
sees every node throughout, the nodes see each other only as the scenario allows.

Every step is undone by ``close`` in reverse order, also after a partial set-up; processes
still running inside a namespace are killed before the namespace goes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

OBSERVER_HOST = 254


class NetworkError(RuntimeError):
    pass


def run(*args: str, input_text: str | None = None) -> str:
    """One command; a failure raises with its stderr, never passes silently."""
    done = subprocess.run(args, input=input_text, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NetworkError(f"{' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _used_networks() -> list[ipaddress.IPv4Network]:
    out = run("ip", "-4", "-o", "addr", "show")
    nets = []
    for line in out.splitlines():
        parts = line.split()
        if "inet" in parts:
            nets.append(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).network)
    return nets


@dataclass
class Network:
    """The bridge, its namespaces and addresses; ``close`` removes them all."""

    nodes: list[str]
    run_id: str = field(default_factory=lambda: f"{random.randrange(16**4):04x}")
    subnet: str = ""
    addresses: dict[str, str] = field(default_factory=dict)
    _namespaces: list[str] = field(default_factory=list)
    _bridge_up: bool = False

    @property
    def bridge(self) -> str:
        return f"pfk{self.run_id}"

    @property
    def observer_address(self) -> str:
        return self._host(OBSERVER_HOST)

    def namespace(self, node: str) -> str:
        return f"pfk{self.run_id}-{node}"

    def exec_prefix(self, node: str) -> tuple[str, ...]:
        """Run a command inside ``node``'s namespace; ``ip netns exec`` execs the command, so
        the child's pid is the command's own and signals reach it directly."""
        return ("ip", "netns", "exec", self.namespace(node))

    def _host(self, index: int) -> str:
        return str(ipaddress.ip_network(self.subnet)[index])

    def create(self) -> None:
        if len(self.nodes) >= OBSERVER_HOST - 1:
            raise NetworkError(f"too many nodes for a /24: {len(self.nodes)}")
        if not self.subnet:
            used = _used_networks()
            candidates = [ipaddress.IPv4Network(f"10.213.{b}.0/24") for b in range(256)]
            free = [n for n in candidates if not any(n.overlaps(u) for u in used)]
            if not free:
                raise NetworkError("no free /24 left in 10.213.0.0/16")
            self.subnet = str(random.choice(free))
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    def _create(self) -> None:
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self._bridge_up = True
        run("ip", "addr", "add", f"{self.observer_address}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for index, node in enumerate(self.nodes, start=1):
            ns = self.namespace(node)
            run("ip", "netns", "add", ns)
            self._namespaces.append(ns)
            veth = f"{self.bridge}v{index}"
            run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            run("ip", "link", "set", veth, "master", self.bridge, "up")
            address = self._host(index)
            self.addresses[node] = address
            inside = self.exec_prefix(node)
            run(*inside, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            run(*inside, "ip", "link", "set", "eth0", "up")
            run(*inside, "ip", "link", "set", "lo", "up")

    def tcp_probe(
        self, source: str, destination: str, port: int = 9, timeout_s: float = 1.0
    ) -> str:
        """``"refused"`` or ``"connected"`` when a SYN from ``source`` reaches ``destination``
        (nothing listens on the discard port, so an open path answers with a RST), ``"silent"``
        when nothing comes back: the signature of a drop."""
        target = (self.addresses[destination], port)
        script = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection({target!r}, {timeout_s})\n"
            "    print('connected')\n"
            "except ConnectionRefusedError:\n"
            "    print('refused')\n"
            "except (TimeoutError, OSError):\n"
            "    print('silent')\n"
        )
        return run(*self.exec_prefix(source), sys.executable, "-c", script).strip()

    def pids_inside(self, node: str) -> list[int]:
        with contextlib.suppress(NetworkError):
            return [int(p) for p in run("ip", "netns", "pids", self.namespace(node)).split()]
        return []

    def _kill_inside(self, node: str, grace_s: float = 5.0) -> None:
        # A zombie has left its namespace, so only live processes are listed here.
        deadline = time.monotonic() + grace_s
        while pids := self.pids_inside(node):
            sig = signal.SIGTERM if time.monotonic() < deadline else signal.SIGKILL
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            time.sleep(0.1)

    def close(self) -> None:
        for ns in reversed(self._namespaces):
            self._kill_inside(ns.removeprefix(f"pfk{self.run_id}-"))
            with contextlib.suppress(NetworkError):
                run("ip", "netns", "delete", ns)
        self._namespaces.clear()
        if self._bridge_up:
            # Deleting a namespace deletes its veth end, and with it the bridge's end.
            with contextlib.suppress(NetworkError):
                run("ip", "link", "delete", self.bridge)
            self._bridge_up = False


def namespaces_permitted() -> str | None:
    """None when this machine lets us build namespaces, bridges and nft tables, else why not."""
    import shutil

    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (apt-get install iproute2 nftables)"
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN)"
    net = Network(["probe"])
    try:
        net.create()
        run("nft", "add", "table", "bridge", net.bridge)
        run("nft", "delete", "table", "bridge", net.bridge)
    except (NetworkError, OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot build a namespace, bridge and nft table here: {exc}"
    finally:
        net.close()
    return None
