"""The contract between the comparison runner and each system it measures.

A ``System`` is the server side: installed, started, given a stream, stopped, by the runner in
the parent process. A ``ClientDriver`` is the client side: it runs inside worker processes the
runner spawns (one per producer or consumer), so everything it receives must pickle.

Every record carries its send time in its first 8 bytes (``stamp``), so consumers measure
end-to-end latency against the same clock, whatever the system.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

Acks = Literal["1", "all"]

_STAMP = struct.Struct(">q")
STAMP_BYTES = _STAMP.size


@dataclass(frozen=True)
class Workload:
    """One OpenMessaging-Benchmark-style workload, the same for every system."""

    name: str
    message_size_bytes: int = 100
    partitions: int = 1
    producers: int = 1
    consumers: int = 1
    acks: Acks = "1"
    replication_factor: int = 1
    # Records in total across producers; a run stops at the count or the duration, first reached.
    message_count: int = 1_000_000
    duration_s: float | None = None
    # None: as fast as the producers go (throughput); a number: paced total rate (latency runs).
    rate_per_s: float | None = None


@dataclass(frozen=True)
class Endpoint:
    """How a client process reaches a started system; plain data so it pickles."""

    system: str
    address: str
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProduceStats:
    records: int
    bytes: int
    seconds: float


@dataclass(frozen=True)
class ConsumeStats:
    records: int
    bytes: int
    seconds: float
    # End-to-end latencies in microseconds, possibly a uniform sample of all records.
    latencies_us: list[int]


# Called by a worker with the number of records done since its last call, for the progress bar;
# a consumer's first ``progress(0)`` says it is ready (see ``ClientDriver.consume``).
Progress = Callable[[int], None]


class System(Protocol):
    """A server under test, managed by the runner."""

    name: str
    # One line for the report: what an acknowledged write survives on this system as configured.
    durability: str

    def install(self) -> None:
        """Install the server if it is missing (idempotent; Debian packages for peers)."""

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        """Start fresh servers whose data lives under ``workdir``; return how clients reach them."""

    def server_pids(self) -> list[int]:
        """Processes whose CPU time is charged to the system (children included by the runner)."""

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        """Create the topic / stream with ``workload.partitions`` and its replication factor."""

    def stop(self) -> None:
        """Stop every server process and wait for them to exit."""


class ClientDriver(Protocol):
    """Client loops for one system, run inside worker processes."""

    def produce(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ProduceStats:
        """Send ``count`` stamped records, paced to this worker's share of ``rate_per_s`` if set,
        and return after every one is acknowledged at ``workload.acks``."""

    def consume(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ConsumeStats:
        """Join the shared consumer group, read until ``count`` records arrive (this worker's
        share), and return their latencies measured with ``latencies_us``.

        Call ``progress(0)`` once ready to receive (joined, partitions assigned): the runner
        starts the producers when every consumer is ready (or a grace period after a consumer
        that never says so started). With ``workload.duration_s``, stop after the producers'
        duration plus a drain (``client_loop.read_deadline``)."""


def stamp(size_bytes: int) -> bytes:
    """A payload of ``size_bytes`` whose first bytes hold the send time."""
    return _STAMP.pack(time.time_ns()) + _padding(size_bytes)


@functools.lru_cache(maxsize=8)
def _padding(size_bytes: int) -> bytes:
    # One shared filler per size: building it per record was a third of a producer's own time.
    return bytes(max(0, size_bytes - STAMP_BYTES))


def latencies_us(payloads: Iterable[bytes], now_ns: int) -> list[int]:
    """Microseconds from each payload's send stamp to ``now_ns``, the moment the batch arrived
    (one call per batch: a consumer's own time per record is CPU the measured servers share)."""
    unpack = _STAMP.unpack_from
    return [(now_ns - unpack(payload)[0]) // 1000 for payload in payloads]
