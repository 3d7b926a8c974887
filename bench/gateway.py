"""REST gateway throughput against the Kafka protocol, side by side in one run.

    python -m bench.gateway [--seconds 15] [--requests 40000] [--batches 10000] [--brokers 1 3]
                            [--workers 1 default] [--repeat 3]

For each cluster shape (1 broker with RF 1, then 3 brokers with RF 3 and min ISR 2) and each
gateway worker count (``--workers``: 1, the figures per gateway process, then ``default``, the
count a gateway gives itself here: one per CPU it may use) it starts a fresh local cluster with
one gateway and measures, with 100-byte records:

* librdkafka producing to the broker directly (the baseline for both produce phases);
* REST produce, 1 record per request, ``--concurrency`` requests in flight (the gateway's
  producer coalesces them into shared Produce requests), then 100 records per request; the two
  phases alternate ``--repeat`` times and each one's run of median throughput is kept (every
  run's throughput printed beside it): on a shared machine whose speed moves by a fifth from
  one minute to the next, one run says more about the moment than about the gateway;
* REST range reads (``GET .../records``, ``--read-size`` records each, JSON and binary) of
  every record the REST phases wrote, against reading the same records through the Kafka
  protocol: a librdkafka consumer and a raw Fetch client that only walks batch headers.

Every phase prints its p50 and p99 request latency (from send to the whole answer read).
Produce uses the default ``acks=all`` on both sides. The HTTP load comes from ``--clients``
processes, each a minimal HTTP/1.1 keep-alive client on asyncio (one connection per request in
flight): cheaper than a general HTTP library, so the gateway is what is measured. Each phase
stops after its count or ``--seconds``, whichever comes first. Gateway, broker and client CPU
are printed per phase (in % of one core): on a 2-core machine they share the cores, so a
gateway near 100% is the limit, and a client near 100% would be. "records/s per gateway core"
divides by the gateway's CPU share: what one core would serve, whatever else ran meanwhile.
"Gateway waiting for a CPU" is the share of the phase the gateway was ready to run while the
other processes held the cores (the kernel's run delay): a gateway below 100% that waited
little was idle, its requests waiting on the broker or on the load, not on the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_BYTES = 100
WARMUP_REQUESTS = 300
JSON_MEDIA = "application/vnd.kafka.json.v2+json"
BINARY_MEDIA = "application/vnd.kafka.binary.v2+json"
# A JSON string value of 98 characters is stored as 100 bytes (with its quotes).
VALUE = '"' + "x" * (RECORD_BYTES - 2) + '"'


# -- the HTTP load generator (runs in worker processes) -----------------------------------------


@dataclass(frozen=True)
class Job:
    """One client process's share of a phase."""

    host: str
    port: int
    start_at: float  # time.time() at which every client process begins
    seconds: float
    connections: int
    # produce: each connection sends ``body`` to ``path`` until ``requests`` are sent in all
    path: str = ""
    body: bytes = b""
    requests: int = 0
    # read: each connection reads one range of offsets [start, end) in ``read_size`` steps
    ranges: tuple[tuple[int, int], ...] = ()
    read_size: int = 1000
    accept: str = JSON_MEDIA


@dataclass
class Outcome:
    requests: int = 0
    records: int = 0
    errors: int = 0
    first_error: str = ""
    latencies_s: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    ended: float = 0.0


