"""SASL/PLAIN: Kafka's parse, the password checked against the one SCRAM credential store."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from pafka.security.plain import parse_plain, plain_message
from pafka.security.sasl_mechanisms import (
    MECHANISMS,
    Authenticated,
    NeedCredentials,
    client_mechanism,
    server_mechanism,
)
from pafka.security.scram_credentials import ScramCredential
from tests.unit.test_security_scram_credentials import KAFKA_PASSWORD, KAFKA_SHA256, KAFKA_SHA512


def _cred(mechanism: str, password: str) -> str:
    return str(ScramCredential.from_password(mechanism, password))


def _login(user: str, password: str, config: dict[str, str] | None) -> Authenticated:
    client = client_mechanism("PLAIN", user, password)
    server = server_mechanism("PLAIN")
    assert server.receive(client.initial()) == NeedCredentials(user)
    done = server.provide(config)
    assert isinstance(done, Authenticated)
    assert client.receive(done.data) is None and client.complete
    return done


def _refusal(user: str, password: str, config: dict[str, str] | None) -> str:
    with pytest.raises(SaslAuthenticationFailedError) as caught:
        _login(user, password, config)
    return caught.value.message


def test_interface() -> None:
    assert MECHANISMS == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    for name in MECHANISMS:
        assert server_mechanism(name).name == name
        assert client_mechanism(name, "u", "p").name == name
    with pytest.raises(UnsupportedSaslMechanismError):
        server_mechanism("GSSAPI")
    with pytest.raises(UnsupportedSaslMechanismError):
        client_mechanism("OAUTHBEARER", "u", "p")


def test_message_as_rfc_4616() -> None:
    assert plain_message("tim", "tanstaaftanstaaf") == b"\0tim\0tanstaaftanstaaf"
    assert parse_plain(b"\0tim\0tanstaaftanstaaf") == ("tim", "tanstaaftanstaaf")
    assert parse_plain(b"tim\0tim\0pw") == ("tim", "pw")
    assert parse_plain("\0jürgen\0pässwörd".encode()) == ("jürgen", "pässwörd")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0tim", "expected 3 tokens, got 2"),
        (b"\0tim\0pw\0x", "expected 3 tokens, got 4"),
        (b"", "expected 3 tokens, got 1"),
        (b"\0\0pw", "username not specified"),
        (b"\0tim\0", "password not specified"),
        (b"bob\0tim\0pw", "authorization id that is different"),
        (b"\0tim\0\xff", "not UTF-8"),
    ],
)
def test_kafkas_refusals(token: bytes, message: str) -> None:
    server = server_mechanism("PLAIN")
    with pytest.raises(SaslAuthenticationFailedError, match=message):
        server.receive(token)
    with pytest.raises(IllegalSaslStateError):
        server.provide({})


def test_checked_against_sha512_else_sha256() -> None:
    only_256 = {"SCRAM-SHA-256": _cred("SCRAM-SHA-256", "pw256")}
    assert _login("alice", "pw256", only_256).user == "alice"
    both = {"SCRAM-SHA-512": _cred("SCRAM-SHA-512", "pw512"), **only_256}
    assert _login("alice", "pw512", both).user == "alice"
    _refusal("alice", "pw256", both)


def test_credential_made_by_kafkas_tool() -> None:
    assert _login("admin", KAFKA_PASSWORD, {"SCRAM-SHA-512": KAFKA_SHA512}).user == "admin"
    assert _login("admin", KAFKA_PASSWORD, {"SCRAM-SHA-256": KAFKA_SHA256}).user == "admin"


def test_unknown_user_and_wrong_password_look_alike() -> None:
    config = {"SCRAM-SHA-512": _cred("SCRAM-SHA-512", "secret"), "producer_byte_rate": "1"}
    wrong = _refusal("alice", "wrong", config)
    assert wrong == _refusal("alice", "secret", None)
    assert wrong == _refusal("alice", "secret", {"producer_byte_rate": "1"})
    assert wrong == _refusal("alice", "secret", {"SCRAM-SHA-512": "corrupt"})
    assert "alice" not in wrong


def test_calls_out_of_order() -> None:
    server = server_mechanism("PLAIN")
    with pytest.raises(IllegalSaslStateError):
        server.provide(None)
    server = server_mechanism("PLAIN")
    server.receive(b"\0tim\0pw")
    with pytest.raises(IllegalSaslStateError):
        server.receive(b"\0tim\0pw")
    client = client_mechanism("PLAIN", "tim", "pw")
    with pytest.raises(IllegalSaslStateError):
        client.receive(b"")
    client.initial()
    with pytest.raises(IllegalSaslStateError):
        client.initial()
    with pytest.raises(SaslAuthenticationFailedError):
        client.receive(b"unexpected")


def test_client_refuses_what_plain_cannot_carry() -> None:
    with pytest.raises(SaslAuthenticationFailedError):
        client_mechanism("PLAIN", "a\0b", "pw")
    with pytest.raises(SaslAuthenticationFailedError):
        client_mechanism("SCRAM-SHA-256", "a", "\ud800")


text = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1)


@settings(max_examples=25, deadline=None)
@given(user=text, password=text)
def test_round_trip(user: str, password: str) -> None:
    config = {"SCRAM-SHA-512": _cred("SCRAM-SHA-512", password)}
    assert _login(user, password, config).user == user


@given(st.binary(max_size=100))
def test_arbitrary_bytes_only_raise_sasl_errors(token: bytes) -> None:
    server = server_mechanism("PLAIN")
    try:
        step = server.receive(token)
    except (SaslAuthenticationFailedError, IllegalSaslStateError):
        return
    assert isinstance(step, NeedCredentials)
    with pytest.raises(SaslAuthenticationFailedError):
        server.provide(None)
