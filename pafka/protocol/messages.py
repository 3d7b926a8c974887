"""The one adapter between pafka and kafka-python's generated Kafka message classes.

kafka-python 3.x generates a class per request and response from Kafka's own JSON message
specs, for every version and both the classic and flexible (compact, tagged) encodings. pafka
uses them as its message model and keeps every kafka-python detail in this module: handlers get
a request body object and build a response with :func:`response_class`, nothing more.

A request frame is ``api_key int16 | api_version int16 | correlation_id int32 | client_id`` then
the body; the first three fields are peeked with one struct so that even an undecodable request
can be answered (ApiVersions) or logged with its correlation id.

Old versions: kafka-python's specs come from Kafka 4, which declares the versions it removed
(KIP-896) invalid, yet keeps their fields (ListOffsets v0's ``max_num_offsets`` and
``old_style_offsets``, OffsetCommit v1's ``commit_timestamp``, DescribeConfigs v0's
``is_default``, ...), and kafka-python reads and writes every version from 0. So the same
classes serve the versions Kafka 2.8 still served, with the same attribute names for handlers;
:data:`BELOW_SPEC_VERSIONS` lists them, and the unit tests check each, field by field and byte
for byte, against kafka-python's hand-written classes of those versions
(``kafka/protocol/old``), so a kafka-python release that drops the fields fails there, not in
production.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.consumer import (
    FetchRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from pafka.errors import InvalidRequestError, ProtocolError, UnsupportedVersionError
from pafka.protocol.fetch_codec import FetchResponseBody, decode_fetch_request
from pafka.protocol.produce_codec import ProduceResponseBody, decode_produce_request
from pafka.protocol.versions import SUPPORTED, ApiKey
from pafka.protocol.wire import Buffer
from pafka.storage.region import FileRegion

# A non-flexible request header (v1): api_key, api_version, correlation_id, client_id's length.
_REQUEST_HEADER = struct.Struct(">hhih")
_FRAME_SIZE = struct.Struct(">i")

HEADER_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id
# A response frame: one buffer, or its pieces in order (written together, not joined).
EncodedResponse = bytearray | list[Buffer | FileRegion]
_FAST_DECODERS: dict[ApiKey, Callable[[memoryview, int], tuple[str | None, Any]]] = {
    ApiKey.PRODUCE: decode_produce_request,
    ApiKey.FETCH: decode_fetch_request,
}

# Kafka 2.8's versions below what the generated specs declare valid, by API key (an int: some
# of these APIs may not be served yet). Produce and Fetch are decoded by hand, so not listed.
BELOW_SPEC_VERSIONS: dict[int, range] = {
    ApiKey.LIST_OFFSETS: range(0, 1),
    ApiKey.OFFSET_COMMIT: range(0, 2),
    ApiKey.OFFSET_FETCH: range(0, 1),
    ApiKey.CREATE_TOPICS: range(0, 2),
    ApiKey.DELETE_TOPICS: range(0, 1),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: range(0, 2),
    ApiKey.DESCRIBE_CONFIGS: range(0, 1),
    35: range(0, 1),  # DescribeLogDirs
    ApiKey.WRITE_TXN_MARKERS: range(0, 1),
    ApiKey.DESCRIBE_ACLS: range(0, 1),
    ApiKey.CREATE_ACLS: range(0, 1),
    ApiKey.DELETE_ACLS: range(0, 1),
}

_REQUESTS: dict[ApiKey, Any] = {
    ApiKey.PRODUCE: ProduceRequest,
    ApiKey.FETCH: FetchRequest,
    ApiKey.LIST_OFFSETS: ListOffsetsRequest,
    ApiKey.METADATA: MetadataRequest,
    ApiKey.OFFSET_COMMIT: OffsetCommitRequest,
    ApiKey.OFFSET_FETCH: OffsetFetchRequest,
    ApiKey.FIND_COORDINATOR: FindCoordinatorRequest,
    ApiKey.JOIN_GROUP: JoinGroupRequest,
    ApiKey.HEARTBEAT: HeartbeatRequest,
    ApiKey.LEAVE_GROUP: LeaveGroupRequest,
    ApiKey.SYNC_GROUP: SyncGroupRequest,
    ApiKey.DESCRIBE_GROUPS: DescribeGroupsRequest,
    ApiKey.LIST_GROUPS: ListGroupsRequest,
    ApiKey.API_VERSIONS: ApiVersionsRequest,
    ApiKey.CREATE_TOPICS: CreateTopicsRequest,
    ApiKey.DELETE_TOPICS: DeleteTopicsRequest,
    ApiKey.INIT_PRODUCER_ID: InitProducerIdRequest,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: OffsetForLeaderEpochRequest,
    ApiKey.ADD_PARTITIONS_TO_TXN: AddPartitionsToTxnRequest,
    ApiKey.ADD_OFFSETS_TO_TXN: AddOffsetsToTxnRequest,
    ApiKey.END_TXN: EndTxnRequest,
    ApiKey.WRITE_TXN_MARKERS: WriteTxnMarkersRequest,
    ApiKey.TXN_OFFSET_COMMIT: TxnOffsetCommitRequest,
    ApiKey.DESCRIBE_CONFIGS: DescribeConfigsRequest,
    ApiKey.CREATE_PARTITIONS: CreatePartitionsRequest,
    ApiKey.DELETE_GROUPS: DeleteGroupsRequest,
    ApiKey.OFFSET_DELETE: OffsetDeleteRequest,
    ApiKey.ALTER_CONFIGS: AlterConfigsRequest,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: IncrementalAlterConfigsRequest,
    ApiKey.DELETE_RECORDS: DeleteRecordsRequest,
    ApiKey.ELECT_LEADERS: ElectLeadersRequest,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: AlterPartitionReassignmentsRequest,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ListPartitionReassignmentsRequest,
    ApiKey.DESCRIBE_LOG_DIRS: DescribeLogDirsRequest,
    ApiKey.DESCRIBE_CLUSTER: DescribeClusterRequest,
    ApiKey.SASL_HANDSHAKE: SaslHandshakeRequest,
    ApiKey.SASL_AUTHENTICATE: SaslAuthenticateRequest,
    ApiKey.DESCRIBE_ACLS: DescribeAclsRequest,
    ApiKey.CREATE_ACLS: CreateAclsRequest,
    ApiKey.DELETE_ACLS: DeleteAclsRequest,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: DescribeClientQuotasRequest,
    ApiKey.ALTER_CLIENT_QUOTAS: AlterClientQuotasRequest,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: DescribeUserScramCredentialsRequest,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AlterUserScramCredentialsRequest,
}

__all__ = [
    "BELOW_SPEC_VERSIONS",
    "ApiKey",
    "EncodedResponse",
    "Request",
    "RequestHeader",
    "UnsupportedRequestError",
    "decode_request",
    "encode_response",
    "request_class",
    "response_class",
]


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(frozen=True)
class Request:
    header: RequestHeader
    body: Any


class UnsupportedRequestError(UnsupportedVersionError):
    """An API or version the broker does not serve; carries the header so it can be answered."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header


