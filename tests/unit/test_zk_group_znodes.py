"""The ``/consumers`` payload decoders: the formats pafka and ZooKeeper-era clients write, and
arbitrary garbage in every node kind, which must decode or raise CorruptZNodeError naming the
node, never anything else."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptZNodeError
from pafka.groups.zk_coordinated import ZkConsumers, client_host, partition_number
from pafka.zk.znodes import (
    CommittedOffsetZNode,
    GroupCoordinatorZNode,
    GroupMemberZNode,
    GroupZNode,
    PartitionOwnerZNode,
    ZkConsumerRegistration,
    decode_registration,
)
from pafka.zk.znodes import ConsumerGroupZNodes as Z

G = "g"
OFFSET_PATH = Z.offset_path(G, "t", 0)
COMMIT_PATH = Z.commit_path(G, "t", 0)

# Every node kind under /consumers/{g}: (name, path, decoder).
DECODERS: list[tuple[str, str, Callable[[bytes], object]]] = [
    ("group root", Z.group_path(G), lambda d: GroupZNode.decode(G, d)),
    ("coordinator", Z.coordinator_path(G), lambda d: GroupCoordinatorZNode.decode(G, d)),
    ("ids/*", Z.member_path(G, "m"), lambda d: decode_registration(G, "m", d)),
    (
        "owners/*/*",
        Z.owner_path(G, "t", 0),
        lambda d: PartitionOwnerZNode.decode(Z.owner_path(G, "t", 0), d),
    ),
    ("offsets/*/*", OFFSET_PATH, lambda d: CommittedOffsetZNode.decode(OFFSET_PATH, d)),
    (
        "offset_commits/*/*",
        COMMIT_PATH,
        lambda d: CommittedOffsetZNode.decode(OFFSET_PATH, b"5", COMMIT_PATH, d),
    ),
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = [
    "version",
    "broker",
    "epoch",
    "timestamp",
    "generation",
    "protocol_type",
    "protocol",
    "leader",
    "client_id",
    "client_host",
    "subscription",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "group_instance_id",
    "pattern",
    "member_id",
    "offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp",
]
# Objects with the keys our payloads use, holding values of any type: the likeliest garbage.
near_payloads = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=8).map(
    lambda d: json.dumps(d).encode()
)
garbage = st.one_of(
    st.binary(max_size=64),
    near_payloads,
    json_values.map(lambda v: json.dumps(v).encode()),
    st.integers().map(lambda i: str(i).encode()),
    st.text(max_size=40).map(str.encode),
)


@pytest.mark.parametrize(("kind", "path", "decode"), DECODERS, ids=[d[0] for d in DECODERS])
@settings(max_examples=300, deadline=None)
@given(data=garbage)
def test_garbage_decodes_or_names_the_node(
    kind: str, path: str, decode: Callable[[bytes], Any], data: bytes
) -> None:
    try:
        decode(data)
    except CorruptZNodeError as exc:
        assert exc.path == path
        assert path in str(exc)


def test_offsets_are_written_as_bare_decimal_text() -> None:
    node = CommittedOffsetZNode(1234, leader_epoch=3, metadata="m", commit_timestamp_ms=9)
    assert node.encode() == b"1234"
    assert json.loads(node.encode_commit())["offset"] == 1234
    back = CommittedOffsetZNode.decode(
        OFFSET_PATH, node.encode(), COMMIT_PATH, node.encode_commit()
    )
    assert back == node


@given(
    offset=st.integers(min_value=0, max_value=2**63 - 1),
    epoch=st.integers(min_value=-1, max_value=2**31 - 1),
    metadata=st.text(max_size=50),
)
def test_offset_round_trip(offset: int, epoch: int, metadata: str) -> None:
    node = CommittedOffsetZNode(offset, epoch, metadata, commit_timestamp_ms=1)
    assert CommittedOffsetZNode.decode(OFFSET_PATH, node.encode()).offset == offset
    assert (
        CommittedOffsetZNode.decode(OFFSET_PATH, node.encode(), COMMIT_PATH, node.encode_commit())
        == node
    )


def test_json_offsets_of_older_pafka_still_read() -> None:
    legacy = b'{"version":1,"offset":42,"leader_epoch":2,"metadata":"x","commit_timestamp":7}'
    assert CommittedOffsetZNode.decode(OFFSET_PATH, legacy) == CommittedOffsetZNode(42, 2, "x", 7)


def test_a_commit_node_left_behind_by_an_older_offset_is_ignored() -> None:
    stale = CommittedOffsetZNode(10, leader_epoch=4, metadata="old", commit_timestamp_ms=1)
    # A ZooKeeper-era client moved the offset to 25 without knowing of offset_commits/.
    found = CommittedOffsetZNode.decode(OFFSET_PATH, b"25", COMMIT_PATH, stale.encode_commit())
    assert (found.offset, found.leader_epoch, found.metadata) == (25, -1, "")


@pytest.mark.parametrize(
    "data", [b"-1", b"-5", b"99999999999999999999", b"12a", b"\xff\xfe", b"", b"1.5", b"\xb2"]
)
def test_bad_offsets_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptZNodeError, match="offsets/t/0"):
        CommittedOffsetZNode.decode(OFFSET_PATH, data)


def test_kafka_08_registration() -> None:
    data = b'{"version":1,"subscription":{"t":1,"u":2},"pattern":"static","timestamp":"1400"}'
    found = decode_registration(G, "g_host-1400-abcd", data)
    assert found == ZkConsumerRegistration("g_host-1400-abcd", ("t", "u"), "static", 1400)
    assert decode_registration(G, "c", found.encode()) == ZkConsumerRegistration(
        "c", ("t", "u"), "static", 1400
    )


def test_kafka_07_registration_is_a_topic_list() -> None:
    assert decode_registration(G, "c", b"t1,t2") == ZkConsumerRegistration("c", ("t1", "t2"))


def test_pafka_member_still_decodes() -> None:
    node = GroupMemberZNode("cid", "/h", ("t",), 10_000, 20_000, "i", 5)
    assert decode_registration(G, "m", node.encode()) == node
    assert GroupMemberZNode.decode(G, "m", node.encode()) == node


def test_member_without_session_timeout_is_corrupt_not_a_key_error() -> None:
    with pytest.raises(CorruptZNodeError, match="session_timeout_ms"):
        GroupMemberZNode.decode(G, "m", b'{"version":1,"subscription":["t"]}')


def test_owner_written_by_a_zookeeper_coordinated_client() -> None:
    path = Z.owner_path(G, "t", 0)
    owner = PartitionOwnerZNode.decode(path, b"g_host-1-abcd-0")
    assert owner == PartitionOwnerZNode("g_host-1-abcd-0", -1, zk_consumer=True)
    ours = PartitionOwnerZNode("m-1", 3)
    assert PartitionOwnerZNode.decode(path, ours.encode()) == ours


def test_zk_consumers_map_threads_to_consumers() -> None:
    reg = ZkConsumerRegistration
    consumers = ZkConsumers(
        {"g_a-1-x": reg("g_a-1-x", ("t",)), "g_a-1-x2": reg("g_a-1-x2", ("t",))},
        {("t", 0): "g_a-1-x-0", ("t", 1): "g_a-1-x2-0", ("t", 2): "gone-0"},
    )
    assert consumers.owned() == {"g_a-1-x": {("t", 0)}, "g_a-1-x2": {("t", 1)}}
    assert set(consumers.assignments()) == {"g_a-1-x", "g_a-1-x2"}
    assert client_host("g_myhost-1400-abcd1234", "g") == "/myhost"
    assert client_host("other", "g") == ""


@pytest.mark.parametrize(
    ("name", "prefixed", "expected"),
    [
        ("0", False, 0),
        ("17", True, 17),
        ("3-5", True, 5),
        ("3-5", False, None),
        ("-5", True, None),
        ("a-5", True, None),
        ("1-2-3", True, None),
        ("²", False, None),
        ("99999999999", False, None),
        ("", True, None),
    ],
)
def test_partition_names(name: str, prefixed: bool, expected: int | None) -> None:
    assert partition_number(name, broker_prefixed=prefixed) == expected


@given(name=st.text(max_size=12), prefixed=st.booleans())
def test_partition_names_never_raise(name: str, prefixed: bool) -> None:
    found = partition_number(name, broker_prefixed=prefixed)
    assert found is None or 0 <= found <= 2**31 - 1


def test_pykafka_registration_and_owner() -> None:
    """pykafka's BalancedConsumer registers with the bare topic name and owns partitions with
    its consumer id under ``{broker}-{partition}``."""
    found = decode_registration(G, "host:5f0c", b"orders")
    assert found == ZkConsumerRegistration("host:5f0c", ("orders",))
    owner = PartitionOwnerZNode.decode(Z.owner_path(G, "orders", 0), b"host:5f0c")
    consumers = ZkConsumers({"host:5f0c": found}, {("orders", 0): owner.member_id})
    assert consumers.owned() == {"host:5f0c": {("orders", 0)}}
    assert client_host("host:5f0c", G) == "/host"
