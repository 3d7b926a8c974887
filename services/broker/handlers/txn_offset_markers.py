"""WriteTxnMarkers for ``__consumer_offsets`` partitions: the markers that complete a
transaction's offsets in the group coordinator (:mod:`services.broker.groups.txn_offsets`).

:func:`offsets_marker_error` is the entry a full WriteTxnMarkers handler calls for each
``__consumer_offsets`` partition of a marker; :func:`handle_write_txn_markers` serves those
partitions alone and answers UNKNOWN_TOPIC_OR_PARTITION for any other (the partition leaders'
side of markers lives with the logs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pafka.errors import UnknownTopicOrPartitionError
from pafka.groups.offsets_partition import OFFSETS_TOPIC
from pafka.protocol.messages import response_class
from services.broker.groups.txn_offsets import complete_txn_offsets
from services.broker.handlers.context import RequestContext

if TYPE_CHECKING:
    from services.broker.broker import Broker


async def offsets_marker_error(broker: Broker, marker: Any, partition: int) -> int:
    """The error code of one ``__consumer_offsets`` partition of a WriteTxnMarkers marker."""
    return await complete_txn_offsets(
        broker,
        int(marker.producer_id),
        int(marker.producer_epoch),
        bool(marker.transaction_result),
        partition,
    )


async def handle_write_txn_markers(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    marker_cls = cls.WritableTxnMarkerResult
    topic_cls = marker_cls.WritableTxnMarkerTopicResult
    part_cls = topic_cls.WritableTxnMarkerPartitionResult
    markers = []
    for marker in request.markers:
        topics = []
        for t in marker.topics:
            parts = []
            for p in t.partition_indexes:
                if t.name == OFFSETS_TOPIC:
                    code = await offsets_marker_error(ctx.broker, marker, int(p))
                else:
                    code = UnknownTopicOrPartitionError.code
                parts.append(part_cls(partition_index=p, error_code=ctx.error(code)))
            topics.append(topic_cls(name=t.name, partitions=parts))
        markers.append(marker_cls(producer_id=marker.producer_id, topics=topics))
    return cls(markers=markers)
