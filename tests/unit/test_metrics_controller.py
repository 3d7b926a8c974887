"""The controller's election counters and build info (the wiring is shown on a real cluster in
tests/integration/test_broker_metrics.py)."""

from __future__ import annotations

from pafka.cluster.election import Election, offline_partition_leader
from services.controller.metrics import ControllerMetrics

ELECTIONS = "kafka_controller_controllerstats_leaderelections_total"
UNCLEAN = "kafka_controller_controllerstats_uncleanleaderelections_total"


def counts(m: ControllerMetrics) -> tuple[float | None, float | None]:
    return m.registry.get_sample_value(ELECTIONS), m.registry.get_sample_value(UNCLEAN)


def test_a_new_leader_is_an_election_and_an_isr_only_change_is_not() -> None:
    m = ControllerMetrics()
    m.count_election(None, Election(1, (1, 2, 3)))  # a new partition
    m.count_election(1, Election(1, (1, 2)))  # a dead follower left the ISR
    m.count_election(1, Election(-1, (1,)))  # the leader died, no replica may take over
    m.count_election(1, Election(2, (2, 3)))  # a clean failover
    assert counts(m) == (2.0, 0.0)


def test_a_leader_chosen_outside_the_isr_counts_as_unclean() -> None:
    m = ControllerMetrics()
    # Every ISR member (1) is dead; broker 3 is alive but was never in sync.
    election = offline_partition_leader((1, 2, 3), (1,), {3}, unclean_enabled=True)
    assert election is not None and election.unclean
    m.count_election(-1, election)
    assert counts(m) == (1.0, 1.0)
    clean = offline_partition_leader((1, 2, 3), (1, 3), {3}, unclean_enabled=True)
    assert clean is not None and not clean.unclean
    m.count_election(-1, clean)
    assert counts(m) == (2.0, 1.0)


def test_the_controller_exports_build_info() -> None:
    m = ControllerMetrics()
    families = {f.name for f in m.registry.collect()}
    assert "pafka_build_info" in families
    sample = next(
        s for f in m.registry.collect() if f.name == "pafka_build_info" for s in f.samples
    )
    assert sample.labels["component"] == "controller" and sample.value == 1.0
