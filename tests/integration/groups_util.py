"""Helpers for the consumer-group tests: member worker processes and the group's znodes.

A ``Worker`` runs ``tests.integration.group_member`` and reads its event lines on a thread of
its own; ``WorkerView`` is what those lines say so far. ``read_group`` reads
``/consumers/{group}`` into a ``GroupState``; ``group_mismatch`` compares the two (a pure
function) and ``wait_group_matches`` polls until they agree.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.zk.znodes import (
    CommittedOffsetZNode,
    GroupMemberZNode,
    GroupZNode,
    PartitionOwnerZNode,
)
from pafka.zk.znodes import ConsumerGroupZNodes as Z

REPO_ROOT = Path(__file__).resolve().parents[2]
POLL_S = 0.1


# -- workers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Consumed:
    worker: str
    partition: int
    offset: int
    value: str


@dataclass
class WorkerView:
    """What a worker has printed so far."""

    name: str
    member_id: str | None = None
    assignment: frozenset[int] | None = None
    records: list[Consumed] = field(default_factory=list)
    committed: dict[int, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    closed: bool = False


def parse_events(name: str, lines: Iterable[str]) -> WorkerView:
    view = WorkerView(name)
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "MEMBER":
            view.member_id = rest
        elif kind == "ASSIGNED":
            view.assignment = frozenset(int(p) for p in json.loads(rest))
        elif kind == "RECORD":
            partition, offset, value = rest.split(" ", 2)
            view.records.append(Consumed(name, int(partition), int(offset), value))
        elif kind == "COMMITTED":
            for p, offset in json.loads(rest).items():
                view.committed[int(p)] = max(offset, view.committed.get(int(p), 0))
        elif kind in ("COMMIT_FAILED", "ERROR"):
            view.failures.append(line)
        elif kind == "CLOSED":
            view.closed = True
    return view


class Worker:
    """A group member process; its stdout events are collected by a reader thread."""

    def __init__(
        self,
        name: str,
        client: str,
        *,
        bootstrap: str,
        group: str,
        topic: str,
        log_dir: Path,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 1000,
    ) -> None:
        self.name = name
        self.client = client
        self.client_id = f"{group}-{name}"
        self.stderr_path = log_dir / f"{name}-{client}.stderr"
        self._stderr: IO[bytes] = open(self.stderr_path, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.group_member",
                f"--client={client}",
                f"--bootstrap={bootstrap}",
                f"--group={group}",
                f"--topic={topic}",
                f"--client-id={self.client_id}",
                f"--session-timeout-ms={session_timeout_ms}",
                f"--heartbeat-interval-ms={heartbeat_interval_ms}",
            ],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, name=f"worker-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self._lines.append(line.rstrip("\n"))

    def view(self) -> WorkerView:
        with self._lock:
            lines = list(self._lines)
        return parse_events(self.name, lines)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.proc.pid, sig)

    def describe(self, tail: int = 25) -> str:
        """Exit status and the end of stderr, for failure messages."""
        status = "running" if self.alive else f"exited {self.proc.returncode}"
        text = self.stderr_path.read_text(errors="replace").splitlines()[-tail:]
        body = "\n    ".join(text) or "(no stderr)"
        return f"worker {self.name} ({self.client}, {status}), stderr tail:\n    {body}"

    def stop(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        self._stderr.close()


def wait_until(
    condition: Callable[[], str | None],
    timeout_s: float,
    what: str,
    *,
    alive: Sequence[Worker] = (),
) -> None:
    """Poll until ``condition`` returns None (it returns what is still wrong otherwise).

    Fails at once if one of the ``alive`` workers exits.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        dead = [w for w in alive if not w.alive]
        if dead:
            raise AssertionError(f"{what}: a worker died\n" + "\n".join(w.describe() for w in dead))
        wrong = condition()
        if wrong is None:
            return
        if time.monotonic() > deadline:
            details = "\n".join(w.describe() for w in alive)
            raise AssertionError(f"{what}: not reached in {timeout_s:.0f} s: {wrong}\n{details}")
        time.sleep(POLL_S)


def wait_closed(worker: Worker, timeout_s: float) -> None:
    """SIGTERM the worker, wait for its clean leave and a zero exit."""
    worker.signal(signal.SIGTERM)
    wait_until(
        lambda: None if worker.view().closed else "no CLOSED yet",
        timeout_s,
        f"clean leave of {worker.name}",
    )
    assert worker.proc.wait(timeout=timeout_s) == 0, worker.describe()


# -- ZooKeeper -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupState:
    """``/consumers/{group}`` as read from ZooKeeper."""

    group: GroupZNode | None
    members: dict[str, GroupMemberZNode]
    owners: dict[tuple[str, int], PartitionOwnerZNode]
    offsets: dict[tuple[str, int], CommittedOffsetZNode]


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def _data(zk: KazooClient, path: str) -> bytes | None:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return bytes(data)


def _per_partition(zk: KazooClient, root: str) -> dict[tuple[str, int], tuple[str, bytes]]:
    """``{root}/{topic}/{p}`` nodes: (topic, p) -> (path, data)."""
    out: dict[tuple[str, int], tuple[str, bytes]] = {}
    for topic in _children(zk, root):
        for p in _children(zk, f"{root}/{topic}"):
            path = f"{root}/{topic}/{p}"
            data = _data(zk, path)
            if data is not None:
                out[(topic, int(p))] = (path, data)
    return out


