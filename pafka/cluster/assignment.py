"""Replica assignment, Kafka's algorithm (AdminUtils.assignReplicasToBrokers), as pure functions.

Rack-unaware: brokers sorted by id; partition ``i``'s first replica is broker ``(i + start) % n``
from a random ``start``, so leaders spread evenly; replica ``j`` follows at
``(first + 1 + (shift + j) % (n - 1)) % n``, where ``shift`` is random and grows by one each time
``i`` wraps past ``n``, so that followers of one broker's leaders spread over all other brokers
instead of always landing on its neighbour.

Rack-aware (every broker has a rack): the same walk over a broker list that alternates racks,
skipping a broker whose rack already holds a replica of the partition until every rack does.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pafka.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

Assignment = dict[int, tuple[int, ...]]


@dataclass(frozen=True)
class BrokerMeta:
    id: int
    rack: str | None = None


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: Sequence[BrokerMeta]) -> list[int]:
    """Broker ids ordered one rack at a time: r1b1, r2b1, r3b1, r1b2, ..."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack or "", []).append(b.id)
    racks = sorted(by_rack)
    result: list[int] = []
    depth = max(len(v) for v in by_rack.values())
    for i in range(depth):
        result.extend(by_rack[r][i] for r in racks if i < len(by_rack[r]))
    return result


def assign_replicas(
    brokers: Sequence[BrokerMeta],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    start_partition_id: int = 0,
    replica_shift: int | None = None,
    ignore_racks: bool = False,
    rng: random.Random | None = None,
) -> Assignment:
    if partitions < 1:
        raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} "
            "available brokers"
        )
    rng = rng or random.Random()
    racked = [b for b in brokers if b.rack is not None]
    if racked and len(racked) != len(brokers) and not ignore_racks:
        raise InvalidReplicaAssignmentError(
            "some brokers have a rack and some do not; give every broker a rack"
        )
    n = len(brokers)
    start = start_index if start_index is not None else rng.randrange(n)
    shift = replica_shift if replica_shift is not None else rng.randrange(n)
    if racked and not ignore_racks:
        return _rack_aware(
            brokers, partitions, replication_factor, start, shift, start_partition_id
        )
    ids = sorted(b.id for b in brokers)
    result: Assignment = {}
    for p in range(start_partition_id, start_partition_id + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        replicas += [ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        result[p] = tuple(replicas)
    return result


def _rack_aware(
    brokers: Sequence[BrokerMeta],
    partitions: int,
    replication_factor: int,
    start: int,
    shift: int,
    start_partition_id: int,
) -> Assignment:
    rack_of = {b.id: b.rack or "" for b in brokers}
    arranged = rack_alternated(brokers)
    n = len(arranged)
    rack_count = len(set(rack_of.values()))
    result: Assignment = {}
    for p in range(start_partition_id, start_partition_id + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks = {rack_of[leader]}
        chosen = {leader}
        k = 0
        while len(replicas) < replication_factor:
            candidate = arranged[_replica_index(first, shift * rack_count, k, n)]
            k += 1
            rack = rack_of[candidate]
            if (rack not in racks or len(racks) == rack_count) and (
                candidate not in chosen or len(chosen) == n
            ):
                replicas.append(candidate)
                racks.add(rack)
                chosen.add(candidate)
        result[p] = tuple(replicas)
    return result


def add_partitions(
    existing: Mapping[int, Sequence[int]],
    brokers: Sequence[BrokerMeta],
    new_total: int,
    *,
    rng: random.Random | None = None,
) -> Assignment:
    """Assignments for partitions ``len(existing)..new_total-1``, continuing the pattern from
    partition 0's first replica as Kafka does."""
    current = len(existing)
    if new_total <= current:
        raise InvalidPartitionsError(
            f"topic has {current} partitions; the new count {new_total} must be larger"
        )
    ids = sorted(b.id for b in brokers)
    rf = len(existing[0])
    first_of_zero = existing[0][0]
    start = ids.index(first_of_zero) if first_of_zero in ids else None
    return assign_replicas(
        brokers,
        new_total - current,
        rf,
        start_index=start,
        start_partition_id=current,
        rng=rng,
    )


def validate_manual_assignment(
    assignment: Mapping[int, Sequence[int]], live_broker_ids: set[int], first_partition: int = 0
) -> Assignment:
    """Check a user-given assignment: dense partition ids, equal replica counts, no duplicate
    or unknown brokers."""
    if not assignment:
        raise InvalidReplicaAssignmentError("the replica assignment is empty")
    expected = set(range(first_partition, first_partition + len(assignment)))
    if set(assignment) != expected:
        raise InvalidReplicaAssignmentError(
            f"partition ids must be {min(expected)}..{max(expected)}, got {sorted(assignment)}"
        )
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise InvalidReplicaAssignmentError(
            "every partition needs the same, non-zero replica count"
        )
    for p, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {p} lists a broker twice: {replicas}")
        unknown = set(replicas) - live_broker_ids
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"partition {p} names brokers {sorted(unknown)} that are not registered"
            )
    return {p: tuple(r) for p, r in assignment.items()}
