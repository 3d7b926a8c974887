"""Controller metrics under the names Kafka dashboards use for the KafkaController MBeans."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from pafka.build_info import register_build_info
from pafka.cluster.election import Election
from services.controller.context import ControllerContext


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.active = Gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, 0 on standbys",
            registry=r,
        )
        self.epoch = Gauge("pafka_controller_epoch", "Epoch of this controller's term", registry=r)
        self.offline = Gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a live leader",
            registry=r,
        )
        self.partitions = Gauge(
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions in the cluster",
            registry=r,
        )
        self.topics = Gauge(
            "kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster", registry=r
        )
        self.brokers = Gauge(
            "pafka_controller_live_brokers", "Brokers registered in ZooKeeper", registry=r
        )
        self.preferred_imbalance = Gauge(
            "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
            "Partitions not led by their preferred replica",
            registry=r,
        )
        self.unclean_elections = Counter(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Leaders elected outside the ISR (unclean.leader.election.enable), data may be lost",
            registry=r,
        )
        self.leader_elections = Counter(
            "kafka_controller_controllerstats_leaderelections",
            "Partitions given a new live leader (new topics, failures, moves)",
            registry=r,
        )
        register_build_info(r, "controller")

    def count_election(self, previous_leader: int | None, election: Election) -> None:
        """An election this controller wrote; ``previous_leader`` is None for a new partition.
        Only a change to a live leader is an election: ISR-only changes and going offline
        are not."""
        if election.leader < 0 or election.leader == previous_leader:
            return
        self.leader_elections.inc()
        if election.unclean:
            self.unclean_elections.inc()

    def bind(self, context: ControllerContext) -> None:
        self.offline.set_function(context.offline_count)
        self.partitions.set_function(lambda: len(context.partitions))
        self.topics.set_function(lambda: len(context.topic_ids))
        self.brokers.set_function(lambda: len(context.brokers))
        self.preferred_imbalance.set_function(
            lambda: sum(
                1
                for e in context.partitions.values()
                if e.state is not None and e.replicas and e.state.leader != e.replicas[0]
            )
        )

    def unbind(self) -> None:
        for gauge in (
            self.offline,
            self.partitions,
            self.topics,
            self.brokers,
            self.preferred_imbalance,
        ):
            gauge.set_function(lambda: 0)