class HttpClient:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, host: str, port: int) -> HttpClient:
        return cls(*await asyncio.open_connection(host, port))

    async def request(self, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
        status, _, answer = await self.exchange(head, body)
        return status, answer

    async def exchange(self, head: bytes, body: bytes = b"") -> tuple[int, bytes, bytes]:
        """The status, the response head (lower-cased) and the body of one request."""
        status, lower, whole = await self.start(head + body)
        if whole is None:
            raise RuntimeError(f"a chunked answer where a length was expected: {lower[:200]!r}")
        return status, lower, whole

    async def start(self, head: bytes) -> tuple[int, bytes, bytes | None]:
        """Send a request whose answer may be a chunked stream: the status, the response head
        (lower-cased), and the whole body when it has a length (None: read the stream with
        :meth:`next_chunk`)."""
        self.writer.write(head)
        header = await self.reader.readuntil(b"\r\n\r\n")
        lower = header.lower()
        length = header_value(lower, b"content-length")
        if length is not None:
            return int(header[9:12]), lower, await self.reader.readexactly(int(length))
        if header_value(lower, b"transfer-encoding") != b"chunked":
            raise RuntimeError(f"neither a length nor chunks in {header[:200]!r}")
        return int(header[9:12]), lower, None

    async def next_chunk(self) -> bytes:
        """The next chunk of a chunked answer; b"" once it has ended (no trailers expected)."""
        size = int((await self.reader.readuntil(b"\r\n"))[:-2].split(b";", 1)[0], 16)
        chunk = await self.reader.readexactly(size + 2)
        return chunk[:-2]

    def close(self) -> None:
        self.writer.close()


def header_value(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in a lower-cased response head, or None."""
    at = head.find(b"\r\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 3
    return head[start : head.index(b"\r\n", start)].strip()


def _post_head(job: Job) -> bytes:
    return (
        f"POST {job.path} HTTP/1.1\r\nHost: {job.host}\r\nContent-Type: {JSON_MEDIA}\r\n"
        f"Content-Length: {len(job.body)}\r\n\r\n"
    ).encode()


def _read_head(job: Job, offset: int, count: int) -> bytes:
    return (
        f"GET {job.path}?offset={offset}&max_records={count} HTTP/1.1\r\n"
        f"Host: {job.host}\r\nAccept: {job.accept}\r\n\r\n"
    ).encode()


def _next_offset(body: bytes) -> int:
    at = body.rfind(b'"next_offset":')
    end = body.index(b",", at)
    return int(body[at + 14 : end])


async def _run_job(job: Job) -> Outcome:
    out = Outcome()
    clients = [await HttpClient.open(job.host, job.port) for _ in range(job.connections)]
    await asyncio.sleep(max(0.0, job.start_at - time.time()))
    deadline = time.perf_counter() + job.seconds
    cpu_started = time.process_time()
    remaining = [job.requests]

    def failed(status: int, body: bytes) -> None:
        out.errors += 1
        out.first_error = out.first_error or f"{status} {body[:300]!r}"

    async def produce(client: HttpClient, records_per_request: int) -> None:
        head = _post_head(job)
        while remaining[0] > 0 and time.perf_counter() < deadline:
            remaining[0] -= 1
            sent = time.perf_counter()
            status, body = await client.request(head, job.body)
            out.latencies_s.append(time.perf_counter() - sent)
            out.requests += 1
            if status == 200:
                out.records += records_per_request
            else:
                failed(status, body)

    async def read(client: HttpClient, start: int, end: int) -> None:
        offset = start
        while offset < end and time.perf_counter() < deadline:
            sent = time.perf_counter()
            status, body = await client.request(
                _read_head(job, offset, min(job.read_size, end - offset))
            )
            out.latencies_s.append(time.perf_counter() - sent)
            out.requests += 1
            if status != 200:
                failed(status, body)
                return
            following = _next_offset(body)
            out.records += following - offset
            offset = following

    if job.ranges:
        tasks = [read(c, *r) for c, r in zip(clients, job.ranges, strict=True)]
    else:
        per_request = job.body.count(b'"value"')
        tasks = [produce(c, per_request) for c in clients]
    await asyncio.gather(*tasks)
    out.ended = time.time()
    out.cpu_s = time.process_time() - cpu_started
    for client in clients:
        client.close()
    return out


def run_job(job: Job) -> Outcome:
    try:
        import uvloop

        return uvloop.run(_run_job(job))
    except ImportError:
        return asyncio.run(_run_job(job))


# -- measuring a phase -------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and of its children alive now (a gateway's worker processes)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_seconds(child) for child in _children(pid))


def runnable_wait_seconds(pid: int) -> float:
    """Time the threads of ``pid`` (and of its children alive now) spent ready to run but
    waiting for a CPU (the kernel's schedstat run delay): on a machine whose cores the gateway
    shares with the brokers and the load, what kept a busy gateway below a whole core."""
    waited_ns = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            waited_ns += int(stat.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile, or a kernel without schedstats
    return waited_ns / 1e9 + sum(runnable_wait_seconds(child) for child in _children(pid))


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` alive now (a gateway's worker processes)."""
    try:
        return [
            int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        ]
    except OSError:
        return []


@dataclass
class Row:
    cluster: str
    name: str
    records_per_s: float
    requests_per_s: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    gateway_cpu: float | None = None
    broker_cpu: float | None = None
    client_cpu: float | None = None
    gateway_wait: float | None = None  # share of the phase ready to run, without a CPU
    run_records_per_s: list[float] = field(default_factory=list)  # every run, in order
    versus: str = ""
    ratio: float | None = None


class Load:
    """The client processes, the gateway and the broker pids, and one phase at a time."""

    def __init__(self, pool: Any, clients: int, host: str, port: int, pids: dict[str, int]):
        self.pool, self.clients, self.host, self.port, self.pids = pool, clients, host, port, pids

    def phase(self, cluster: str, name: str, jobs: list[Job]) -> Row:
        cpu_before = {k: cpu_seconds(p) for k, p in self.pids.items()}
        wait_before = runnable_wait_seconds(self.pids["gateway"])
        started = jobs[0].start_at
        outcomes: list[Outcome] = self.pool.map(run_job, jobs, chunksize=1)
        ended = max(o.ended for o in outcomes)
        elapsed = ended - started
        cpu = {k: (cpu_seconds(p) - cpu_before[k]) / elapsed for k, p in self.pids.items()}
        waited = (runnable_wait_seconds(self.pids["gateway"]) - wait_before) / elapsed
        errors = sum(o.errors for o in outcomes)
        if errors:
            sample = next(o.first_error for o in outcomes if o.first_error)
            print(f"  {name}: {errors} failed requests, e.g. {sample}", flush=True)
        latencies = sorted(x for o in outcomes for x in o.latencies_s)
        return Row(
            cluster,
            name,
            sum(o.records for o in outcomes) / elapsed,
            sum(o.requests for o in outcomes) / elapsed,
            _quantile(latencies, 0.50) * 1000,
            _quantile(latencies, 0.99) * 1000,
            cpu["gateway"],
            cpu["broker"],
            max(o.cpu_s for o in outcomes) / elapsed,
            waited,
        )

    def _jobs(self, shares: list[dict[str, Any]]) -> list[Job]:
        """One job per share, all starting together once every client process has one."""
        start_at = time.time() + 0.5
        return [Job(self.host, self.port, start_at, **share) for share in shares]

    def produce(
        self, cluster: str, name: str, topic: str, per_request: int, count: int, conc: int, s: float
    ) -> Row:
        body = ('{"records":[' + ",".join([f'{{"value":{VALUE}}}'] * per_request) + "]}").encode()
        share = {
            "seconds": s,
            "connections": max(1, conc // self.clients),
            "path": f"/topics/{topic}",
            "body": body,
            "requests": count // self.clients,
        }
        return self.phase(cluster, name, self._jobs([share] * self.clients))

    def read(
        self, cluster: str, name: str, topic: str, end: int, readers: int, size: int, accept: str
    ) -> Row:
        step = -(-end // readers)
        spans = [(i, min(i + step, end)) for i in range(0, end, step)]
        shares = [
            {
                "seconds": 120.0,
                "connections": len(mine),
                "path": f"/topics/{topic}/partitions/0/records",
                "ranges": tuple(mine),
                "read_size": size,
                "accept": accept,
            }
            for k in range(self.clients)
            if (mine := spans[k :: self.clients])
        ]
        return self.phase(cluster, name, self._jobs(shares))


def median_run(runs: list[Row]) -> Row:
    """The run of median throughput (the lower middle one of an even count), with the
    throughput of every run beside it."""
    ordered = sorted(runs, key=lambda row: row.records_per_s)
    middle = ordered[(len(ordered) - 1) // 2]
    middle.run_records_per_s = [row.records_per_s for row in runs]
    return middle


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


# -- one cluster shape -------------------------------------------------------------------------


def worker_counts(asked: list[str]) -> list[int]:
    """``--workers`` values as counts, ``default`` the count a gateway gives itself here;
    a count already listed is not run twice."""
    from pafka.cpus import usable_cpus

    counts: list[int] = []
    for value in asked:
        if value == "default":
            count = usable_cpus()
        elif value.isdigit() and int(value) >= 1:
            count = int(value)
        else:
            raise SystemExit(f"--workers: {value!r} is neither a count >= 1 nor 'default'")
        if count not in counts:
            counts.append(count)
    return counts


def run_cluster(brokers: int, workers: int, args: argparse.Namespace, pool: Any) -> list[Row]:
    from bench.produce_fetch import fetch_raw
    from bench.replication import produce as librdkafka_produce
    from pafka.local.cluster import HOST, LocalCluster

    label = (
        f"{brokers} broker{'s' if brokers > 1 else ''}, RF {brokers}, "
        f"{workers} gateway worker{'s' if workers > 1 else ''}"
    )
    cluster = LocalCluster(
        Path(tempfile.mkdtemp(prefix="pafka-bench-gw-")),
        brokers=brokers,
        controllers=1,
        gateways=1,
        service_env={"gateway-1": {"PAFKA_GATEWAY_WORKERS": str(workers)}},
    )
    cluster.start()
    rows: list[Row] = []
    try:
        rest, native = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("rest", "native"))
        leader = create_topics(cluster.bootstrap, [rest, native], brokers)
        gateway = cluster.gateways()[0]
        check_gateway(gateway, rest, workers)
        pids = {"gateway": gateway.pid, "broker": cluster.broker(leader).pid}
        load = Load(pool, args.clients, HOST, gateway.http_port, pids)
        print(f"{label}: gateway pid {gateway.pid}, leader broker {leader}", flush=True)

        baseline = librdkafka_produce(cluster.bootstrap, native, args.native_records, "all")
        rows.append(Row(label, "librdkafka producer, acks=all (baseline)", baseline))
        # Warm-up: connections, metadata, the first linger cycles.
        load.produce(label, "warm-up", rest, 1, WARMUP_REQUESTS, args.concurrency, 30)

        phases = (("REST produce, 1 record/request", 1, args.requests),
                  ("REST produce, 100 records/request", 100, args.batches))  # fmt: skip
        runs: dict[str, list[Row]] = {name: [] for name, _, _ in phases}
        for _ in range(args.repeat):  # alternated: each phase meets the machine's moments
            for name, per_request, count in phases:
                row = load.produce(
                    label, name, rest, per_request, count, args.concurrency, args.seconds
                )
                runs[name].append(row)
                print(_line(row), flush=True)
        for name, _, _ in phases:
            row = median_run(runs[name])
            row.versus, row.ratio = "librdkafka producer", row.records_per_s / baseline
            rows.append(row)

        written = _high_watermark(cluster.bootstrap, rest)
        consumer = consume(cluster.bootstrap, rest, written)
        rows.append(Row(label, f"librdkafka consumer, {written:,} records", consumer))
        leader_address = f"{HOST}:{cluster.broker(leader).port}"
        raw, _ = fetch_raw(leader_address, rest, written)
        rows.append(Row(label, "raw Fetch client (headers walked)", raw.records_per_s))
        for accept, fmt in ((JSON_MEDIA, "json"), (BINARY_MEDIA, "binary")):
            row = load.read(
                label,
                f"REST read {fmt}, {args.read_size} records/request",
                rest,
                written,
                args.readers,
                args.read_size,
                accept,
            )
            row.versus, row.ratio = (
                "librdkafka consumer",
                row.records_per_s / consumer,
            )
            rows.append(row)
            print(_line(row), flush=True)
    finally:
        cluster.stop()
    return rows


def create_topics(bootstrap: str, topics: list[str], replicas: int) -> int:
    """One-partition topics (min ISR 2 when replicated); the first one's leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"} if replicas > 1 else {}
    futures = admin.create_topics([NewTopic(t, 1, replicas, config=config) for t in topics])
    for future in futures.values():
        future.result(60)
    return int(admin.list_topics(topics[0], timeout=30).topics[topics[0]].partitions[0].leader)


def check_gateway(gateway: Any, topic: str, workers: int) -> None:
    """Our gateway serves its port with all its workers and sees the topic: another cluster on
    this machine may have taken the port first (a gateway that cannot bind exits, and the other
    one answers)."""
    import urllib.request

    deadline = time.monotonic() + 30
    while True:
        if not gateway.alive():
            raise SystemExit(f"the gateway exited; see {gateway.log_path}")
        try:
            with urllib.request.urlopen(f"{gateway.http_url}/topics/{topic}", timeout=5):
                log = Path(gateway.log_path).read_text(errors="replace")
                if workers == 1 or log.count(" serving\n") >= workers:
                    return
                raise OSError("not every worker serves yet")
        except OSError as exc:
            if time.monotonic() > deadline:
                raise SystemExit(f"the gateway does not serve topic {topic}: {exc}") from exc
        time.sleep(0.2)


def consume(bootstrap: str, topic: str, records: int) -> float:
    """Records/s of one librdkafka consumer reading partition 0 from offset 0, timed from its
    first record (connecting and the first fetch are not counted, as the REST readers' are
    not: their connections are open before they start)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 50 * 1024 * 1024,
            "max.partition.fetch.bytes": 10 * 1024 * 1024,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        seen, started = 0, 0.0
        deadline = time.monotonic() + 120
        while seen < records and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, timeout=1.0):
                if msg.error() is None:
                    if not seen:
                        started = time.perf_counter()
                    seen += 1
        return (seen - 1) / (time.perf_counter() - started)
    finally:
        consumer.close()


def _high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-gateway-hwm"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        return int(high)
    finally:
        consumer.close()


# -- output ------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "" if value is None else f"{value:{spec}}{suffix}"


def _line(row: Row) -> str:
    return (
        f"  {row.name}: {row.records_per_s:,.0f} records/s, {_fmt(row.requests_per_s, ',.0f')} "
        f"requests/s, p50 {_fmt(row.p50_ms, '.1f')} ms, p99 {_fmt(row.p99_ms, '.1f')} ms, "
        f"CPU gateway {_fmt(row.gateway_cpu, '.0%')} broker {_fmt(row.broker_cpu, '.0%')} "
        f"client {_fmt(row.client_cpu, '.0%')}, gateway waiting for a CPU "
        f"{_fmt(row.gateway_wait, '.0%')}"
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| cluster | measurement | records/s | every run's records/s | requests/s | p50 ms "
        "| p99 ms | CPU gateway / broker / busiest client | gateway waiting for a CPU "
        "| records/s per gateway core | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cpu = per_core = ""
        waited = _fmt(r.gateway_wait, ".0%")
        if r.gateway_cpu is not None:
            cpu = f"{r.gateway_cpu:.0%} / {r.broker_cpu:.0%} / {r.client_cpu:.0%}"
            per_core = f"{r.records_per_s / max(r.gateway_cpu, 0.01):,.0f}"
        ratio = "" if r.ratio is None else f"{r.ratio:.3f} of {r.versus}"
        every = (
            ", ".join(f"{x:,.0f}" for x in r.run_records_per_s)
            if len(r.run_records_per_s) > 1
            else ""
        )
        lines.append(
            f"| {r.cluster} | {r.name} | {r.records_per_s:,.0f} | {every} | "
            f"{_fmt(r.requests_per_s, ',.0f')} | {_fmt(r.p50_ms, '.1f')} | "
            f"{_fmt(r.p99_ms, '.1f')} | {cpu} | {waited} | {per_core} | {ratio} |"
        )
    return "\n".join(lines)


def _at_least_one(text: str) -> int:
    count = int(text)
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least one run")
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, nargs="+", default=[1, 3], choices=[1, 3])
    parser.add_argument("--seconds", type=float, default=15.0, help="time bound of a phase")
    parser.add_argument("--requests", type=int, default=40_000, help="1-record requests")
    parser.add_argument("--batches", type=int, default=10_000, help="100-record requests")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight")
    parser.add_argument(
        "--repeat",
        type=_at_least_one,
        default=3,
        help="runs of each produce phase (the median is kept)",
    )
    parser.add_argument("--clients", type=int, default=2, help="load generator processes")
    parser.add_argument("--readers", type=int, default=4, help="concurrent REST readers")
    parser.add_argument("--read-size", type=int, default=1000, help="records per REST read")
    parser.add_argument("--native-records", type=int, default=300_000)
    parser.add_argument(
        "--workers",
        nargs="+",
        default=["1", "default"],
        help="gateway worker processes per run: counts, or 'default' (one per usable CPU)",
    )
    args = parser.parse_args()
    counts = worker_counts(args.workers)

    rows: list[Row] = []
    with multiprocessing.get_context("spawn").Pool(args.clients) as pool:
        for brokers in args.brokers:
            for workers in counts:
                rows += run_cluster(brokers, workers, args, pool)
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
