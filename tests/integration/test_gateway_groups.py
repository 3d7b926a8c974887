"""Native group membership through the gateways, on real processes.

REST members join through either gateway (each request may go to any replica), heartbeat from a
thread of their own and rejoin whenever a heartbeat says so, as a REST client must. At each step
the members' own view of the group must agree with ``/consumers/{group}/owners`` in ZooKeeper;
commits are generation- and ownership-checked; committed offsets come back in the next join and
in ``GET /groups/{g}`` with the lag; a REST member and a kafka-python consumer (both "range")
split a topic consistently; bad input is a 4xx with a code, never a 500.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import httpx
import pytest

from pafka.groups.assignors import MemberSubscription, range_assign
from tests.integration.conftest import ClusterHandle
from tests.integration.groups_util import Worker, read_group, wait_until

PARTITIONS = 4
SESSION_TIMEOUT_MS = 6000  # the broker's minimum: expiry tests stay short
HEARTBEAT_S = 0.5
GROUP_TIMEOUT_S = 45.0
HTTP_TIMEOUT_S = 60.0


class RestMember:
    """A group member over REST: joins, then heartbeats on its own thread and rejoins when a
    heartbeat answers ``"rejoin": true``. Its assignment is what the last join returned."""

    def __init__(
        self,
        name: str,
        base_url: str,
        group: str,
        topics: list[str],
        *,
        assignor: str = "range",
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
    ) -> None:
        self.name = name
        self.session_timeout_ms = session_timeout_ms
        self.group = group
        self.topics = topics
        self.assignor = assignor
        self.http = httpx.Client(base_url=base_url, timeout=HTTP_TIMEOUT_S)
        self._lock = threading.Lock()
        self.joined: dict[str, Any] | None = None
        self.rejoin_answers: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rest-{name}", daemon=True)

    # -- what the member knows ---------------------------------------------------------------

    @property
    def member_id(self) -> str | None:
        with self._lock:
            return self.joined["member_id"] if self.joined else None

    @property
    def generation(self) -> int:
        with self._lock:
            assert self.joined is not None
            return int(self.joined["generation"])

    def partitions(self) -> set[tuple[str, int]] | None:
        with self._lock:
            if self.joined is None:
                return None
            return {(a["topic"], a["partition"]) for a in self.joined["assignment"]}

    # -- the protocol ------------------------------------------------------------------------

    def join(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "topics": self.topics,
            "assignor": self.assignor,
            "session_timeout_ms": self.session_timeout_ms,
        }
        if self.member_id is not None:
            body["member_id"] = self.member_id
        r = self.http.post(f"/groups/{self.group}/members", json=body)
        assert r.status_code == 200, (self.name, r.status_code, r.text)
        with self._lock:
            self.joined = r.json()
        return r.json()

    def heartbeat(self, generation: int | None = None) -> httpx.Response:
        return self.http.post(
            f"/groups/{self.group}/members/{self.member_id}/heartbeat",
            json={"generation": self.generation if generation is None else generation},
        )

    def commit(self, offsets: dict[tuple[str, int], int], generation: int | None = None) -> Any:
        return self.http.post(
            f"/groups/{self.group}/offsets",
            json={
                "member_id": self.member_id,
                "generation": self.generation if generation is None else generation,
                "offsets": [
                    {"topic": t, "partition": p, "offset": o} for (t, p), o in offsets.items()
                ],
            },
        )

    def leave(self) -> httpx.Response:
        return self.http.delete(f"/groups/{self.group}/members/{self.member_id}")

    # -- the heartbeat thread ----------------------------------------------------------------

    def start(self) -> None:
        """Join and keep the membership alive on a thread of its own."""
        self._thread.start()

    def _run(self) -> None:
        try:
            self.join()
            while not self._stop.wait(HEARTBEAT_S):
                r = self.heartbeat()
                if r.status_code == 200:
                    assert r.json() == {"rejoin": False}, r.text
                    continue
                answer = r.json()
                assert answer.get("rejoin") is True, (r.status_code, r.text)
                with self._lock:
                    self.rejoin_answers.append({"status": r.status_code, **answer})
                self.join()
        except Exception as exc:  # reported by the waits
            self.failures.append(f"{self.name}: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        """Stop heartbeating (no leave: the coordinator must notice the silence)."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=HTTP_TIMEOUT_S)

    def close(self) -> None:
        self.stop()
        self.http.close()