def read_group(zk: KazooClient, group: str) -> GroupState:
    """One read of the group's znodes; nodes deleted while reading are left out."""
    group_data = _data(zk, Z.group_path(group))
    members = {}
    for member in _children(zk, Z.ids_path(group)):
        data = _data(zk, Z.member_path(group, member))
        if data is not None:
            members[member] = GroupMemberZNode.decode(group, member, data)
    owners = {
        tp: PartitionOwnerZNode.decode(path, data)
        for tp, (path, data) in _per_partition(zk, Z.owners_path(group)).items()
    }
    offsets = {
        tp: CommittedOffsetZNode.decode(path, data)
        for tp, (path, data) in _per_partition(zk, Z.offsets_path(group)).items()
    }
    return GroupState(
        group=None if group_data is None else GroupZNode.decode(group, group_data),
        members=members,
        owners=owners,
        offsets=offsets,
    )


def group_mismatch(
    state: GroupState,
    views: Sequence[WorkerView],
    client_ids: dict[str, str],
    *,
    topic: str,
    partitions: int,
    protocol: str | None,
) -> str | None:
    """What differs between the workers' own view of the group and ZooKeeper's (None: nothing).

    With live workers: each knows its member id and assignment, the assignments cover every
    partition once, ``ids/`` holds exactly the live members (with their client ids and
    subscription), ``owners/`` names exactly the member each partition is assigned to, and the
    group node names one of them as leader. With none, ``ids/`` and ``owners/`` are empty.
    """
    problems: list[str] = []
    expected_owners: dict[tuple[str, int], str] = {}
    for v in views:
        if v.member_id is None or v.assignment is None:
            problems.append(f"{v.name} has member {v.member_id} and assignment {v.assignment}")
            continue
        for p in v.assignment:
            if (topic, p) in expected_owners:
                problems.append(
                    f"partition {p} assigned to {expected_owners[(topic, p)]} and {v.name}"
                )
            expected_owners[(topic, p)] = v.member_id
    assigned = {p for _, p in expected_owners}
    if views and assigned != set(range(partitions)):
        problems.append(f"unassigned partitions {sorted(set(range(partitions)) - assigned)}")

    live = {v.member_id: v.name for v in views if v.member_id is not None}
    if set(state.members) != set(live):
        problems.append(f"ids/ holds {sorted(state.members)}, live members are {live}")
    for member_id, node in state.members.items():
        name = live.get(member_id)
        if name is not None and (node.client_id, node.subscription) != (client_ids[name], (topic,)):
            problems.append(f"ids/{member_id} says {node}, {name} is {client_ids[name]} on {topic}")

    owners = {tp: node.member_id for tp, node in state.owners.items()}
    if owners != expected_owners:
        diff = {
            f"{t}/{p}": (owners.get((t, p)), expected_owners.get((t, p)))
            for t, p in sorted(set(owners) | set(expected_owners))
            if owners.get((t, p)) != expected_owners.get((t, p))
        }
        problems.append(f"owners/ differ from assignments, (znode, worker): {diff}")

    if views:
        if state.group is None or state.group.leader not in live:
            problems.append(f"group node {state.group} names no live leader")
        elif protocol is not None and state.group.protocol != protocol:
            problems.append(f"group protocol is {state.group.protocol}, expected {protocol}")
    return "; ".join(problems) or None


def wait_group_matches(
    zk: KazooClient,
    group: str,
    workers: Sequence[Worker],
    timeout_s: float,
    *,
    topic: str,
    partitions: int,
    protocol: str | None = None,
) -> GroupState:
    """Poll until the live ``workers`` and ``/consumers/{group}`` agree; return that state."""
    client_ids = {w.name: w.client_id for w in workers}
    agreed: list[GroupState] = []

    def check() -> str | None:
        views = [w.view() for w in workers]
        state = read_group(zk, group)
        wrong = group_mismatch(
            state, views, client_ids, topic=topic, partitions=partitions, protocol=protocol
        )
        if wrong is None:
            agreed.append(state)
        return wrong

    names = ", ".join(w.name for w in workers) or "no members"
    wait_until(check, timeout_s, f"group {group} matching {names}", alive=workers)
    return agreed[-1]


# -- what was consumed ---------------------------------------------------------------------------


def consumption_problems(
    consumed: Iterable[Consumed],
    produced: dict[str, tuple[int, int]],
    *,
    killed: str,
    killed_committed: dict[int, int],
) -> list[str]:
    """Records missing, misplaced or read twice where only the killed member's may repeat.

    A record may be read twice only if one read was the killed member's and that member had
    not seen a commit covering it acknowledged.
    """
    reads: dict[str, list[Consumed]] = defaultdict(list)
    problems: list[str] = []
    for c in consumed:
        if produced.get(c.value) != (c.partition, c.offset):
            problems.append(f"{c} was produced at {produced.get(c.value)}")
        reads[c.value].append(c)
    missing = sorted(set(produced) - set(reads))
    if missing:
        problems.append(f"{len(missing)} records never consumed, e.g. {missing[:10]}")
    for value, rs in sorted(reads.items()):
        if len(rs) == 1:
            continue
        by_killed = [r for r in rs if r.worker == killed]
        others = [r for r in rs if r.worker != killed]
        committed = killed_committed.get(rs[0].partition, 0)
        if len(by_killed) > 1 or len(others) > 1 or rs[0].offset < committed:
            readers = [r.worker for r in rs]
            problems.append(
                f"{value} (partition {rs[0].partition} offset {rs[0].offset}) read by {readers};"
                f" {killed} had committed {committed}"
            )
    return problems
