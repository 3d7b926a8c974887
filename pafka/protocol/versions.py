"""The Kafka APIs and the version ranges the broker serves.

Ranges are chosen so that every version in them is implemented fully by the handlers: Produce
v0-v2 and Fetch v0-v3 carry legacy message sets (magic 0 and 1), converted to and from the
stored v2 batches (``pafka.records.conversion``), and versions that address topics by id only
(Produce v13+, Fetch v13+) are left out. Clients pick the highest version both sides support.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_CONFIGS = 32
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    ALTER_CONFIGS = 33
    DELETE_RECORDS = 21
    DESCRIBE_LOG_DIRS = 35
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    DESCRIBE_CLUSTER = 60
    SASL_HANDSHAKE = 17
    SASL_AUTHENTICATE = 36
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51


SUPPORTED: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (0, 12),
    ApiKey.LIST_OFFSETS: (0, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (0, 8),
    ApiKey.OFFSET_FETCH: (0, 7),
    ApiKey.FIND_COORDINATOR: (0, 4),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 4),
    # Kafka 2.8 serves v0-v1; v0 is below kafka-python's specs and has no hand-written
    # reference class to check it against (BELOW_SPEC_VERSIONS), so only v1 is served.
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.DESCRIBE_ACLS: (0, 2),
    ApiKey.CREATE_ACLS: (0, 2),
    ApiKey.DELETE_ACLS: (0, 2),
}


def api_versions_response(version: int, served: Iterable[ApiKey], error_code: int = 0) -> Any:
    """The ApiVersions response body listing ``served`` APIs with their ranges."""
    from pafka.protocol.messages import response_class

    cls = response_class(ApiKey.API_VERSIONS, version)
    keys = [
        cls.ApiVersion(api_key=int(k), min_version=SUPPORTED[k][0], max_version=SUPPORTED[k][1])
        for k in sorted(served)
    ]
    return cls(error_code=error_code, api_keys=keys, throttle_time_ms=0)
