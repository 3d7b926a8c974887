"""Replica assignment: Kafka's ``AdminUtils.assignReplicasToBrokers`` as pure functions.

Kafka's three goals: spread replicas evenly over brokers; spread the followers of one
broker's partitions over all the other brokers; with racks, put a partition's replicas on
different racks where possible.

Rack-unaware (no broker has a rack). Brokers sorted by id, ``n`` of them. With ``start`` and
``shift`` random in ``[0, n)`` (both equal to ``start_index`` when that is given, as in Kafka)::

    shift += 1                                   whenever p > 0 and p % n == 0
    first      = (p + start) % n                 partition p's leader (replica 0)
    replica j  = (first + 1 + (shift + j - 1) % (n - 1)) % n       for j = 1 .. rf-1

Leaders walk round-robin, so leader counts differ by at most one. Within one pass of ``n``
partitions the followers sit at a fixed offset from their leader, so every layer of replicas is a
rotation of the leaders; the offset moves by one each pass, so over ``n - 1`` passes the followers
of one broker's leaders visit every other broker.

Rack-aware (every broker has a rack). The same walk over a rack-alternated broker list (one broker
of each rack in turn, racks sorted by name, brokers by id: ``rack_alternated``), the shift scaled
by the number of racks, and a follower candidate is skipped while its rack already holds a replica
of the partition and some rack holds none (or while the broker already holds one and some broker
holds none). So each partition covers ``min(rf, racks)`` racks.

Brokers with and without racks mixed is refused (Kafka's ``RackAwareMode.Enforced``) unless the
caller passes ``ignore_racks=True`` (``RackAwareMode.Disabled``), which places rack-unaware.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from pafka.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

Assignment = dict[int, tuple[int, ...]]
"""Partition id -> replica broker ids; the first replica is the preferred leader."""


@dataclass(frozen=True)
class BrokerMeta:
    id: int
    rack: str | None = None


def replica_index(first: int, shift: int, j: int, n: int) -> int:
    """Index of follower ``j`` (0-based among followers) of a partition led from ``first``."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(brokers: Sequence[BrokerMeta]) -> list[int]:
    """Broker ids one rack at a time: first of each rack, then second of each, ...

    Racks in name order, brokers in id order within a rack; a rack that runs out is skipped.
    Brokers without a rack count as one rack named ``""``.
    """
    by_rack: dict[str, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack or "", []).append(b.id)
    racks = sorted(by_rack)
    depth = max((len(v) for v in by_rack.values()), default=0)
    return [by_rack[r][i] for i in range(depth) for r in racks if i < len(by_rack[r])]


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
    """Replicas for partitions ``start_partition_id .. start_partition_id + partitions - 1``.

    Deterministic when ``start_index`` is given (the shift then defaults to it, as in Kafka) or
    when both random numbers come from a seeded ``rng``.
    """
    if partitions < 1:
        raise InvalidPartitionsError(f"number of partitions must be at least 1, got {partitions}")
    if start_partition_id < 0:
        raise InvalidPartitionsError(f"first partition id must be >= 0, got {start_partition_id}")
    if replication_factor < 1:
        raise InvalidReplicationFactorError(
            f"replication factor must be at least 1, got {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} "
            "available brokers"
        )
    ids = sorted(b.id for b in brokers)
    if len(set(ids)) != len(ids):
        raise InvalidReplicaAssignmentError(f"broker ids listed more than once: {ids}")
    with_rack = sum(1 for b in brokers if b.rack is not None)
    rack_aware = with_rack > 0 and not ignore_racks
    if rack_aware and with_rack != len(brokers):
        missing = sorted(b.id for b in brokers if b.rack is None)
        raise InvalidReplicaAssignmentError(
            f"not all brokers have rack information (brokers {missing} have none); give every "
            "broker a rack or assign ignoring racks"
        )
    n = len(ids)
    rng = rng or random.Random()
    start = start_index if start_index is not None else rng.randrange(n)
    if replica_shift is not None:
        shift = replica_shift
    elif start_index is not None:
        shift = start_index
    else:
        shift = rng.randrange(n)
    if rack_aware:
        return _rack_aware(
            brokers, partitions, replication_factor, start, shift, start_partition_id
        )
    result: Assignment = {}
    for p in range(start_partition_id, start_partition_id + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        followers = (ids[replica_index(first, shift, j, n)] for j in range(replication_factor - 1))
        result[p] = (ids[first], *followers)
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
        k = 0
        # Terminates: k walks all n - 1 other positions cyclically, and one of them always fits.
        while len(replicas) < replication_factor:
            candidate = arranged[replica_index(first, shift * rack_count, k, n)]
            k += 1
            rack = rack_of[candidate]
            if (rack not in racks or len(racks) == rack_count) and candidate not in replicas:
                replicas.append(candidate)
                racks.add(rack)
        result[p] = tuple(replicas)
    return result


def add_partitions(
    existing: Mapping[int, Sequence[int]],
    brokers: Sequence[BrokerMeta],
    new_total: int,
    *,
    ignore_racks: bool = False,
    rng: random.Random | None = None,
) -> Assignment:
    """Replicas for new partitions ``len(existing) .. new_total - 1`` of a topic.

    As Kafka's ``AdminZkClient.addPartitions``: same replication factor as partition 0, start
    index at the first broker (by id) whose id is at least partition 0's leader, so the new
    leaders continue the round-robin where partition 0's began.
    """
    current = len(existing)
    if set(existing) != set(range(current)) or current == 0:
        raise InvalidReplicaAssignmentError(
            f"existing partition ids must be 0..{current - 1}, got {sorted(existing)}"
        )
    if new_total <= current:
        raise InvalidPartitionsError(
            f"topic has {current} partitions; the new count {new_total} must be larger"
        )
    zero = existing[0]
    if not zero:
        raise InvalidReplicaAssignmentError("partition 0 has no replicas")
    ids = sorted(b.id for b in brokers)
    start = next((i for i, b in enumerate(ids) if b >= zero[0]), 0)
    return assign_replicas(
        brokers,
        new_total - current,
        len(zero),
        start_index=start,
        start_partition_id=current,
        ignore_racks=ignore_racks,
        rng=rng,
    )


def validate_manual_assignment(
    assignment: Mapping[int, Sequence[int]],
    live_broker_ids: Collection[int],
    first_partition: int = 0,
    *,
    replication_factor: int | None = None,
) -> Assignment:
    """Check a user-given assignment and return it as tuples.

    Partition ids must run ``first_partition, first_partition + 1, ...`` without gaps; every
    partition lists the same, non-zero number of distinct, registered brokers (equal to
    ``replication_factor`` when given, e.g. the topic's when adding partitions).
    """
    if not assignment:
        raise InvalidReplicaAssignmentError("the replica assignment is empty")
    expected = range(first_partition, first_partition + len(assignment))
    if set(assignment) != set(expected):
        raise InvalidReplicaAssignmentError(
            f"partition ids must be {expected.start}..{expected.stop - 1} without gaps, "
            f"got {sorted(assignment)}"
        )
    sizes = sorted({len(r) for r in assignment.values()})
    if len(sizes) != 1:
        raise InvalidReplicaAssignmentError(
            f"all partitions must have the same number of replicas, got counts {sizes}"
        )
    if sizes[0] == 0:
        raise InvalidReplicaAssignmentError("every partition needs at least one replica")
    if replication_factor is not None and sizes[0] != replication_factor:
        raise InvalidReplicaAssignmentError(
            f"the assignment has {sizes[0]} replicas per partition; the topic's replication "
            f"factor is {replication_factor}"
        )
    live = set(live_broker_ids)
    for p in expected:
        replicas = assignment[p]
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"partition {p} lists a broker twice: {list(replicas)}"
            )
        unknown = sorted(set(replicas) - live)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"partition {p} names unknown broker(s) {unknown}; registered: {sorted(live)}"
            )
    return {p: tuple(assignment[p]) for p in expected}
