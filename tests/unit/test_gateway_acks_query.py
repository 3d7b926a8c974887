"""A produce request's ``acks`` is read from its query string as Starlette reads it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from services.gateway.errors import RestError
from services.gateway.produce import ACKS
from services.gateway.routers.records import acks_of

# Pieces of query strings: the parameter, its values, escapes, separators, other names.
pieces = st.sampled_from(
    [b"acks", b"=", b"1", b"-1", b"all", b"&", b"%31", b"+", b"x", b"ack", b"\xc3\xa9", b";", b""]
)


def request(query: bytes) -> Request:
    return Request({"type": "http", "query_string": query, "headers": []})


def starlettes(query: bytes) -> str | None:
    """What the route read before: Starlette's parse (None: refused)."""
    acks = request(query).query_params.get("acks", "all") if query else "all"
    return acks if acks in ACKS else None


@given(st.lists(pieces, max_size=6).map(b"".join))
def test_acks_are_read_as_starlette_reads_them(query: bytes) -> None:
    try:
        found: str | None = acks_of(request(query))
    except RestError:
        found = None
    assert found == starlettes(query)


def test_the_plain_parameter_and_its_refusal() -> None:
    assert acks_of(request(b"acks=1")) == "1"
    assert acks_of(request(b"")) == "all"
    assert acks_of(request(b"other=1")) == "all"
    assert acks_of(request(b"acks=-1&acks=all")) == "all"  # the last one, as Starlette has it
    with pytest.raises(RestError, match=r"query\.acks"):
        acks_of(request(b"acks=2"))
