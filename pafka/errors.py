"""The one exception tree of pafka.

Every error a pafka component raises on purpose is a :class:`PafkaError`. Behaviour lives on the
class, so each boundary maps errors exactly once:

* ``code``: the Kafka wire error code the broker puts in a response,
* ``http_status``: the status the gateway and the HTTP control/admin APIs answer with,
* ``retriable``: whether a client may retry the same request unchanged.

::

    PafkaError
    ├── ProtocolError            malformed frame / request; the connection is closed
    ├── BrokerConnectionError    pafka as a client lost a broker connection
    │   └── BrokerUnreachableError   ... or never had one: nothing was sent
    ├── RestError                a gateway request is unacceptable (carries a REST error code)
    ├── ConfigError              bad settings or topic configs (not on the wire)
    ├── CoordinationError        ZooKeeper trouble (session lost, node taken, ...)
    │   ├── BrokerIdTakenError
    │   ├── ControllerFencedError
    │   ├── ZkNoNodeError
    │   ├── ZkNodeExistsError
    │   ├── ZkBadVersionError
    │   └── CorruptZNodeError    a znode's payload is not what its family spells
    └── KafkaApiError            one per wire error code, see the classes below

Foreign errors (kazoo, OSError, kafka-python's codec) are translated where they enter: the ZooKeeper
bridge, the storage layer and the codec adapter respectively.
"""

from __future__ import annotations

from collections.abc import Sequence

RecordError = tuple[int, str]


class PafkaError(Exception):
    """Base of every error pafka raises on purpose."""

    code: int = -1
    http_status: int = 500
    retriable: bool = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.__class__.__doc__ or self.__class__.__name__)

    @property
    def message(self) -> str:
        return str(self)


class ProtocolError(PafkaError):
    """The peer sent bytes that are not a valid Kafka frame or request."""

    code = 42
    http_status = 400


class ConfigError(PafkaError):
    """A setting or configuration value is invalid."""

    code = 40
    http_status = 400


class CoordinationError(PafkaError):
    """ZooKeeper could not be used as required."""

    retriable = True
    http_status = 503


class BrokerIdTakenError(CoordinationError):
    """Another live broker is registered with this broker id."""

    retriable = False


class ControllerFencedError(CoordinationError):
    """This controller's epoch is no longer current; it must stop acting."""

    retriable = False


class ZkNoNodeError(CoordinationError):
    """The znode does not exist."""

    retriable = False


class ZkNodeExistsError(CoordinationError):
    """The znode already exists."""

    retriable = False


class ZkBadVersionError(CoordinationError):
    """A conditional ZooKeeper write lost: the znode changed since it was read."""

    retriable = False


class CorruptZNodeError(CoordinationError):
    """A znode holds a payload its family cannot decode (wrong type, missing key, out of range).

    Not retriable: the node stays broken until someone rewrites it. ``path`` names it, so the
    one log line and the one error of the request that met it say which node to fix.
    """

    retriable = False

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"znode {path} is malformed: {problem}")
        self.path = path


class BrokerConnectionError(PafkaError):
    """A connection to a broker failed or closed; the request may be retried elsewhere."""

    retriable = True
    http_status = 503


class BrokerUnreachableError(BrokerConnectionError):
    """No connection to the broker could be made, so nothing was sent: safe to retry."""


class RestError(PafkaError):
    """A gateway request the gateway refuses as such (bad body, wrong content type, limits).

    ``rest_code`` is the Confluent REST Proxy error code users match on (e.g. 42201 invalid
    key, 40601 format mismatch); the HTTP status is its first three digits.
    """

    def __init__(self, rest_code: int, message: str) -> None:
        super().__init__(message)
        self.rest_code = rest_code
        self.http_status = rest_code // 100


