"""The controller's event queue: priority classes, folding, bounded size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from services.controller.event_queue import PRIORITY, Event, EventQueue, Priority, key


def drain(queue: EventQueue) -> list[Event]:
    events = []
    while (event := queue.pop()) is not None:
        events.append(event)
    return events


def test_a_broker_change_overtakes_thousands_of_isr_events_which_fold_into_one() -> None:
    queue = EventQueue()
    for _ in range(3000):
        queue.put(Event("isr"))
    queue.put(Event("topics", ["a"]))
    queue.put(Event("brokers", ["1", "2"]))
    assert [e.kind for e in drain(queue)] == ["brokers", "topics", "isr"]


def test_a_later_broker_list_supersedes_the_queued_one_in_its_place() -> None:
    queue = EventQueue()
    queue.put(Event("brokers", ["1", "2", "3"], generation=1))
    queue.put(Event("shutdown", (2, ("w1",)), generation=1))
    queue.put(Event("brokers", ["1", "3"], generation=2))
    first, second = drain(queue)
    assert first == Event("brokers", ["1", "3"], generation=2)
    assert second.kind == "shutdown"


def test_controlled_shutdowns_of_one_broker_fold_keeping_every_waiter() -> None:
    queue = EventQueue()
    queue.put(Event("shutdown", (2, ("first",)), generation=1))
    queue.put(Event("shutdown", (3, ("other",)), generation=1))
    queue.put(Event("shutdown", (2, ("second",)), generation=2))
    assert drain(queue) == [
        Event("shutdown", (2, ("first", "second")), generation=2),
        Event("shutdown", (3, ("other",)), generation=1),
    ]


def test_periodic_preferred_checks_fold_and_requests_accumulate_separately() -> None:
    queue = EventQueue()
    queue.put(Event("preferred", None))
    queue.put(Event("preferred", [("a", 0)]))
    queue.put(Event("preferred", None))
    queue.put(Event("preferred", [("a", 0), ("b", 1)]))
    assert drain(queue) == [
        Event("preferred", None),
        Event("preferred", [("a", 0), ("b", 1)]),
    ]


def test_topic_data_folds_per_topic() -> None:
    queue = EventQueue()
    queue.put(Event("topic_data", ("a", b"1")))
    queue.put(Event("topic_data", ("b", b"1")))
    queue.put(Event("topic_data", ("a", b"2")))
    assert [e.payload for e in drain(queue)] == [("a", b"2"), ("b", b"1")]


def test_operator_requests_never_fold_each_keeps_its_waiter() -> None:
    queue = EventQueue()
    first, second = object(), object()
    queue.put(Event("elect_leaders", (0, None, first)))
    queue.put(Event("elect_leaders", (0, None, second)))
    queue.put(Event("alter_reassignments", ({}, first)))
    assert [e.payload[-1] for e in drain(queue)] == [first, second, first]


def events() -> st.SearchStrategy[Event]:
    topics = st.sampled_from(["a", "b", "c"])
    payloads = {
        "elect": st.none(),
        "isr": st.none(),
        "brokers": st.lists(st.sampled_from(["1", "2", "3"]), unique=True),
        "topics": st.lists(topics, unique=True),
        "delete": st.lists(topics, unique=True),
        "reassign": st.binary(max_size=4),
        "topic_data": st.tuples(topics, st.binary(max_size=4)),
        "topic_config": st.tuples(topics, st.binary(max_size=4)),
        "shutdown": st.tuples(st.sampled_from([1, 2]), st.tuples(st.integers())),
        "preferred": st.none() | st.lists(st.tuples(topics, st.integers(0, 3)), min_size=1),
    }
    return st.sampled_from(sorted(payloads)).flatmap(
        lambda kind: st.builds(Event, st.just(kind), payloads[kind], st.integers(0, 3))
    )


@given(st.lists(events(), max_size=60))
def test_events_come_out_by_priority_once_per_key_as_last_put(batch: list[Event]) -> None:
    queue = EventQueue()
    for event in batch:
        queue.put(event)
    keys = {key(e) for e in batch}
    assert len(queue) == len(keys)
    out = drain(queue)
    assert [key(e) for e in out] == list(dict.fromkeys(key(e) for e in out))
    assert {key(e) for e in out} == keys
    priorities = [PRIORITY[e.kind] for e in out]
    assert priorities == sorted(priorities)
    last = {key(e): e for e in batch}
    for event in out:
        newest = last[key(event)]
        assert event.generation == newest.generation
        if event.kind not in ("shutdown", "preferred"):
            assert event == newest
    # Within a class, in the order each key was first put.
    for priority in Priority:
        firsts = list(dict.fromkeys(key(e) for e in batch if PRIORITY[e.kind] is priority))
        assert [key(e) for e in out if PRIORITY[e.kind] is priority] == firsts


@given(st.lists(events(), max_size=60))
def test_interleaved_puts_and_pops_never_lose_a_key(batch: list[Event]) -> None:
    queue = EventQueue()
    seen: set[object] = set()
    for i, event in enumerate(batch):
        queue.put(event)
        if i % 3 == 2:
            popped = queue.pop()
            assert popped is not None
            seen.add(key(popped))
    seen.update(key(e) for e in drain(queue))
    assert seen == {key(e) for e in batch}