@pytest.fixture
def names() -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    yield f"rest-groups-{suffix}", f"rest-group-{suffix}"


def _zk_owners(cluster: ClusterHandle, group: str) -> dict[tuple[str, int], str]:
    return {tp: node.member_id for tp, node in read_group(cluster.zk, group).owners.items()}


def split_problems(
    cluster: ClusterHandle, group: str, topic: str, views: dict[str, set[tuple[str, int]] | None]
) -> str | None:
    """What is wrong with member id -> partitions as one generation's split of ``topic``:
    overlaps, gaps, or ZooKeeper's owners disagreeing (None: nothing)."""
    expected: dict[tuple[str, int], str] = {}
    for member_id, partitions in views.items():
        if partitions is None:
            return f"{member_id} has not joined"
        for tp in partitions:
            if tp in expected:
                return f"{tp} assigned to {expected[tp]} and {member_id}"
            expected[tp] = member_id
    if set(expected) != {(topic, p) for p in range(PARTITIONS)}:
        return f"assigned {sorted(expected)}"
    owners = _zk_owners(cluster, group)
    if owners != expected:
        return f"owners/ in ZooKeeper {owners} != assignments {expected}"
    return None


def _wait_split(
    cluster: ClusterHandle, group: str, topic: str, members: list[RestMember], what: str
) -> None:
    def check() -> str | None:
        failed = [f for m in members for f in m.failures]
        if failed:
            raise AssertionError(f"{what}: {failed}")
        ids = [m.member_id for m in members]
        if None in ids or len({m.generation for m in members}) != 1:
            return f"members {ids} not in one generation yet"
        return split_problems(
            cluster, group, topic, {str(m.member_id): m.partitions() for m in members}
        )

    wait_until(check, GROUP_TIMEOUT_S, what)


