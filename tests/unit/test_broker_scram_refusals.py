"""AlterUserScramCredentials' per-user refusals: Kafka 2.8's checks and their precedence."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from services.broker.handlers.scram_credentials import refusals


def deletion(name: str, mechanism: int = 1) -> SimpleNamespace:
    return SimpleNamespace(name=name, mechanism=mechanism)


def upsertion(
    name: str, mechanism: int = 2, iterations: int = 4096, salt: bytes = b"s"
) -> SimpleNamespace:
    return SimpleNamespace(
        name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=b"p"
    )


def codes(deletions: list[SimpleNamespace], upsertions: list[SimpleNamespace]) -> dict[str, int]:
    return {user: error.code for user, error in refusals(deletions, upsertions).items()}


def test_each_check() -> None:
    assert codes([deletion("")], []) == {"": 93}
    assert codes([deletion("a", 0)], []) == {"a": 33}
    assert codes([], [upsertion("a", 3)]) == {"a": 33}
    assert codes([], [upsertion("a", iterations=4095)]) == {"a": 93}
    assert codes([], [upsertion("a", iterations=16385)]) == {"a": 93}
    assert codes([], [upsertion("a", salt=b"")]) == {"a": 93}
    assert codes([deletion("a", 2)], [upsertion("a", 2)]) == {"a": 92}
    assert codes([deletion("a", 1)], [upsertion("a", 2)]) == {}
    assert codes([], [upsertion("a", 1, 4096), upsertion("a", 1, 8192)]) == {"a": 92}


def test_an_upsertion_refusal_wins_over_a_deletion_refusal() -> None:
    assert codes([deletion("a", 0)], [upsertion("a", iterations=1)]) == {"a": 93}


def test_a_refused_user_is_not_also_a_duplicate() -> None:
    refused = refusals([deletion("a", 0), deletion("a", 0)], [])
    assert refused["a"].message == "Unknown SCRAM mechanism"


@given(
    st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), max_size=4),
    st.lists(
        st.tuples(st.sampled_from("ab"), st.integers(0, 3), st.integers(0, 20000)), max_size=4
    ),
)
def test_only_named_users_are_refused(
    dels: list[tuple[str, int]], ups: list[tuple[str, int, int]]
) -> None:
    deletions = [deletion(n, m) for n, m in dels]
    upsertions = [upsertion(n, m, i) for n, m, i in ups]
    refused = refusals(deletions, upsertions)
    assert set(refused) <= {n for n, _ in dels} | {n for n, _, _ in ups}
    assert {e.code for e in refused.values()} <= {33, 92, 93}
