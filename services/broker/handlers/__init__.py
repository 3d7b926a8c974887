"""The Kafka API handlers, one module per family, and the table the dispatcher routes by."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pafka.protocol.messages import ApiKey
from services.broker.handlers.acls import (
    handle_create_acls,
    handle_delete_acls,
    handle_describe_acls,
)
from services.broker.handlers.admin import (
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
    handle_describe_configs,
)
from services.broker.handlers.cluster import handle_describe_cluster
from services.broker.handlers.commits import (
    handle_offset_commit,
    handle_offset_fetch,
    handle_txn_offset_commit,
)
from services.broker.handlers.configs import (
    handle_alter_configs,
    handle_incremental_alter_configs,
)
from services.broker.handlers.context import RequestContext
from services.broker.handlers.elections import handle_elect_leaders
from services.broker.handlers.fetch import handle_fetch
from services.broker.handlers.groups import (
    handle_delete_groups,
    handle_describe_groups,
    handle_find_coordinator,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_list_groups,
    handle_sync_group,
)
from services.broker.handlers.log_dirs import handle_describe_log_dirs
from services.broker.handlers.metadata import handle_metadata
from services.broker.handlers.offset_delete import handle_offset_delete
from services.broker.handlers.offsets import handle_list_offsets, handle_offset_for_leader_epoch
from services.broker.handlers.produce import handle_produce
from services.broker.handlers.producer_id import handle_init_producer_id
from services.broker.handlers.quotas import (
    handle_alter_client_quotas,
    handle_describe_client_quotas,
)
from services.broker.handlers.reassignments import (
    handle_alter_partition_reassignments,
    handle_list_partition_reassignments,
)
from services.broker.handlers.records_admin import handle_delete_records
from services.broker.handlers.scram_credentials import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from services.broker.handlers.transactions import (
    handle_add_offsets_to_txn,
    handle_add_partitions_to_txn,
    handle_end_txn,
)
from services.broker.handlers.txn_markers import handle_write_txn_markers

Handler = Callable[[RequestContext, Any], Awaitable[Any]]

HANDLERS: dict[ApiKey, Handler] = {
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.METADATA: handle_metadata,
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: handle_create_partitions,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: handle_incremental_alter_configs,
    ApiKey.DELETE_RECORDS: handle_delete_records,
    ApiKey.ELECT_LEADERS: handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: handle_list_partition_reassignments,
    ApiKey.DESCRIBE_LOG_DIRS: handle_describe_log_dirs,
    ApiKey.DESCRIBE_CLUSTER: handle_describe_cluster,
    ApiKey.TXN_OFFSET_COMMIT: handle_txn_offset_commit,
    ApiKey.ADD_PARTITIONS_TO_TXN: handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: handle_add_offsets_to_txn,
    ApiKey.END_TXN: handle_end_txn,
    ApiKey.WRITE_TXN_MARKERS: handle_write_txn_markers,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: handle_alter_client_quotas,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
    ApiKey.DESCRIBE_ACLS: handle_describe_acls,
    ApiKey.CREATE_ACLS: handle_create_acls,
    ApiKey.DELETE_ACLS: handle_delete_acls,
}
