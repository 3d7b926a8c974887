"""``/transactions/{id}`` payloads round-trip, malformed ones name their node, and the broker
reads the transaction settings under Kafka's defaults."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import CorruptZNodeError, InvalidRequestError
from pafka.transactions.ids import validate_transactional_id
from pafka.transactions.metadata import TxnMetadata
from pafka.transactions.state import TxnState
from pafka.zk.znodes import TransactionCoordinatorZNode, TransactionStateZNode, TransactionZNodes
from services.broker.settings import BrokerSettings
from services.broker.transactions.config import TransactionConfig

metadata = st.builds(
    TxnMetadata,
    transactional_id=st.just("tx"),
    producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(-1, 32767),
    last_producer_id=st.integers(-1, 2**63 - 1),
    last_producer_epoch=st.integers(-1, 32767),
    timeout_ms=st.integers(0, 2**31 - 1),
    state=st.sampled_from(TxnState),
    partitions=st.frozensets(st.tuples(st.text(min_size=1, max_size=10), st.integers(0, 99))),
    groups=st.frozensets(st.text(max_size=10)),
    start_ms=st.integers(-1, 2**50),
    last_update_ms=st.integers(-1, 2**50),
)


@given(metadata)
def test_state_round_trips(meta: TxnMetadata) -> None:
    assert TransactionStateZNode.decode("tx", TransactionStateZNode.encode(meta)) == meta


def test_empty_node_is_no_state_and_bad_ones_name_the_node() -> None:
    assert TransactionStateZNode.decode("tx", b"") is None
    for bad in (b"{", b"[]", b'{"state": "Sideways"}', b'{"state": "Empty", "partitions": 3}'):
        with pytest.raises(CorruptZNodeError, match="/transactions/tx"):
            TransactionStateZNode.decode("tx", bad)
    claim = TransactionCoordinatorZNode(2, 5)
    assert TransactionCoordinatorZNode.decode("tx", claim.encode()) == claim
    assert TransactionZNodes.coordinator_path("tx") == "/transactions/tx/coordinator"


@pytest.mark.parametrize("bad", [None, "", ".", "..", "a/b", "nul\x00", "x" * 256])
def test_ids_that_cannot_name_a_znode_are_invalid_requests(bad: str | None) -> None:
    with pytest.raises(InvalidRequestError):
        validate_transactional_id(bad)


def test_settings_defaults_are_kafkas_and_env_overrides() -> None:
    assert BrokerSettings.from_env({"PAFKA_BROKER_ID": "1"}).transactions == TransactionConfig(
        max_timeout_ms=900_000,
        id_expiration_ms=604_800_000,
        abort_timed_out_interval_ms=10_000,
        remove_expired_interval_ms=3_600_000,
    )
    got = BrokerSettings.from_env(
        {
            "PAFKA_BROKER_ID": "1",
            "PAFKA_BROKER_TRANSACTION_MAX_TIMEOUT_MS": "5000",
            "PAFKA_BROKER_TRANSACTIONAL_ID_EXPIRATION_MS": "60000",
            "PAFKA_BROKER_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "100",
            "PAFKA_BROKER_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS": "200",
        }
    ).transactions
    assert (got.max_timeout_ms, got.id_expiration_ms) == (5000, 60_000)
    assert (got.abort_timed_out_interval_ms, got.remove_expired_interval_ms) == (100, 200)
