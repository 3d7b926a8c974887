"""SCRAM-SHA-256/512: RFC 7677's vector, round trips, kafka-python's client, every refusal."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient as KafkaPythonScramClient

from pafka.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from pafka.security.sasl_mechanisms import (
    Authenticated,
    Challenge,
    NeedCredentials,
    client_mechanism,
    server_mechanism,
)
from pafka.security.scram import ScramClient, ScramServer
from pafka.security.scram_credentials import ScramCredential
from pafka.security.scram_messages import escape_name, unescape_name
from tests.unit.test_security_scram_credentials import KAFKA_PASSWORD, KAFKA_SHA256, KAFKA_SHA512

SASL_ERRORS = (SaslAuthenticationFailedError, IllegalSaslStateError)
MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]

# RFC 7677 §3
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _config(mechanism: str, password: str, iterations: int = 4096) -> dict[str, str]:
    return {
        mechanism: str(ScramCredential.from_password(mechanism, password, iterations)),
        "consumer_byte_rate": "2048",
    }


def _rfc_config() -> dict[str, str]:
    credential = ScramCredential.from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT)
    return {"SCRAM-SHA-256": str(credential)}


def _exchange(
    mechanism: str, user: str, password: str, config: dict[str, str] | None
) -> tuple[Authenticated, bool]:
    """Run our client against our server; the server's outcome and the client's completion."""
    client = client_mechanism(mechanism, user, password)
    server = server_mechanism(mechanism)
    assert server.receive(client.initial()) == NeedCredentials(user)
    challenge = server.provide(config)
    assert isinstance(challenge, Challenge)
    final = client.receive(challenge.data)
    assert final is not None
    done = server.receive(final)
    assert isinstance(done, Authenticated)
    assert client.receive(done.data) is None
    return done, client.complete


def _first_two(mechanism: str, server: ScramServer | None = None) -> tuple[ScramServer, bytes]:
    """A server waiting for the client-final of user 'alice' (password 'secret')."""
    server = server or ScramServer(mechanism)
    client = ScramClient(mechanism, "alice", "secret")
    server.receive(client.initial())
    challenge = server.provide(_config(mechanism, "secret"))
    assert isinstance(challenge, Challenge)
    final = client.receive(challenge.data)
    assert final is not None
    return server, final


# -- RFC 7677's test vector ---------------------------------------------------------------------


def test_rfc_7677_client() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    assert client.initial() == RFC_CLIENT_FIRST
    assert client.receive(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.complete
    assert client.receive(RFC_SERVER_FINAL) is None
    assert client.complete


def test_rfc_7677_server() -> None:
    server = ScramServer("SCRAM-SHA-256", nonce=lambda: RFC_SERVER_NONCE)
    assert server.receive(RFC_CLIENT_FIRST) == NeedCredentials("user")
    assert server.provide(_rfc_config()) == Challenge(RFC_SERVER_FIRST)
    assert server.receive(RFC_CLIENT_FINAL) == Authenticated("user", RFC_SERVER_FINAL)


# -- round trips --------------------------------------------------------------------------------

users = st.text(
    st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=20
) | st.sampled_from(["a,b", "=", "x=2Cy", ",=,", "=3D"])


@settings(max_examples=30, deadline=None)
@given(mechanism=st.sampled_from(MECHANISMS), user=users, password=st.text(max_size=30))
def test_round_trip(mechanism: str, user: str, password: str) -> None:
    done, complete = _exchange(mechanism, user, password, _config(mechanism, password))
    assert done.user == user
    assert done.data.startswith(b"v=")
    assert complete


@given(st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1))
def test_escaping_round_trips(name: str) -> None:
    escaped = escape_name(name)
    assert "," not in escaped
    assert unescape_name(escaped) == name


def test_escaping_as_rfc_5802() -> None:
    assert escape_name("a,b=c") == "a=2Cb=3Dc"
    for bad in ["", "a=", "a=2", "a=2D", "=", "a\0b"]:
        with pytest.raises(SaslAuthenticationFailedError):
            unescape_name(bad)


@pytest.mark.parametrize(
    ("mechanism", "text"), [("SCRAM-SHA-512", KAFKA_SHA512), ("SCRAM-SHA-256", KAFKA_SHA256)]
)
def test_credential_made_by_kafkas_tool(mechanism: str, text: str) -> None:
    done, complete = _exchange(mechanism, "admin", KAFKA_PASSWORD, {mechanism: text})
    assert done.user == "admin" and complete


# -- cross-implementation -----------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_client_against_our_server(mechanism: str) -> None:
    theirs = KafkaPythonScramClient("bob", "hunter2 ☃", mechanism)
    server = server_mechanism(mechanism)
    assert server.receive(theirs.first_message()) == NeedCredentials("bob")
    challenge = server.provide(_config(mechanism, "hunter2 ☃"))
    assert isinstance(challenge, Challenge)
    theirs.process_server_first_message(challenge.data)
    done = server.receive(theirs.final_message())
    assert isinstance(done, Authenticated) and done.user == "bob"
    theirs.process_server_final_message(done.data)  # raises on a wrong server signature


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_client_with_a_wrong_password(mechanism: str) -> None:
    theirs = KafkaPythonScramClient("bob", "wrong", mechanism)
    server = server_mechanism(mechanism)
    server.receive(theirs.first_message())
    challenge = server.provide(_config(mechanism, "right"))
    assert isinstance(challenge, Challenge)
    theirs.process_server_first_message(challenge.data)
    with pytest.raises(SaslAuthenticationFailedError):
        server.receive(theirs.final_message())


class _RfcServer:
    """A SCRAM server written from RFC 5802's formulas with hashlib and kafka-python's
    salted-password derivation, independent of pafka's server."""

    def __init__(self, digest: str, password: str) -> None:
        self.digest = digest
        self.salt = b"independent salt"
        helper = KafkaPythonScramClient("x", password, f"SCRAM-{digest.upper()[:3]}-{digest[3:]}")
        helper.create_salted_password(self.salt, 4096)
        salted = helper.salted_password
        self.stored_key = hashlib.new(digest, self._hmac(salted, b"Client Key")).digest()
        self.server_key = self._hmac(salted, b"Server Key")

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.digest).digest()

    def first(self, client_first: bytes) -> bytes:
        self.bare = client_first.removeprefix(b"n,,")
        nonce = dict(kv.split(b"=", 1) for kv in self.bare.split(b","))[b"r"]
        self.server_first = b"r=" + nonce + b"srv,s=" + base64.b64encode(self.salt) + b",i=4096"
        return self.server_first

    def final(self, client_final: bytes) -> bytes:
        without_proof, _, proof = client_final.rpartition(b",p=")
        auth = self.bare + b"," + self.server_first + b"," + without_proof
        signature = self._hmac(self.stored_key, auth)
        client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature, strict=True))
        if hashlib.new(self.digest, client_key).digest() != self.stored_key:
            return b"e=invalid-proof"
        return b"v=" + base64.b64encode(self._hmac(self.server_key, auth))


