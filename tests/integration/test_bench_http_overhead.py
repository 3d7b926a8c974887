"""``python -m bench.http_overhead``: each server answers every paced request with the same bytes,
and each one's CPU per request is measured."""

from __future__ import annotations

import orjson

from bench import http_overhead


def test_the_bodies_hold_the_records_asked() -> None:
    assert len(orjson.loads(http_overhead.produce_body(7))["records"]) == 7
    assert len(orjson.loads(http_overhead.answer_body(7))["offsets"]) == 7


def test_each_server_answers_every_paced_request() -> None:
    # A request answered otherwise than with the expected bytes fails the run.
    found = http_overhead.main(
        ["--rate", "300", "--seconds", "1", "--records", "5", "--connections", "2"]
    )
    assert set(found) == set(http_overhead.MODES)
    for measured in found.values():
        assert 290 <= measured.requests <= 300  # the last tick's requests may not be due yet
        # CPU is counted in clock ticks: a few hundred small requests may round to none.
        assert measured.cpu_us_per_request >= 0
