"""Kafka's names for API keys and error codes in metric labels, and the shared build info."""

from __future__ import annotations

import platform
import re

import kafka.errors
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from pafka.build_info import pafka_version, register_build_info
from pafka.errors import _BY_CODE
from pafka.protocol.messages import ApiKey
from services.broker.metric_names import api_name, error_name

# Codes whose name kafka-python still spells as an older Kafka release did; Kafka's Errors enum
# now says NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, INVALID_REPLICA_ASSIGNMENT and
# UNKNOWN_SERVER_ERROR.
KAFKA_PYTHON_OUTDATED = {-1, 6, 10, 39}


def test_api_names_are_kafkas() -> None:
    assert api_name(ApiKey.PRODUCE) == "Produce"
    assert api_name(ApiKey.FETCH) == "Fetch"
    assert api_name(ApiKey.LIST_OFFSETS) == "ListOffsets"
    assert api_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert api_name(ApiKey.INIT_PRODUCER_ID) == "InitProducerId"
    assert api_name(ApiKey.API_VERSIONS) == "ApiVersions"


def test_an_api_key_pafka_does_not_know_is_named_by_its_number() -> None:
    assert api_name(9999) == "9999"


def test_error_names_are_kafkas() -> None:
    assert error_name(0) == "NONE"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(19) == "NOT_ENOUGH_REPLICAS"
    assert error_name(45) == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert error_name(56) == "KAFKA_STORAGE_ERROR"


def test_every_code_pafka_sends_matches_kafka_pythons_table_except_its_outdated_names() -> None:
    # kafka-python's table is written independently from Kafka's protocol docs: an oracle.
    for code in _BY_CODE:
        if code not in KAFKA_PYTHON_OUTDATED:
            assert error_name(code) == kafka.errors.for_code(code).message, code


def test_error_names_are_distinct_upper_snake_case() -> None:
    names = [error_name(code) for code in _BY_CODE]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Z]+(_[A-Z]+)*", n) for n in names)


@given(st.integers(min_value=-(2**15), max_value=2**15 - 1))
def test_codes_pafka_never_sends_are_named_by_their_number(code: int) -> None:
    name = error_name(code)
    if code in _BY_CODE or code == 0:
        assert not name.lstrip("-").isdigit()
    else:
        assert name == str(code)


def test_build_info_names_component_version_and_python() -> None:
    registry = CollectorRegistry()
    register_build_info(registry, "broker")
    labels = {
        "component": "broker",
        "version": pafka_version(),
        "python": platform.python_version(),
    }
    assert registry.get_sample_value("pafka_build_info", labels) == 1.0
    assert pafka_version() != "unknown"  # the test environment installs pafka


def test_build_info_needs_a_component_name() -> None:
    with pytest.raises(ValueError, match="component"):
        register_build_info(CollectorRegistry(), "")
