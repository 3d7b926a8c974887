"""The control APIs' shared secret: the header, the check, which paths stay open."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.control.secret import authorized, bearer_headers, presented_secret
from pafka.envconfig import Env


def test_no_secret_checks_nothing() -> None:
    assert bearer_headers(None) == {}
    assert authorized("/control/leader-and-isr", None, None)


def test_the_header_callers_send_is_accepted() -> None:
    header = bearer_headers("s3cret")["Authorization"]
    assert authorized("/control/leader-and-isr", header, "s3cret")
    assert authorized("/elect-leaders", "bearer  s3cret ", "s3cret")


@pytest.mark.parametrize("header", [None, "", "Bearer", "Bearer wrong", "Basic s3cret", "s3cret"])
def test_missing_or_wrong_secrets_are_refused(header: str | None) -> None:
    assert not authorized("/control/update-metadata", header, "s3cret")
    assert not authorized("/status", header, "s3cret")


@pytest.mark.parametrize("path", ["/livez", "/readyz", "/metrics", "/lag-history"])
def test_probes_and_metrics_stay_open(path: str) -> None:
    assert authorized(path, None, "s3cret")


@given(st.text(min_size=1).filter(lambda s: s.strip() == s and " " not in s))
def test_only_the_secret_itself_passes(token: str) -> None:
    assert presented_secret(f"Bearer {token}") == token
    assert authorized("/x", f"Bearer {token}", "the-secret") == (token == "the-secret")


def test_the_secret_setting() -> None:
    env = Env.of("PAFKA_BROKER_", {"PAFKA_BROKER_CONTROL_SECRET": "abc"})
    assert env.secret("CONTROL_SECRET") == "abc"
    assert Env.of("PAFKA_BROKER_", {}).secret("CONTROL_SECRET") is None