def _produce(cluster: ClusterHandle, topic: str, counts: dict[int, int]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        futures = [
            producer.send(topic, value=f"{p}-{i}".encode(), partition=p)
            for p, n in counts.items()
            for i in range(n)
        ]
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close()


# -- tests -----------------------------------------------------------------------------------


def test_two_rest_members_share_then_one_goes_silent(
    cluster: ClusterHandle, names: tuple[str, str]
) -> None:
    topic, group = names
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
    a, b = (
        RestMember(name, url, group, [topic])
        for name, url in zip("AB", cluster.gateways, strict=True)
    )
    try:
        a.start()  # both join at once, each through its own gateway
        b.start()
        _wait_split(cluster, group, topic, [a, b], "two REST members sharing the topic")
        a_parts, b_parts = a.partitions(), b.partitions()
        assert a_parts is not None and b_parts is not None
        assert len(a_parts) == len(b_parts) == PARTITIONS // 2

        view = httpx.get(f"{cluster.gateways[1]}/groups/{group}", timeout=HTTP_TIMEOUT_S).json()
        assert view["state"] == "Stable" and view["protocol"] == "range"
        assert view["generation"] == a.generation
        shares = {
            m["member_id"]: {(x["topic"], x["partition"]) for x in m["assignment"]}
            for m in view["members"]
        }
        assert shares == {a.member_id: a_parts, b.member_id: b_parts}

        rejoins_before = len(b.rejoin_answers)
        a.stop()  # A goes silent: its session expires, B is told to rejoin and takes all
        _wait_split(cluster, group, topic, [b], "the remaining member taking every partition")
        answers = b.rejoin_answers[rejoins_before:]
        assert answers and answers[-1]["status"] == 409 and answers[-1]["error_code"] == 40902
        stale = a.heartbeat()
        assert stale.status_code == 404 and stale.json()["error_code"] == 40403, stale.text
    finally:
        a.close()
        b.close()


def test_commits_are_checked_and_come_back_with_lag(
    cluster: ClusterHandle, names: tuple[str, str]
) -> None:
    topic, group = names
    other = f"{topic}-other"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
    cluster.create_topic(other, partitions=1, replication_factor=1)
    _produce(cluster, topic, {0: 5, 1: 3, 2: 0, 3: 7})
    # No heartbeats here: a session long enough for the whole test.
    member = RestMember("solo", cluster.gateways[0], group, [topic], session_timeout_ms=60_000)
    try:
        first = member.join()
        assert first["leader"] is True and first["assignor"] == "range"
        assert all(a["committed_offset"] == -1 for a in first["assignment"])
        assert len(first["assignment"]) == PARTITIONS

        ok = member.commit({(topic, 0): 4, (topic, 1): 3})
        assert ok.status_code == 200, ok.text
        assert [(o["partition"], o["offset"], o["error_code"]) for o in ok.json()["offsets"]] == [
            (0, 4, 0),
            (1, 3, 0),
        ]

        stale = member.commit({(topic, 3): 1}, generation=member.generation + 1)
        assert stale.status_code == 409 and stale.json()["error_code"] == 40901, stale.text
        beat = member.heartbeat(generation=member.generation + 1)
        assert beat.status_code == 409, beat.text
        assert beat.json() == {"error_code": 40901, "message": ANY, "rejoin": True}
        assert member.heartbeat().json() == {"rejoin": False}
        not_owned = member.commit({(topic, 3): 2, (other, 0): 0})
        assert not_owned.status_code == 409 and not_owned.json()["error_code"] == 40901
        outcome = {(o["topic"], o["error_code"]) for o in not_owned.json()["offsets"]}
        assert outcome == {(topic, 0), (other, 22)}, not_owned.text  # ILLEGAL_GENERATION

        # Through the other gateway: the group, committed offsets, end offsets and lag.
        _produce(cluster, topic, {0: 2})
        view = httpx.get(f"{cluster.gateways[1]}/groups/{group}", timeout=HTTP_TIMEOUT_S)
        assert view.status_code == 200, view.text
        lags = {p["partition"]: p for p in view.json()["partitions"] if p["topic"] == topic}
        assert {p: (x["committed_offset"], x["end_offset"], x["lag"]) for p, x in lags.items()} == {
            0: (4, 7, 3),
            1: (3, 3, 0),
            2: (-1, 0, None),
            3: (2, 7, 5),
        }

        # A rejoin starts a new generation; the committed offsets come with the assignment.
        again = member.join()
        assert again["member_id"] == first["member_id"]
        assert again["generation"] > first["generation"]
        assert {a["partition"]: a["committed_offset"] for a in again["assignment"]} == {
            0: 4,
            1: 3,
            2: -1,
            3: 2,
        }

        left = member.leave()
        assert left.status_code == 204, left.text
        view = httpx.get(f"{cluster.gateways[0]}/groups/{group}", timeout=HTTP_TIMEOUT_S).json()
        assert view["state"] == "Empty" and view["members"] == []
        assert {p["partition"]: p["committed_offset"] for p in view["partitions"]} == {
            0: 4,
            1: 3,
            2: -1,
            3: 2,
        }
        assert _zk_owners(cluster, group) == {}
        again_left = member.leave()
        assert again_left.status_code == 404 and again_left.json()["error_code"] == 40403
    finally:
        member.close()


@pytest.mark.parametrize("first", ["rest", "kafka-python"])
def test_rest_and_kafka_python_members_split_consistently(
    cluster: ClusterHandle, names: tuple[str, str], tmp_path: Path, first: str
) -> None:
    topic, group = names
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=2)
    rest = RestMember("rest", cluster.gateways[0], group, [topic])
    worker: Worker | None = None

    def start_worker() -> Worker:
        return Worker(
            "kp",
            "kafka-python",
            bootstrap=cluster.bootstrap,
            group=group,
            topic=topic,
            log_dir=tmp_path,
            session_timeout_ms=SESSION_TIMEOUT_MS,
        )

    try:
        if first == "rest":
            rest.start()
            wait_until(lambda: None if rest.member_id else "not joined", GROUP_TIMEOUT_S, "join")
            worker = start_worker()
        else:
            worker = start_worker()
            wait_until(
                lambda: None if worker and worker.view().assignment else "not assigned",
                GROUP_TIMEOUT_S,
                "kafka-python joining",
                alive=[worker],
            )
            rest.start()
        kp = worker

        def check() -> str | None:
            if rest.failures:
                raise AssertionError(rest.failures)
            seen = kp.view()
            if seen.member_id is None or seen.assignment is None:
                return "kafka-python has no assignment"
            views = {
                str(rest.member_id): rest.partitions(),
                seen.member_id: {(topic, p) for p in seen.assignment},
            }
            wrong = split_problems(cluster, group, topic, views)
            if wrong:
                return wrong
            # Both sides' shares are what Kafka's range assignor gives these two members.
            expected = range_assign(
                [MemberSubscription(m, frozenset({topic})) for m in views], {topic: PARTITIONS}
            )
            return None if expected == views else f"{views} is not range's {expected}"

        wait_until(check, GROUP_TIMEOUT_S, f"REST + kafka-python ({first} first)", alive=[kp])
        leader = read_group(cluster.zk, group).group
        assert leader is not None and leader.protocol == "range"
        expected_leader = rest.member_id if first == "rest" else kp.view().member_id
        assert leader.leader == expected_leader
    finally:
        rest.close()
        if worker is not None:
            worker.stop()