class KafkaApiError(PafkaError):
    """An error that has a Kafka wire error code.

    ``record_errors`` names the records of a refused batch, as Produce v8+ answers them
    (KIP-467): (index of the record in its batch, why it was refused).
    """

    def __init__(self, message: str = "", *, record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class UnknownServerError(KafkaApiError):
    """An unexpected server error."""

    code = -1


class OffsetMetadataTooLargeError(KafkaApiError):
    """The metadata committed with an offset is larger than the coordinator accepts."""

    code = 12
    http_status = 413


class OffsetOutOfRangeError(KafkaApiError):
    """The requested offset is not within the range of offsets kept by the server."""

    code = 1
    http_status = 416


class CorruptMessageError(KafkaApiError):
    """The record batch failed its CRC check or is otherwise corrupt."""

    code = 2
    http_status = 400
    retriable = True


class UnknownTopicOrPartitionError(KafkaApiError):
    """This server does not host this topic-partition."""

    code = 3
    http_status = 404
    retriable = True


class LeaderNotAvailableError(KafkaApiError):
    """There is no leader for this topic-partition right now."""

    code = 5
    http_status = 503
    retriable = True


class NotLeaderOrFollowerError(KafkaApiError):
    """This server is not the leader (or a follower) for that topic-partition."""

    code = 6
    http_status = 421
    retriable = True


class RequestTimedOutError(KafkaApiError):
    """The request timed out."""

    code = 7
    http_status = 504
    retriable = True


class MessageTooLargeError(KafkaApiError):
    """The record batch is larger than the topic's max.message.bytes."""

    code = 10
    http_status = 413


class StaleControllerEpochError(KafkaApiError):
    """The request came from a controller whose epoch is older than one already seen."""

    code = 11
    http_status = 409


class CoordinatorLoadInProgressError(KafkaApiError):
    """The coordinator is loading the group's state; retry shortly."""

    code = 14
    http_status = 503
    retriable = True


class CoordinatorNotAvailableError(KafkaApiError):
    """The coordinator is not available."""

    code = 15
    http_status = 503
    retriable = True


class NotCoordinatorError(KafkaApiError):
    """This is not the correct coordinator."""

    code = 16
    http_status = 421
    retriable = True


class InvalidTopicError(KafkaApiError):
    """The topic name is illegal."""

    code = 17
    http_status = 400


class NotEnoughReplicasError(KafkaApiError):
    """Fewer in-sync replicas than min.insync.replicas; the write was not appended."""

    code = 19
    http_status = 503
    retriable = True


class NotEnoughReplicasAfterAppendError(KafkaApiError):
    """The write was appended but the in-sync replicas shrank below min.insync.replicas."""

    code = 20
    http_status = 503
    retriable = True


class IllegalGenerationError(KafkaApiError):
    """The generation is not the group's current one (or the member does not own the partition)."""

    code = 22
    http_status = 409


class InconsistentGroupProtocolError(KafkaApiError):
    """The group's protocol type or protocols do not match the member's."""

    code = 23
    http_status = 409


class InvalidGroupIdError(KafkaApiError):
    """The group id is empty or not usable as a name."""

    code = 24
    http_status = 400


class UnknownMemberIdError(KafkaApiError):
    """The coordinator does not know this member id."""

    code = 25
    http_status = 404


class InvalidSessionTimeoutError(KafkaApiError):
    """The session timeout is outside the range the broker allows."""

    code = 26
    http_status = 400


class RebalanceInProgressError(KafkaApiError):
    """The group is rebalancing: rejoin."""

    code = 27
    http_status = 409


class NonEmptyGroupError(KafkaApiError):
    """The group still has members."""

    code = 68
    http_status = 409


class GroupIdNotFoundError(KafkaApiError):
    """The group does not exist."""

    code = 69
    http_status = 404


class MemberIdRequiredError(KafkaApiError):
    """Join again with the member id the coordinator assigned."""

    code = 79
    http_status = 409

    def __init__(self, member_id: str) -> None:
        super().__init__(f"join again as member {member_id}")
        self.member_id = member_id


class GroupMaxSizeReachedError(KafkaApiError):
    """The group has reached its maximum number of members."""

    code = 81
    http_status = 409


class FencedInstanceIdError(KafkaApiError):
    """Another member with the same group.instance.id has taken this one's place."""

    code = 82
    http_status = 409


class GroupSubscribedToTopicError(KafkaApiError):
    """The group's members still consume the topic, so its offsets cannot be deleted."""

    code = 86
    http_status = 409


class InvalidRequiredAcksError(KafkaApiError):
    """acks must be -1, 0 or 1."""

    code = 21
    http_status = 400


class UnsupportedVersionError(KafkaApiError):
    """The version of this API is not supported."""

    code = 35
    http_status = 400


class TopicAlreadyExistsError(KafkaApiError):
    """The topic already exists."""

    code = 36
    http_status = 409


class InvalidPartitionsError(KafkaApiError):
    """The number of partitions is invalid."""

    code = 37
    http_status = 400


class InvalidReplicationFactorError(KafkaApiError):
    """The replication factor is invalid (above the number of live brokers, or below 1)."""

    code = 38
    http_status = 400


class InvalidReplicaAssignmentError(KafkaApiError):
    """The replica assignment is invalid."""

    code = 39
    http_status = 400


class InvalidConfigError(KafkaApiError):
    """A topic configuration is invalid."""

    code = 40
    http_status = 400


class NotControllerError(KafkaApiError):
    """This is not the active controller."""

    code = 41
    http_status = 503
    retriable = True


class InvalidRequestError(KafkaApiError):
    """The request is malformed or not valid for this server."""

    code = 42
    http_status = 400


class OutOfOrderSequenceError(KafkaApiError):
    """The broker received an out of order sequence number from an idempotent producer."""

    code = 45
    http_status = 409


class DuplicateSequenceError(KafkaApiError):
    """The broker received a duplicate sequence number."""

    code = 46
    http_status = 409


class InvalidProducerEpochError(KafkaApiError):
    """The producer's epoch is older than the one the broker knows."""

    code = 47
    http_status = 409


class KafkaStorageError(KafkaApiError):
    """Disk error when trying to access the log."""

    code = 56
    http_status = 500
    retriable = True


class UnknownProducerIdError(KafkaApiError):
    """The broker has no state for this producer id."""

    code = 59
    http_status = 409


class TopicDeletionDisabledError(KafkaApiError):
    """Topic deletion is disabled."""

    code = 73
    http_status = 403


class FencedLeaderEpochError(KafkaApiError):
    """The leader epoch in the request is older than the broker's."""

    code = 74
    http_status = 409
    retriable = True


class UnknownLeaderEpochError(KafkaApiError):
    """The leader epoch in the request is newer than the broker's."""

    code = 75
    http_status = 409
    retriable = True


class UnsupportedCompressionTypeError(KafkaApiError):
    """The compression type of the batch is not supported."""

    code = 76
    http_status = 400


class PreferredLeaderNotAvailableError(KafkaApiError):
    """The preferred leader is not available."""

    code = 80
    http_status = 503
    retriable = True


class EligibleLeadersNotAvailableError(KafkaApiError):
    """No eligible replica is alive to become leader."""

    code = 83
    http_status = 503
    retriable = True


class ElectionNotNeededError(KafkaApiError):
    """The preferred replica is already the leader."""

    code = 84
    http_status = 409


class InvalidRecordError(KafkaApiError):
    """A record in the batch failed validation."""

    code = 87
    http_status = 400


class InvalidTimestampError(KafkaApiError):
    """A record's timestamp is out of the range the topic accepts, or of a type the producer
    may not set."""

    code = 32
    http_status = 400


class ReassignmentInProgressError(KafkaApiError):
    """A partition reassignment is already in progress."""

    code = 60
    http_status = 409
    retriable = True


class NoReassignmentInProgressError(KafkaApiError):
    """A cancellation named a partition that is not being reassigned."""

    code = 85
    http_status = 409


class PolicyViolationError(KafkaApiError):
    """The request parameters do not satisfy the configured policy."""

    code = 44
    http_status = 400


class UnknownTopicIdError(KafkaApiError):
    """This server does not know the topic id."""

    code = 100
    http_status = 404
    retriable = True


class FetchSessionIdNotFoundError(KafkaApiError):
    """The fetch session id is not (or no longer) in the broker's fetch session cache."""

    code = 70
    http_status = 409
    retriable = True


class InvalidFetchSessionEpochError(KafkaApiError):
    """The fetch session epoch is not the one the broker expects next."""

    code = 71
    http_status = 409
    retriable = True


# Transactions (KIP-98, KIP-447, KIP-588).


class InvalidTxnStateError(KafkaApiError):
    """The producer attempted a transactional operation in an invalid state."""

    code = 48
    http_status = 409


class InvalidProducerIdMappingError(KafkaApiError):
    """The producer id is not the one the transaction coordinator holds for its transactional
    id (or the transactional id is unknown)."""

    code = 49
    http_status = 409


class InvalidTransactionTimeoutError(KafkaApiError):
    """The transaction timeout is larger than transaction.max.timeout.ms, or not positive."""

    code = 50
    http_status = 400


class ConcurrentTransactionsError(KafkaApiError):
    """The previous transaction of this producer is still being completed."""

    code = 51
    http_status = 409
    retriable = True


class TransactionCoordinatorFencedError(KafkaApiError):
    """A newer transaction coordinator has taken over this transactional id."""

    code = 52
    http_status = 409


class TransactionalIdAuthorizationFailedError(KafkaApiError):
    """The principal may not use this transactional id."""

    code = 53
    http_status = 403


class UnstableOffsetCommitError(KafkaApiError):
    """Offsets of a transaction that has not completed yet are pending for this partition."""

    code = 88
    http_status = 409
    retriable = True


class OperationNotAttemptedError(KafkaApiError):
    """Not attempted because another part of the request failed (AddPartitionsToTxn)."""

    code = 55
    http_status = 409


class ProducerFencedError(KafkaApiError):
    """A producer with the same transactional id and a newer epoch exists (KIP-588)."""

    code = 90
    http_status = 409


# -- security (authentication, authorization, quotas) ---------------------------------------------


class TopicAuthorizationFailedError(KafkaApiError):
    """The principal may not perform the operation on the topic."""

    code = 29
    http_status = 403


class GroupAuthorizationFailedError(KafkaApiError):
    code = 30
    http_status = 403


class ClusterAuthorizationFailedError(KafkaApiError):
    code = 31
    http_status = 403


class UnsupportedSaslMechanismError(KafkaApiError):
    code = 33
    http_status = 401


class IllegalSaslStateError(KafkaApiError):
    """A SASL request that does not fit where the connection's authentication stands."""

    code = 34
    http_status = 401


class SecurityDisabledError(KafkaApiError):
    """An ACL request to a broker running without an authorizer."""

    code = 54
    http_status = 400


class SaslAuthenticationFailedError(KafkaApiError):
    """Wrong credentials, or a SASL exchange that broke off; never says which."""

    code = 58
    http_status = 401


class InvalidPrincipalTypeError(KafkaApiError):
    code = 67
    http_status = 400


class ResourceNotFoundError(KafkaApiError):
    code = 91
    http_status = 404


class ThrottlingQuotaExceededError(KafkaApiError):
    code = 89
    retriable = True
    http_status = 429


class DuplicateResourceError(KafkaApiError):
    """A request that names the same resource twice (a user's SCRAM credential, KIP-554)."""

    code = 92
    http_status = 400


class UnacceptableCredentialError(KafkaApiError):
    """A SCRAM credential the broker refuses: an empty user name, too few or many iterations."""

    code = 93
    http_status = 400


def _subclasses(cls: type[PafkaError]) -> list[type[PafkaError]]:
    found: list[type[PafkaError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


_BY_CODE: dict[int, type[KafkaApiError]] = {
    cls.code: cls for cls in _subclasses(KafkaApiError) if issubclass(cls, KafkaApiError)
}


def for_code(code: int, message: str = "") -> KafkaApiError:
    """The error a wire error code stands for (used where pafka is itself a Kafka client)."""
    return _BY_CODE.get(code, UnknownServerError)(message or f"error code {code}")


def wire_error(exc: PafkaError) -> KafkaApiError:
    """The error a Kafka response carries for ``exc``: itself where it has a wire code, else
    UNKNOWN_SERVER_ERROR with its text (an I/O or coordination failure inside the broker)."""
    return exc if isinstance(exc, KafkaApiError) else UnknownServerError(str(exc))
