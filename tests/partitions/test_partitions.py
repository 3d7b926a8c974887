"""pafka under network partitions: ten cuts, each under the produce-consume-validate workload.

Each scenario cuts for ``FULL_CUT_S`` (``make test-partitions``); two of them also run with a
short cut as the subset CI can afford (marker ``partitions_ci``). A scenario fails when a
safety check fails (an acknowledged write lost, an offset with two values, replicas that differ,
a consumer going backwards) or when an availability target is missed (``figures.py``); its
figures are recorded first either way, and printed as a table at the end of the session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.conftest import ClusterHandle
from tests.partitions import scenario
from tests.partitions.cuts import isolation, one_way, split
from tests.partitions.figures import FIGURES
from tests.partitions.scenario import Roles, Scenario
from tests.partitions.topology import PartitionedCluster

pytestmark = pytest.mark.partitions

FULL_CUT_S = 60.0
CI_CUT_S = 20.0


def _leader_from_all_but_clients(r: Roles) -> set[tuple[str, str]]:
    return isolation(r.leader, r.servers)


def _minority(r: Roles) -> set[tuple[str, str]]:
    minority = (r.zookeeper, r.active_controller)
    majority = (*r.standby_controllers, *r.brokers, r.client)
    return split(minority, majority)


SCENARIOS = [
    Scenario("leader isolated from all but clients", _leader_from_all_but_clients),
    Scenario("leader isolated from other brokers", lambda r: isolation(r.leader, r.followers)),
    Scenario("leader isolated from ZooKeeper", lambda r: isolation(r.leader, [r.zookeeper])),
    Scenario(
        "active controller isolated from ZooKeeper",
        lambda r: isolation(r.active_controller, [r.zookeeper]),
    ),
    Scenario(
        "active controller isolated from brokers",
        lambda r: isolation(r.active_controller, r.brokers),
    ),
    Scenario(
        "leader flapping from other brokers (5 s on, 5 s off)",
        lambda r: isolation(r.leader, r.followers),
        flap_s=5.0,
    ),
    Scenario("client cut from its leader", lambda r: isolation(r.client, [r.leader])),
    Scenario(
        "ZooKeeper isolated from everyone",
        lambda r: isolation(r.zookeeper, [*r.servers, r.client]),
    ),
    Scenario("minority: active controller and ZooKeeper", _minority),
    Scenario("leader to followers one-way", lambda r: one_way(r.leader, r.followers)),
]
CI_SUBSET = {"leader isolated from other brokers", "active controller isolated from ZooKeeper"}


def _id(s: Scenario) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.name.lower()).strip("-")


CASES = [pytest.param(s, FULL_CUT_S, id=_id(s)) for s in SCENARIOS] + [
    pytest.param(s, CI_CUT_S, id=f"ci-{_id(s)}", marks=pytest.mark.partitions_ci)
    for s in SCENARIOS
    if s.name in CI_SUBSET
]


@pytest.mark.parametrize(("case", "cut_s"), CASES)
def test_partition(
    partitioned: PartitionedCluster,
    cluster_handle: ClusterHandle,
    case: Scenario,
    cut_s: float,
    tmp_path: Path,
) -> None:
    figures = scenario.run(partitioned, case, cut_s, tmp_path)
    row = figures.to_json()
    Path(figures.figures_path).write_text(json.dumps(row, indent=2))
    FIGURES.append(row)
    print(json.dumps(row, indent=2))
    problems = ([] if figures.validation == "ok" else [figures.validation]) + row["missed_targets"]
    assert not problems, f"{case.name}: " + "; ".join(problems)