def request_class(api_key: ApiKey) -> Any:
    return _REQUESTS[api_key]


def response_class(api_key: int, version: int) -> Any:
    """The response class of ``api_key`` at ``version``; nested structs are its attributes."""
    request = _REQUESTS[ApiKey(api_key)]
    header = _HeaderKey(api_key, version)
    cls = ResponseClassRegistry.get_response_class(header)
    if cls is None:
        raise UnsupportedVersionError(f"no response schema for {request.name} v{version}")
    return cls


@dataclass(frozen=True)
class _HeaderKey:
    """What kafka-python's response registry looks up by."""

    request_api_key: int
    request_api_version: int


def peek_header(frame: bytes | memoryview) -> RequestHeader:
    if len(frame) < HEADER_PREFIX.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = HEADER_PREFIX.unpack_from(frame, 0)
    return RequestHeader(api_key, api_version, correlation_id)


def decode_request(frame: bytes | memoryview, served: frozenset[ApiKey] | None = None) -> Request:
    """Decode one request frame (without its size prefix).

    Raises :class:`UnsupportedRequestError` for an API or version outside ``SUPPORTED`` (or
    outside ``served``) and :class:`ProtocolError` for bytes that do not decode.
    """
    peeked = peek_header(frame)
    try:
        key = ApiKey(peeked.api_key)
    except ValueError:
        raise UnsupportedRequestError(peeked, f"unknown API key {peeked.api_key}") from None
    low, high = SUPPORTED[key]
    if (served is not None and key not in served) or not low <= peeked.api_version <= high:
        raise UnsupportedRequestError(
            peeked, f"{key.name} v{peeked.api_version} is not served (versions {low}-{high})"
        )
    fast = _FAST_DECODERS.get(key)
    if fast is not None:
        # The write and read paths, decoded by hand; produced records stay views into the frame.
        client_id, fast_body = fast(memoryview(frame), peeked.api_version)
        return Request(
            RequestHeader(peeked.api_key, peeked.api_version, peeked.correlation_id, client_id),
            fast_body,
        )
    try:
        body = _REQUESTS[key].decode(bytes(frame), version=peeked.api_version, header=True)
    except Exception as exc:  # kafka-python raises many types for malformed input
        raise ProtocolError(
            f"malformed {key.name} v{peeked.api_version} request: {type(exc).__name__}: {exc}"
        ) from exc
    client_id = getattr(body.header, "client_id", None)
    header = RequestHeader(peeked.api_key, peeked.api_version, peeked.correlation_id, client_id)
    return Request(header, body)


