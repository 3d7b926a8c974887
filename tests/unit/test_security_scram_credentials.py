"""Kafka's stored SCRAM credential: its string form, derivation and refusals."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import UnacceptableCredentialError, UnsupportedSaslMechanismError
from pafka.security.plain import password_matches
from pafka.security.scram_credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    InvalidScramCredentialError,
    ScramCredential,
    stored_credential,
)

# /config/users/admin as Kafka 2.7.1's kafka-configs.sh wrote it for
# --add-config 'SCRAM-SHA-256=[password=adminpwd],SCRAM-SHA-512=[password=adminpwd]'
# (published in a deployment guide; Kafka's salt is the bytes of a random base-36 string).
KAFKA_SHA512 = (
    "salt=MTcxbDF6aGNxOWgwajB2ZG1uOW83c3h6bm4=,"
    "stored_key=cmc413tGXiD7hFkdZHiVS7WzAUsC+mRQGyazJnC7S4a/w8ZrFuk/0cCsVtvWT13qob3QKJpk/pdWq2ODRMQEHw==,"
    "server_key=bcXtlsvRZGNqRBUai1TLWe2BIsOLHhTrunVt1OciDRvX2ZccDxFP7uxVZAa8NAInMkciqFyZB6KS9SxfX1XBug==,"
    "iterations=4096"
)
KAFKA_SHA256 = (
    "salt=a3N5aG4xcTRlc2JieGZ6azZzZHAxMmpmZQ==,"
    "stored_key=AWAeqyMrcJZfKwk1OD0VeKA63sd6h1IHPLBPhtpqhmg=,"
    "server_key=QR8pt51dmlL08Oqp/s2lo7YtqQXofYIN6pACn8eAdog=,"
    "iterations=4096"
)
KAFKA_PASSWORD = "adminpwd"


@pytest.mark.parametrize("text", [KAFKA_SHA512, KAFKA_SHA256])
def test_kafka_string_parsed_and_printed_back(text: str) -> None:
    credential = ScramCredential.parse(text)
    assert credential.iterations == 4096
    assert str(credential) == text


def test_kafka_tool_credential_fields() -> None:
    c512 = ScramCredential.parse(KAFKA_SHA512)
    c256 = ScramCredential.parse(KAFKA_SHA256)
    assert c512.salt == b"171l1zhcq9h0j0vdmn9o7sxznn"
    assert len(c512.stored_key) == len(c512.server_key) == 64
    assert len(c256.stored_key) == len(c256.server_key) == 32


def test_kafka_tool_credential_derives_from_its_password() -> None:
    for mechanism, text in (("SCRAM-SHA-512", KAFKA_SHA512), ("SCRAM-SHA-256", KAFKA_SHA256)):
        kafka = ScramCredential.parse(text)
        ours = ScramCredential.from_password(mechanism, KAFKA_PASSWORD, 4096, kafka.salt)
        assert ours == kafka
        assert password_matches(mechanism, kafka, KAFKA_PASSWORD)
        assert not password_matches(mechanism, kafka, KAFKA_PASSWORD + "x")


def test_rfc_7677_keys() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = ScramCredential.from_password("SCRAM-SHA-256", "pencil", 4096, salt)
    text = str(credential)
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert text.endswith(",iterations=4096")
    assert ScramCredential.parse(text) == credential


@settings(max_examples=40, deadline=None)
@given(
    mechanism=st.sampled_from(["SCRAM-SHA-256", "SCRAM-SHA-512"]),
    salt=st.binary(min_size=1, max_size=64),
    salted=st.binary(min_size=1, max_size=64),
    iterations=st.integers(MIN_ITERATIONS, MAX_ITERATIONS),
)
def test_round_trip(mechanism: str, salt: bytes, salted: bytes, iterations: int) -> None:
    credential = ScramCredential.from_salted_password(mechanism, salted, salt, iterations)
    assert ScramCredential.parse(str(credential)) == credential


def test_random_salt_each_time() -> None:
    a = ScramCredential.from_password("SCRAM-SHA-256", "secret")
    b = ScramCredential.from_password("SCRAM-SHA-256", "secret")
    assert a.salt != b.salt and a.stored_key != b.stored_key
    assert a.iterations == 4096


@pytest.mark.parametrize("iterations", [1, MIN_ITERATIONS - 1, MAX_ITERATIONS + 1])
def test_iteration_bounds(iterations: int) -> None:
    with pytest.raises(UnacceptableCredentialError):
        ScramCredential.from_password("SCRAM-SHA-256", "secret", iterations)


def test_unknown_mechanism() -> None:
    with pytest.raises(UnsupportedSaslMechanismError):
        ScramCredential.from_password("SCRAM-SHA-1", "secret")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "salt=AAAA",
        KAFKA_SHA256 + ",extra=1",
        KAFKA_SHA256.replace("iterations=4096", "iterations=many"),
        KAFKA_SHA256.replace("iterations=4096", "iterations=-4096"),
        KAFKA_SHA256.replace("salt=", "salt=!"),
        KAFKA_SHA256.replace("salt=", "salt"),
        KAFKA_SHA256 + ",salt=AAAA",
        KAFKA_SHA256.replace(",", ", "),  # kafka-configs --describe's display, not the stored form
    ],
)
def test_malformed_refused_without_quoting_keys(text: str) -> None:
    with pytest.raises(InvalidScramCredentialError) as caught:
        ScramCredential.parse(text)
    assert "AWAeqyMrcJZfKwk1" not in caught.value.message


@given(st.text(max_size=300))
def test_arbitrary_text_parses_or_raises_the_one_error(text: str) -> None:
    try:
        credential = ScramCredential.parse(text)
    except InvalidScramCredentialError:
        return
    assert ScramCredential.parse(str(credential)) == credential


def test_stored_credential_from_an_entity_config() -> None:
    config = {"SCRAM-SHA-256": KAFKA_SHA256, "producer_byte_rate": "1024"}
    assert stored_credential("SCRAM-SHA-256", config) == ScramCredential.parse(KAFKA_SHA256)
    assert stored_credential("SCRAM-SHA-512", config) is None
    assert stored_credential("SCRAM-SHA-256", None) is None
    assert stored_credential("SCRAM-SHA-256", {"SCRAM-SHA-256": "garbage"}) is None
    weak = KAFKA_SHA256.replace("iterations=4096", "iterations=100")
    assert stored_credential("SCRAM-SHA-256", {"SCRAM-SHA-256": weak}) is None
