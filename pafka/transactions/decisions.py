"""The transaction coordinator's decisions, as Kafka 2.8's ``TransactionCoordinator`` takes them.

Each function takes a transactional id's current state (None when ZooKeeper holds none), the
request and the time, and returns the state to write (None: nothing to write, answer success)
or raises the Kafka error to answer. The caller holds the id's lock from the decision until the
write landed, which is what Kafka's "pending transition" guards; so a second request waits for
the first instead of getting CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pafka.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
)
from pafka.groups.offsets_partition import offsets_partition
from pafka.protocol.versions import ApiKey
from pafka.transactions.metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    OFFSETS_TOPIC,
    TopicPartition,
    TxnMetadata,
    epoch_exhausted,
)
from pafka.transactions.state import TxnState

S = TxnState

# KIP-588: clients below these versions know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED.
PRODUCER_FENCED_SINCE: dict[ApiKey, int] = {
    ApiKey.INIT_PRODUCER_ID: 4,
    ApiKey.ADD_PARTITIONS_TO_TXN: 2,
    ApiKey.ADD_OFFSETS_TO_TXN: 2,
    ApiKey.END_TXN: 2,
}


def wire_error(code: int, api: ApiKey, version: int) -> int:
    """The error code a client of ``api`` at ``version`` understands (Kafka's KafkaApis)."""
    if code == ProducerFencedError.code and version < PRODUCER_FENCED_SINCE.get(api, 0):
        return InvalidProducerEpochError.code
    return code


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


def expected_producer(producer_id: int, epoch: int) -> ProducerIdAndEpoch | None:
    """InitProducerId v3+'s producer id and epoch (KIP-360): both -1 is a new producer; one
    alone is an invalid request."""
    if producer_id == NO_PRODUCER_ID and epoch == NO_PRODUCER_EPOCH:
        return None
    if producer_id == NO_PRODUCER_ID or epoch == NO_PRODUCER_EPOCH:
        raise InvalidRequestError("producer id and epoch must both be -1 or both be set")
    return ProducerIdAndEpoch(producer_id, epoch)


def check_timeout(timeout_ms: int, max_timeout_ms: int) -> None:
    if not 0 < timeout_ms <= max_timeout_ms:
        raise InvalidTransactionTimeoutError(
            f"transaction timeout {timeout_ms} ms is not in (0, {max_timeout_ms}] "
            "(transaction.max.timeout.ms)"
        )


def needs_new_producer_id(current: TxnMetadata | None, expected: ProducerIdAndEpoch | None) -> bool:
    """Whether InitProducerId will hand out a fresh producer id: a new transactional id, or an
    exhausted epoch (asked for by the holder of that epoch, or by a new producer)."""
    if current is None:
        return True
    return (
        current.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        and current.epoch_exhausted
        and (expected is None or expected.epoch == current.producer_epoch)
    )


def new_transactional_id(
    transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int
) -> TxnMetadata:
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        timeout_ms=timeout_ms,
        last_update_ms=now_ms,
    )


@dataclass(frozen=True)
class InitOutcome:
    """What InitProducerId writes; ``fenced``: an ongoing transaction is being aborted first
    (the client is answered CONCURRENT_TRANSACTIONS and retries)."""

    metadata: TxnMetadata
    fenced: bool = False


def init_producer_id(
    current: TxnMetadata,
    timeout_ms: int,
    expected: ProducerIdAndEpoch | None,
    now_ms: int,
    new_producer_id: int | None = None,
) -> InitOutcome:
    """InitProducerId with a transactional id. ``new_producer_id`` is given when
    :func:`needs_new_producer_id` said so."""

    def valid(e: ProducerIdAndEpoch) -> bool:
        return (
            current.producer_epoch == NO_PRODUCER_EPOCH
            or e.producer_id == current.producer_id
            or (e.producer_id == current.last_producer_id and epoch_exhausted(e.epoch))
        )

    if expected is not None and not valid(expected):
        raise ProducerFencedError(
            f"producer id {expected.producer_id} is not the current one of "
            f"{current.transactional_id!r}"
        )
    if current.state.completing:
        raise ConcurrentTransactionsError(
            f"the last transaction of {current.transactional_id!r} is still completing"
        )
    if current.state is S.ONGOING:
        return InitOutcome(fence(current, now_ms), fenced=True)
    if current.epoch_exhausted and (expected is None or expected.epoch == current.producer_epoch):
        if new_producer_id is None:
            raise ValueError("an exhausted epoch needs a new producer id")
        return InitOutcome(
            current.moved_to(
                S.EMPTY,
                producer_id=new_producer_id,
                producer_epoch=0,
                last_producer_id=current.producer_id,
                last_producer_epoch=(
                    current.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
                ),
                timeout_ms=timeout_ms,
                partitions=frozenset(),
                groups=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            )
        )
    bumped = current.producer_epoch + 1
    if expected is None:
        epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
    elif current.producer_epoch == NO_PRODUCER_EPOCH or expected.epoch == current.producer_epoch:
        epoch, last_epoch = bumped, current.producer_epoch
    elif expected.epoch == current.last_producer_epoch:
        # A retry of a bump whose answer was lost: the same epoch again.
        epoch, last_epoch = current.producer_epoch, current.last_producer_epoch
    else:
        raise ProducerFencedError(
            f"epoch {expected.epoch} of {current.transactional_id!r} is neither the current "
            f"({current.producer_epoch}) nor the previous one ({current.last_producer_epoch})"
        )
    return InitOutcome(
        current.moved_to(
            S.EMPTY,
            producer_epoch=epoch,
            last_producer_epoch=last_epoch,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            groups=frozenset(),
            start_ms=-1,
            last_update_ms=now_ms,
        )
    )