def encode_response(
    header: RequestHeader, body: Any, version: int | None = None
) -> EncodedResponse:
    """Frame a response (size, response header, body) at the request's version: one buffer,
    or for a Fetch response, the pieces of the frame in order (its record sets not copied)."""
    # The hot paths' responses encode themselves (checked against the generic codec).
    if isinstance(body, FetchResponseBody):
        return body.encode_parts(
            header.api_version if version is None else version, header.correlation_id
        )
    if isinstance(body, ProduceResponseBody):
        return body.encode_frame(
            header.api_version if version is None else version, header.correlation_id
        )
    # The version must be set before the header: kafka-python copies it into request headers.
    body.API_VERSION = header.api_version if version is None else version
    body.with_header(correlation_id=header.correlation_id)
    encoded: bytearray = body.encode(header=True, framed=True)
    return encoded


def encode_request(
    api_key: ApiKey, version: int, body: Any, correlation_id: int, client_id: str
) -> bytes:
    """Frame a request, for the places where a broker is itself a client (replication).
    ``body`` may be bytes already written by hand (:mod:`pafka.protocol.fetch_request`), for a
    version whose header is not flexible."""
    if isinstance(body, bytes):
        client = client_id.encode()
        header = _REQUEST_HEADER.pack(api_key, version, correlation_id, len(client))
        size = len(header) + len(client) + len(body)
        # One join: a Produce's body is its record batches, copied once more here at most.
        return b"".join((_FRAME_SIZE.pack(size), header, client, body))
    body.API_VERSION = version
    body.with_header(correlation_id=correlation_id, client_id=client_id)
    try:
        return bytes(body.encode(header=True, framed=True))
    except (struct.error, OverflowError) as exc:
        # A number outside its wire type: the caller's input, not a codec failure.
        raise InvalidRequestError(
            f"{api_key.name} v{version}: a value is out of range: {exc}"
        ) from exc


def decode_response(api_key: ApiKey, version: int, frame: bytes | memoryview) -> Any:
    """Decode a response frame (without its size prefix); ProtocolError when it does not."""
    try:
        return response_class(api_key, version).decode(bytes(frame), version=version, header=True)
    except Exception as exc:
        raise ProtocolError(f"malformed {api_key.name} v{version} response: {exc}") from exc