def test_bad_input_is_refused_with_codes(cluster: ClusterHandle, names: tuple[str, str]) -> None:
    topic, group = names
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    url = cluster.gateways[0]
    join = f"/groups/{group}/members"
    # The cases run concurrently, and a stranger's commit is answered as in Kafka according
    # to whether the group exists (none: ILLEGAL_GENERATION; one without that member:
    # UNKNOWN_MEMBER_ID): so the group exists, empty, before any case runs.
    founder = RestMember("founder", url, group, [topic])
    try:
        founder.join()
        left = founder.leave()
        assert left.status_code == 204, left.text
    finally:
        founder.close()
    never = f"{group}-never"

    def commit(offset: int) -> dict[str, Any]:
        entry = {"topic": topic, "partition": 0, "offset": offset}
        return {"member_id": "ghost", "generation": 1, "offsets": [entry]}

    # joins above may leave an empty group behind
    cases: list[tuple[str, str, Any, int, int]] = [
        ("POST", join, {"topics": [topic], "assignor": "nope"}, 422, 42200),
        ("POST", join, {"topics": [topic], "session_timeout_ms": 1000}, 422, 42204),
        ("POST", join, {"topics": [topic], "session_timeout_ms": -1}, 422, 42200),
        ("POST", join, {"topics": [topic], "session_timeout_ms": 2**40}, 422, 42200),
        ("POST", join, {"assignor": "range"}, 422, 42200),
        ("POST", join, {"topics": []}, 422, 42200),
        ("POST", join, {"topics": [f"{topic}-missing"]}, 404, 40401),
        ("POST", join, {"topics": [topic], "member_id": "ghost"}, 404, 40403),
        ("POST", join, {"topics": [topic], "extra": 1}, 422, 42200),
        ("POST", join, "not json", 422, 42200),
        ("POST", f"/groups/{group}/members/ghost/heartbeat", {"generation": 1}, 404, 40403),
        ("POST", f"/groups/{group}/members/ghost/heartbeat", {"generation": "x"}, 422, 42200),
        ("POST", f"/groups/{group}/members/ghost/heartbeat", {}, 422, 42200),
        ("POST", f"/groups/{group}/offsets", commit(1), 404, 40403),
        ("POST", f"/groups/{group}/offsets", commit(-5), 422, 42200),
        ("POST", f"/groups/{group}/offsets", {"member_id": "ghost", "generation": 1}, 422, 42200),
        ("DELETE", f"/groups/{group}/members/ghost", None, 404, 40403),
        ("GET", f"/groups/{never}", None, 404, 40401),
    ]
    with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT_S) as http:

        def send(case: tuple[str, str, Any, int, int]) -> tuple[int, Any]:
            method, path, body, _, _ = case
            if isinstance(body, str):
                r = http.request(
                    method, path, content=body, headers={"content-type": "application/json"}
                )
            else:
                r = http.request(method, path, json=body)
            return r.status_code, r.json()

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(send, cases))
    wrong = [
        (case[:3], (status, body))
        for case, (status, body) in zip(cases, answers, strict=True)
        if (status, body.get("error_code")) != case[3:] or not body.get("message")
    ]
    assert not wrong, wrong


def test_openapi_documents_the_group_endpoints(cluster: ClusterHandle) -> None:
    spec = httpx.get(f"{cluster.gateways[0]}/openapi.json", timeout=HTTP_TIMEOUT_S).json()
    paths = spec["paths"]
    assert {"post"} <= set(paths["/groups/{group}/members"])
    assert {"post"} <= set(paths["/groups/{group}/members/{member}/heartbeat"])
    assert {"post"} <= set(paths["/groups/{group}/offsets"])
    assert {"delete"} <= set(paths["/groups/{group}/members/{member}"])
    assert {"get"} <= set(paths["/groups/{group}"])
    schemas = spec["components"]["schemas"]
    assert schemas["JoinRequest"]["properties"]["assignor"]["enum"] == [
        "range",
        "roundrobin",
        "sticky",
    ]
    assert schemas["JoinRequest"].get("examples") and schemas["GroupView"].get("examples")
