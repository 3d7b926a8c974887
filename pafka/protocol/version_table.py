"""The README's table of API versions: what pafka serves beside what Kafka 2.8 served.

``python -m pafka.protocol.version_table`` prints it (``--write`` puts it in README.md); a
unit test checks that the README holds exactly this output between its markers, so the table
cannot drift from :data:`~pafka.protocol.versions.SUPPORTED`.
"""

from __future__ import annotations

from pafka.protocol.versions import SUPPORTED

BEGIN_MARKER = "<!-- api-versions: python -m pafka.protocol.version_table -->"
END_MARKER = "<!-- end api-versions -->"
DASH = "\N{EN DASH}"  # between a range's ends, as the rest of the README writes ranges

# Every API a Kafka 2.8 broker (ZooKeeper mode) served to clients, by key: (name, lowest,
# highest version), from its message specs. Inter-broker APIs pafka does not serve over the
# Kafka protocol (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, AlterIsr) are
# left out; WriteTxnMarkers, which transaction coordinators send to partition leaders, is in.
KAFKA_2_8: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 0, 9),
    1: ("Fetch", 0, 12),
    2: ("ListOffsets", 0, 6),
    3: ("Metadata", 0, 11),
    8: ("OffsetCommit", 0, 8),
    9: ("OffsetFetch", 0, 7),
    10: ("FindCoordinator", 0, 3),
    11: ("JoinGroup", 0, 7),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 4),
    14: ("SyncGroup", 0, 5),
    15: ("DescribeGroups", 0, 5),
    16: ("ListGroups", 0, 4),
    17: ("SaslHandshake", 0, 1),
    18: ("ApiVersions", 0, 3),
    19: ("CreateTopics", 0, 7),
    20: ("DeleteTopics", 0, 6),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 4),
    23: ("OffsetForLeaderEpoch", 0, 4),
    24: ("AddPartitionsToTxn", 0, 3),
    25: ("AddOffsetsToTxn", 0, 3),
    26: ("EndTxn", 0, 3),
    27: ("WriteTxnMarkers", 0, 1),
    28: ("TxnOffsetCommit", 0, 3),
    29: ("DescribeAcls", 0, 2),
    30: ("CreateAcls", 0, 2),
    31: ("DeleteAcls", 0, 2),
    32: ("DescribeConfigs", 0, 4),
    33: ("AlterConfigs", 0, 2),
    34: ("AlterReplicaLogDirs", 0, 2),
    35: ("DescribeLogDirs", 0, 2),
    36: ("SaslAuthenticate", 0, 2),
    37: ("CreatePartitions", 0, 3),
    38: ("CreateDelegationToken", 0, 2),
    39: ("RenewDelegationToken", 0, 2),
    40: ("ExpireDelegationToken", 0, 2),
    41: ("DescribeDelegationToken", 0, 2),
    42: ("DeleteGroups", 0, 2),
    43: ("ElectLeaders", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1),
    45: ("AlterPartitionReassignments", 0, 0),
    46: ("ListPartitionReassignments", 0, 0),
    47: ("OffsetDelete", 0, 0),
    48: ("DescribeClientQuotas", 0, 1),
    49: ("AlterClientQuotas", 0, 1),
    50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0),
    57: ("UpdateFeatures", 0, 0),
    60: ("DescribeCluster", 0, 0),
    61: ("DescribeProducers", 0, 0),
}


def _span(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}{DASH}{high}"


def markdown() -> str:
    """The table, one row per Kafka 2.8 API, in key order, with its markers."""
    served = {int(key): versions for key, versions in SUPPORTED.items()}
    rows = [
        BEGIN_MARKER,
        "| API (key) | pafka | Kafka 2.8 |",
        "| --- | --- | --- |",
    ]
    for key, (name, low, high) in sorted(KAFKA_2_8.items()):
        mine = served.get(key)
        rows.append(
            f"| {name} ({key}) | {_span(*mine) if mine else 'not served'} | {_span(low, high)} |"
        )
    rows.append(END_MARKER)
    return "\n".join(rows) + "\n"


def rewrite(readme: str) -> str:
    """``readme`` with the text between the markers replaced by the current table."""
    start = readme.index(BEGIN_MARKER)
    end = readme.index(END_MARKER, start) + len(END_MARKER) + 1
    return readme[:start] + markdown() + readme[end:]


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if sys.argv[1:] == ["--write"]:  # regenerate the table in README.md, in place
        readme = Path("README.md")
        readme.write_text(rewrite(readme.read_text()))
    else:
        print(markdown(), end="")