@pytest.mark.parametrize(
    ("mechanism", "digest"), [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")]
)
def test_our_client_against_an_independent_server(mechanism: str, digest: str) -> None:
    theirs = _RfcServer(digest, "pässword")
    client = client_mechanism(mechanism, "carol", "pässword")
    final = client.receive(theirs.first(client.initial()))
    assert final is not None
    assert client.receive(theirs.final(final)) is None
    assert client.complete


def test_our_client_reads_a_server_error() -> None:
    theirs = _RfcServer("sha256", "right")
    client = client_mechanism("SCRAM-SHA-256", "carol", "wrong")
    final = client.receive(theirs.first(client.initial()))
    assert final is not None
    with pytest.raises(SaslAuthenticationFailedError, match="invalid-proof"):
        client.receive(theirs.final(final))
    assert not client.complete


# -- refusals -----------------------------------------------------------------------------------


def _failure(mechanism: str, password: str, config: dict[str, str] | None) -> str:
    with pytest.raises(SaslAuthenticationFailedError) as caught:
        _exchange(mechanism, "alice", password, config)
    return caught.value.message


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_unknown_user_and_wrong_password_look_alike(mechanism: str) -> None:
    wrong = _failure(mechanism, "wrong", _config(mechanism, "secret"))
    unknown = _failure(mechanism, "secret", None)
    no_credential = _failure(mechanism, "secret", {"producer_byte_rate": "1"})
    other_mechanism = _failure(
        mechanism, "secret", _config(next(m for m in MECHANISMS if m != mechanism), "secret")
    )
    assert wrong == unknown == no_credential == other_mechanism
    assert "alice" not in wrong


def test_unknown_user_gets_a_stable_decoy_salt() -> None:
    def salt() -> bytes:
        server = ScramServer("SCRAM-SHA-256")
        server.receive(b"n,,n=nobody,r=abc")
        step = server.provide(None)
        assert isinstance(step, Challenge)
        return step.data.split(b",")[1]

    assert salt() == salt()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_tampered_proof(mechanism: str) -> None:
    server, final = _first_two(mechanism)
    without, _, proof = final.rpartition(b",p=")
    raw = bytearray(base64.b64decode(proof))
    raw[0] ^= 1
    with pytest.raises(SaslAuthenticationFailedError):
        server.receive(without + b",p=" + base64.b64encode(bytes(raw)))


def test_short_proof() -> None:
    server, final = _first_two("SCRAM-SHA-256")
    without, _, _ = final.rpartition(b",p=")
    with pytest.raises(SaslAuthenticationFailedError):
        server.receive(without + b",p=" + base64.b64encode(b"short"))


def test_wrong_nonce() -> None:
    server, final = _first_two("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationFailedError, match="nonce"):
        server.receive(final.replace(b",r=", b",r=X", 1))


def test_channel_binding_must_repeat_the_gs2_header() -> None:
    server, final = _first_two("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationFailedError, match="channel binding"):
        server.receive(final.replace(b"c=biws", b"c=" + base64.b64encode(b"y,,"), 1))


@pytest.mark.parametrize(
    "first",
    [
        b"p=tls-unique,,n=alice,r=abc",
        b"y,,n=alice,r=abc",
        b"n,,m=ext,n=alice,r=abc",
        b"n,,n=alice,r=abc,tokenauth=true",
        b"n,,n=alice,r=",
        b"n,,n=alice,r=a\x7fb",
        b"n,,n=,r=abc",
        b"n,,r=abc,n=alice",
        b"n,a=bob,n=alice,r=abc",
        b"n,,n=al=ice,r=abc",
        b"n,,n=alice",
        b"n,",
        b"",
        b"\xff\xfe",
    ],
)
def test_client_first_refused(first: bytes) -> None:
    server = ScramServer("SCRAM-SHA-256")
    with pytest.raises(SaslAuthenticationFailedError):
        server.receive(first)
    with pytest.raises(IllegalSaslStateError):
        server.provide(None)


def test_authzid_equal_to_user_and_other_extensions_accepted() -> None:
    server = ScramServer("SCRAM-SHA-256")
    assert server.receive(b"n,a=a=2Cb,n=a=2Cb,r=abc,foo=bar") == NeedCredentials("a,b")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_calls_out_of_order(mechanism: str) -> None:
    server = server_mechanism(mechanism)
    with pytest.raises(IllegalSaslStateError):
        server.provide(None)
    with pytest.raises(IllegalSaslStateError):  # a failed exchange stays failed
        server.receive(b"n,,n=alice,r=abc")
    server = server_mechanism(mechanism)
    server.receive(b"n,,n=alice,r=abc")
    with pytest.raises(IllegalSaslStateError):
        server.receive(b"n,,n=alice,r=abc")
    done_server, final = _first_two(mechanism)
    done_server.receive(final)
    with pytest.raises(IllegalSaslStateError):
        done_server.receive(final)
    client = client_mechanism(mechanism, "alice", "secret")
    with pytest.raises(IllegalSaslStateError):
        client.receive(b"r=x,s=AAAA,i=4096")
    client = client_mechanism(mechanism, "alice", "secret")
    client.initial()
    with pytest.raises(IllegalSaslStateError):
        client.initial()


@pytest.mark.parametrize(
    "server_first",
    [
        b"r=OTHER,s=AAAA,i=4096",  # does not extend the client's nonce
        b"r=CNONCE,s=AAAA,i=4096",  # extends it by nothing
        b"r=CNONCEx,s=AAAA,i=4095",
        b"r=CNONCEx,s=AAAA,i=99999999999",
        b"r=CNONCEx,s=AAAA,i=-1",
        b"r=CNONCEx,s=!!!!,i=4096",
        b"r=CNONCEx,s=AAAA",
        b"m=x,r=CNONCEx,s=AAAA,i=4096",
        b"e=other-error",
    ],
)
def test_client_refuses_a_bad_server_first(server_first: bytes) -> None:
    client = ScramClient("SCRAM-SHA-256", "alice", "secret", nonce=lambda: "CNONCE")
    client.initial()
    with pytest.raises(SaslAuthenticationFailedError):
        client.receive(server_first)
    assert not client.complete


def test_client_refuses_a_wrong_server_signature() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    client.initial()
    client.receive(RFC_SERVER_FIRST)
    with pytest.raises(SaslAuthenticationFailedError):
        client.receive(b"v=" + base64.b64encode(b"\0" * 32))
    with pytest.raises(IllegalSaslStateError):
        client.receive(RFC_SERVER_FINAL)


# -- arbitrary and truncated tokens ----------------------------------------------------------------


def _only_sasl_errors(call: Callable[[], object]) -> object:
    try:
        return call()
    except SASL_ERRORS:
        return None


@given(st.binary(max_size=200), st.sampled_from(MECHANISMS))
def test_arbitrary_client_first(token: bytes, mechanism: str) -> None:
    server = server_mechanism(mechanism)
    step = _only_sasl_errors(lambda: server.receive(token))
    assert step is None or isinstance(step, NeedCredentials)


@settings(deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_client_final(token: bytes) -> None:
    server, _ = _first_two("SCRAM-SHA-256", ScramServer("SCRAM-SHA-256"))
    assert _only_sasl_errors(lambda: server.receive(token)) is None


@settings(deadline=None, max_examples=50)
@given(st.binary(max_size=120), st.binary(max_size=120))
def test_arbitrary_server_messages(first: bytes, final: bytes) -> None:
    client = ScramClient("SCRAM-SHA-256", "alice", "secret", nonce=lambda: "N")
    client.initial()
    if _only_sasl_errors(lambda: client.receive(first)) is not None:
        _only_sasl_errors(lambda: client.receive(final))
    assert not client.complete


def test_every_truncation_of_the_rfc_exchange() -> None:
    for cut in range(len(RFC_CLIENT_FIRST)):
        server = ScramServer("SCRAM-SHA-256")
        step = _only_sasl_errors(functools.partial(server.receive, RFC_CLIENT_FIRST[:cut]))
        assert step is None or isinstance(step, NeedCredentials)
    for cut in range(len(RFC_CLIENT_FINAL)):
        server = ScramServer("SCRAM-SHA-256", nonce=lambda: RFC_SERVER_NONCE)
        server.receive(RFC_CLIENT_FIRST)
        server.provide(_rfc_config())
        with pytest.raises(SaslAuthenticationFailedError):
            server.receive(RFC_CLIENT_FINAL[:cut])
    for cut in range(len(RFC_SERVER_FIRST)):
        client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
        client.initial()
        _only_sasl_errors(functools.partial(client.receive, RFC_SERVER_FIRST[:cut]))
        assert not client.complete