def fence(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """Abort an ongoing transaction under a bumped epoch, fencing its producer (a new producer
    with the same id, or the transaction timed out): Ongoing -> PrepareEpochFence ->
    PrepareAbort, as Kafka's ``prepareFenceProducerEpoch`` then ``endTransaction``."""
    if current.producer_epoch >= MAX_PRODUCER_EPOCH:
        raise InvalidTxnStateError(f"{current.transactional_id!r}: the epoch cannot be bumped")
    fencing = current.moved_to(S.PREPARE_EPOCH_FENCE, producer_epoch=current.producer_epoch + 1)
    return fencing.moved_to(
        S.PREPARE_ABORT, last_producer_epoch=NO_PRODUCER_EPOCH, last_update_ms=now_ms
    )


def _check_producer(current: TxnMetadata | None, producer_id: int, epoch: int) -> TxnMetadata:
    if current is None or current.producer_id != producer_id:
        raise InvalidProducerIdMappingError(
            f"producer id {producer_id} does not hold this transactional id"
        )
    if current.producer_epoch != epoch:
        raise ProducerFencedError(
            f"epoch {epoch} of {current.transactional_id!r} is fenced by epoch "
            f"{current.producer_epoch}"
        )
    if current.state.completing:
        raise ConcurrentTransactionsError(
            f"the last transaction of {current.transactional_id!r} is still completing"
        )
    return current


def _begin_or_extend(
    current: TxnMetadata,
    partitions: frozenset[TopicPartition],
    groups: frozenset[str],
    now_ms: int,
) -> TxnMetadata:
    starting = current.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
    return current.moved_to(
        S.ONGOING,
        partitions=current.partitions | partitions,
        groups=current.groups | groups,
        start_ms=now_ms if starting else current.start_ms,
        last_update_ms=now_ms,
    )


def add_partitions(
    current: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    partitions: Iterable[TopicPartition],
    now_ms: int,
) -> TxnMetadata | None:
    """AddPartitionsToTxn; None when every partition is in the ongoing transaction already."""
    meta = _check_producer(current, producer_id, epoch)
    wanted = frozenset(partitions)
    if meta.state is S.ONGOING and wanted <= meta.partitions:
        return None
    return _begin_or_extend(meta, wanted, frozenset(), now_ms)


def add_offsets(
    current: TxnMetadata | None, producer_id: int, epoch: int, group_id: str, now_ms: int
) -> TxnMetadata | None:
    """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction and
    the group is remembered, so its coordinator gets the marker."""
    meta = _check_producer(current, producer_id, epoch)
    tp = (OFFSETS_TOPIC, offsets_partition(group_id))
    if meta.state is S.ONGOING and tp in meta.partitions and group_id in meta.groups:
        return None
    return _begin_or_extend(meta, frozenset({tp}), frozenset({group_id}), now_ms)


def end_txn(
    current: TxnMetadata | None,
    producer_id: int,
    epoch: int,
    committed: bool,
    now_ms: int,
) -> TxnMetadata | None:
    """EndTxn from a client: the Prepare state to write before the markers go out, or None
    when a retry finds the transaction already completed that way."""
    if current is None or current.producer_id != producer_id:
        raise InvalidProducerIdMappingError(
            f"producer id {producer_id} does not hold this transactional id"
        )
    if epoch != current.producer_epoch:
        raise ProducerFencedError(
            f"epoch {epoch} of {current.transactional_id!r} is fenced by epoch "
            f"{current.producer_epoch}"
        )
    state = current.state
    wanted = "commit" if committed else "abort"
    if state is S.ONGOING:
        target = S.PREPARE_COMMIT if committed else S.PREPARE_ABORT
        return current.moved_to(target, last_update_ms=now_ms)
    if state is (S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT):
        return None
    if state is (S.PREPARE_COMMIT if committed else S.PREPARE_ABORT):
        raise ConcurrentTransactionsError(f"the {wanted} of this transaction is in progress")
    raise InvalidTxnStateError(
        f"{current.transactional_id!r} is {state.value}: there is no transaction to {wanted}"
    )


def complete(current: TxnMetadata, now_ms: int) -> TxnMetadata:
    """Every marker acknowledged: CompleteCommit or CompleteAbort, the partitions forgotten."""
    target = S.COMPLETE_COMMIT if current.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
    return current.moved_to(
        target, partitions=frozenset(), groups=frozenset(), last_update_ms=now_ms
    )


def timed_out(current: TxnMetadata, now_ms: int) -> bool:
    """An ongoing transaction older than its timeout (Kafka's ``timedOutTransactions``)."""
    return current.state is S.ONGOING and current.start_ms + current.timeout_ms < now_ms


def expired(current: TxnMetadata, now_ms: int, expiration_ms: int) -> bool:
    """A transactional id unused for ``transactional.id.expiration.ms`` with no transaction in
    flight (Kafka's ``removeExpiredTransactionalIds``)."""
    return current.state.expiration_allowed and current.last_update_ms <= now_ms - expiration_ms


def dead(current: TxnMetadata) -> TxnMetadata:
    return current.moved_to(S.DEAD, partitions=frozenset(), groups=frozenset())
