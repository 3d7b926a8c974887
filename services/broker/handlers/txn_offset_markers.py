"""WriteTxnMarkers for ``__consumer_offsets`` partitions: the markers that complete a
transaction's offsets in the group coordinator (:mod:`services.broker.groups.txn_offsets`).

:func:`offsets_marker_error` is what the WriteTxnMarkers handler (:mod:`.txn_markers`) calls
for each ``__consumer_offsets`` partition of a marker, instead of appending to a log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from services.broker.groups.txn_offsets import complete_txn_offsets

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
