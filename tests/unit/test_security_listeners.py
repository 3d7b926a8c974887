"""Listener configuration, registration payloads and the SASL state table (pure)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.control.messages import LiveBroker, UpdateMetadata, decode_update_metadata, encode
from pafka.errors import ConfigError, IllegalSaslStateError
from pafka.security.client_security import ClientSecurity
from pafka.security.listeners import (
    Endpoint,
    SecurityProtocol,
    advertise,
    inter_broker_listener,
    parse_listeners,
    parse_protocol_map,
)
from pafka.security.sasl_state import TRANSITIONS, SaslEvent, SaslState, transition
from pafka.security.tls import principal_of, subject_name
from pafka.zk.znodes import BrokerInfo

P = SecurityProtocol


def test_listeners_take_their_protocol_from_the_map_or_their_own_name() -> None:
    mapping = parse_protocol_map("INTERNAL:SASL_SSL, external:ssl")
    parsed = parse_listeners("INTERNAL://:9093,EXTERNAL://0.0.0.0:9094,PLAINTEXT://h:9092", mapping)
    assert parsed == (
        Endpoint("INTERNAL", P.SASL_SSL, "", 9093),
        Endpoint("EXTERNAL", P.SSL, "0.0.0.0", 9094),
        Endpoint("PLAINTEXT", P.PLAINTEXT, "h", 9092),
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "PLAINTEXT://h",
        "PLAINTEXT://h:99999",
        "h:9092",
        "UNKNOWN://h:1",
        "PLAINTEXT://a:1,PLAINTEXT://b:2",
        "BAD NAME://h:1",
    ],
)
def test_bad_listeners_are_refused_with_a_clear_error(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_listeners(text, parse_protocol_map(""))


def test_unknown_protocol_in_the_map_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown security protocol"):
        parse_protocol_map("INTERNAL:KERBEROS")


def test_advertised_listeners_default_to_the_bound_ones_with_the_host_name() -> None:
    bound = (
        Endpoint("PLAINTEXT", P.PLAINTEXT, "0.0.0.0", 9092),
        Endpoint("SSL", P.SSL, "10.0.0.5", 9093),
    )
    given_ = (Endpoint("PLAINTEXT", P.PLAINTEXT, "broker-0.example", 19092),)
    assert advertise(bound, given_, "pod-0") == (
        Endpoint("PLAINTEXT", P.PLAINTEXT, "broker-0.example", 19092),
        Endpoint("SSL", P.SSL, "10.0.0.5", 9093),
    )
    assert advertise(bound, (), "pod-0")[0].host == "pod-0"
    with pytest.raises(ConfigError, match="not among the listeners"):
        advertise(bound, (Endpoint("OTHER", P.SSL, "h", 1),), "pod-0")


def test_the_inter_broker_listener_defaults_to_plaintext_then_the_first() -> None:
    both = parse_listeners("SSL://:1,PLAINTEXT://:2", parse_protocol_map(""))
    assert inter_broker_listener(both, None) == "PLAINTEXT"
    assert inter_broker_listener(both[:1], None) == "SSL"
    assert inter_broker_listener(both, "ssl") == "SSL"
    with pytest.raises(ConfigError):
        inter_broker_listener(both, "SASL_SSL")


def test_registration_is_kafkas_and_reads_back() -> None:
    endpoints = (
        Endpoint("INTERNAL", P.SASL_SSL, "b0.internal", 9093),
        Endpoint("PLAINTEXT", P.PLAINTEXT, "b0", 9092),
    )
    info = BrokerInfo(0, "b0.internal", 9093, "http://b0:8091", "r1", 1, endpoints)
    payload = json.loads(info.encode())
    assert payload["endpoints"] == ["INTERNAL://b0.internal:9093", "PLAINTEXT://b0:9092"]
    assert payload["listener_security_protocol_map"] == {
        "INTERNAL": "SASL_SSL",
        "PLAINTEXT": "PLAINTEXT",
    }
    assert (payload["host"], payload["port"]) == ("b0", 9092)
    back = BrokerInfo.decode(0, info.encode())
    assert back.listeners == endpoints
    assert back.address("INTERNAL") == ("b0.internal", 9093)


def test_a_registration_without_plaintext_has_null_host_as_kafka_writes_it() -> None:
    endpoints = (Endpoint("SASL_SSL", P.SASL_SSL, "b1", 9094),)
    payload = json.loads(BrokerInfo(1, "b1", 9094, "", endpoints=endpoints).encode())
    assert (payload["host"], payload["port"]) == (None, -1)
    back = BrokerInfo.decode(1, json.dumps(payload).encode())
    assert (back.host, back.port) == ("b1", 9094)


def test_an_old_registration_has_one_plaintext_listener() -> None:
    old = b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    info = BrokerInfo.decode(3, old)
    assert info.listeners == (Endpoint("PLAINTEXT", P.PLAINTEXT, "h", 9092),)


def test_update_metadata_carries_every_listener() -> None:
    broker = LiveBroker(
        1,
        "h",
        9092,
        None,
        (Endpoint("PLAINTEXT", P.PLAINTEXT, "h", 9092), Endpoint("X", P.SSL, "h", 9093)),
    )
    message = UpdateMetadata(
        controller_id=1, controller_epoch=1, live_brokers=(broker,), partitions=()
    )
    (back,) = decode_update_metadata(json.loads(json.dumps(encode(message)))).live_brokers
    assert back == broker
    assert back.address("X") == ("h", 9093)
    assert LiveBroker(2, "h", 1).address("PLAINTEXT") == ("h", 1)
    assert LiveBroker(2, "h", 1).address("X") is None


def test_a_client_picks_its_listener_by_name_else_by_protocol() -> None:
    endpoints = (Endpoint("PLAINTEXT", P.PLAINTEXT, "h", 1), Endpoint("EXT", P.SASL_SSL, "h", 2))
    assert ClientSecurity().endpoint(endpoints) == endpoints[0]
    assert ClientSecurity(protocol=P.SASL_SSL).endpoint(endpoints) == endpoints[1]
    assert (
        ClientSecurity(protocol=P.SASL_SSL, listener="PLAINTEXT").endpoint(endpoints)
        == endpoints[0]
    )
    assert ClientSecurity(protocol=P.SSL).endpoint(endpoints) is None


def test_subjects_print_as_rfc_2253_most_specific_first() -> None:
    cert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "Example, Inc."),),
            (("commonName", "alice"),),
        )
    }
    assert subject_name(cert) == "CN=alice,O=Example\\, Inc.,C=DE"
    assert str(principal_of(cert)) == "User:CN=alice,O=Example\\, Inc.,C=DE"
    assert str(principal_of(None)) == "User:ANONYMOUS"


def test_sasl_walks_from_handshake_to_authenticated_and_may_reauthenticate() -> None:
    s = transition(SaslState.HANDSHAKE, SaslEvent.API_VERSIONS)
    s = transition(s, SaslEvent.HANDSHAKE_V1)
    s = transition(s, SaslEvent.AUTHENTICATE_REQUEST)
    s = transition(s, SaslEvent.MECHANISM_COMPLETE)
    assert s is SaslState.AUTHENTICATED
    s = transition(s, SaslEvent.HANDSHAKE_V1)
    assert transition(s, SaslEvent.MECHANISM_COMPLETE) is SaslState.AUTHENTICATED
    assert transition(SaslState.HANDSHAKE, SaslEvent.HANDSHAKE_V0) is SaslState.RAW_TOKENS


@given(st.sampled_from(list(SaslState)), st.sampled_from(list(SaslEvent)))
def test_no_request_is_served_before_authentication(state: SaslState, event: SaslEvent) -> None:
    if (state, event) in TRANSITIONS:
        target = transition(state, event)
        if event is SaslEvent.OTHER_REQUEST:
            assert state is target is SaslState.AUTHENTICATED
    else:
        with pytest.raises(IllegalSaslStateError):
            transition(state, event)
