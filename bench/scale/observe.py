"""What the scale benchmark reads from a running cluster: every partition's state from
ZooKeeper in one pipelined pass, process CPU, RSS and descriptors from ``/proc``, ZooKeeper's
node count, and a clock that stamps events as they are first seen, within a deadline."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.zk.znodes import BrokerInfo, PartitionState

TopicPartition = tuple[str, int]
POLL_INTERVAL_S = 0.1
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


class PartitionStates:
    """Every partition's ``state`` znode, read with pipelined ``get_async`` calls (one round
    trip's latency for all of them, not one per partition)."""

    def __init__(self, zk: KazooClient, assignment: Mapping[TopicPartition, tuple[int, ...]]):
        self.zk = zk
        self.assignment = dict(assignment)
        # The zxid of each state's last write, as of the last read.
        self.written_zxid: dict[TopicPartition, int] = {}

    def read(
        self, only: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionState | None]:
        chosen = self.assignment if only is None else only
        pending = {tp: self.zk.get_async(PartitionState.path(*tp)) for tp in chosen}
        states: dict[TopicPartition, PartitionState | None] = {}
        for tp, result in pending.items():
            try:
                data, stat = result.get(timeout=30)
            except NoNodeError:
                states[tp] = None
                continue
            states[tp] = PartitionState.decode(tp[0], tp[1], data)
            self.written_zxid[tp] = stat.mzxid
        return states

    def led_by(self, broker_id: int) -> set[TopicPartition]:
        return {tp for tp, s in self.read().items() if s is not None and s.leader == broker_id}

    def all_led_and_full(self, since_zxid: int = 0) -> bool:
        """Every partition led with its whole replica set in the ISR, in a state written after
        ``since_zxid``.

        After a broker restarts, an ISR naming it counts only if written after it registered
        again (``since_zxid``, its registration's czxid): an ISR that still names it from before
        its failure (never shrunk) says nothing of its catching up.
        """
        states = self.read()
        return all(
            (s := states[tp]) is not None
            and s.leader >= 0
            and set(s.isr) == set(replicas)
            and self.written_zxid[tp] > since_zxid
            for tp, replicas in self.assignment.items()
        )

    def all_full_after_registration(self, broker_id: int) -> bool:
        """``all_led_and_full`` counting only ISRs written since ``broker_id`` last registered."""
        registration = self.zk.exists(BrokerInfo.path(broker_id))
        return registration is not None and self.all_led_and_full(registration.czxid)

    def none_led_by(self, partitions: set[TopicPartition], broker_id: int) -> bool:
        states = self.read(partitions)
        return all(
            (s := states[tp]) is not None and s.leader not in (broker_id, -1) for tp in partitions
        )

    def all_preferred(self) -> bool:
        states = self.read()
        return all(
            (s := states[tp]) is not None and s.leader == replicas[0]
            for tp, replicas in self.assignment.items()
        )


def stamp_events(
    events: Mapping[str, Callable[[], bool]], start_s: float, timeout_s: float
) -> dict[str, float | None]:
    """Poll every ``POLL_INTERVAL_S`` until each event has been seen; each gets the seconds from
    ``start_s`` (monotonic) to the poll that first saw it, or None if not within ``timeout_s``."""
    seen: dict[str, float | None] = dict.fromkeys(events)
    deadline = start_s + timeout_s
    while True:
        for name, happened in events.items():
            if seen[name] is None and happened():
                seen[name] = time.monotonic() - start_s
        if all(v is not None for v in seen.values()) or time.monotonic() > deadline:
            return seen
        time.sleep(POLL_INTERVAL_S)


@dataclass(frozen=True)
class ProcessSample:
    cpu_ticks: int
    rss_mib: float
    descriptors: int


def sample(pid: int) -> ProcessSample | None:
    """CPU ticks (user + system) so far, resident memory and open descriptors of ``pid``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
        descriptors = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    # Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
    fields = stat.rsplit(")", 1)[1].split()
    rss_kib = next(
        (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
    )
    return ProcessSample(int(fields[11]) + int(fields[12]), rss_kib / 1024, descriptors)


def znode_count(connect: str, timeout_s: float = 5.0) -> int | None:
    """ZooKeeper's own node count, from its ``srvr`` four-letter command."""
    host, _, port = connect.split(",")[0].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
            conn.sendall(b"srvr")
            reply = b""
            while chunk := conn.recv(4096):
                reply += chunk
    except OSError:
        return None
    for line in reply.decode(errors="replace").splitlines():
        if line.startswith("Node count:"):
            return int(line.split(":", 1)[1])
    return None
